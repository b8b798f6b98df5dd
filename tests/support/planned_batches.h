#pragma once
// Batches whose pixels are planned, made as the graph runner's workers make them, and what the
// planned-pixel tests read back from a run.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include <nlohmann/json.hpp>

#include <torch/torch.h>

#include "runtime/graph/stage_sample_loaders.h"
#include "support/plugins.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/sample.h"
#include "yoloflow/source.h"

namespace yoloflow::test {

// Whether `cuda` composes planned pixels here (a CUDA device, and this build has the kernel);
// where not, a MESSAGE says the GPU tests run on the GPU machine.
bool composes_on_cuda(const torch::Device& cuda);
// coco128's train split through yolo_dataset, made with `setup` (its imgsz).
std::unique_ptr<DataSource> coco128_train_source(core::PluginManager& pm, const ComponentSetup& setup);

// Samples 0..n-1 through the loaders' first `stages` augmentations, planned (sample i drawing
// from Rng(i)), as one batch of n images of imgsz x imgsz. With `made`, each sample is first
// made on the CPU with the same draws, its image appended there (BGR).
Batch planned_batch(core::StageSampleLoaders& loaders, std::size_t stages, std::size_t n, int imgsz,
                    std::vector<cv::Mat>* made = nullptr);

// The plan's image composed on the host, as BGR (the CPU plugins' order).
cv::Mat composed_bgr(const PixelPlan& plan);
// Bytes that differ between two images of one size and type.
long long differing_bytes(const cv::Mat& a, const cv::Mat& b);

// Sample `index` through the loaders' first `stages` augmentations, made and planned with the
// same draws (Rng(seed)): checks that the boxes and the geometry agree and returns the bytes that
// differ between the made image and the plan composed on the host.
long long made_against_planned(core::StageSampleLoaders& loaders, std::size_t stages, std::size_t index,
                               std::uint64_t seed, std::shared_ptr<const PixelPlan>* plan = nullptr);

// The stages as the loaders take them, each checked to plan its pixels (plan_support() null).
std::vector<Augmentation*> planning_chain(const std::vector<std::unique_ptr<Augmentation>>& stages);

// One augmentation stage of write_chain_pipeline: its node name, plugin and parameters.
struct ChainStage {
  std::string name, plugin;
  nlohmann::json params = nlohmann::json::object();
};
// DIR/pipeline.json: a CPU training of DIR's data.yaml (test::write_coco128_subset) at imgsz 64
// for 2 epochs, through yolo_dataset, `chain` (each stage reading the one before), collate by 2
// and the train sink (yolo11n, fp32, no validation) with `workers` workers; returns its path.
std::string write_chain_pipeline(const std::string& dir, const std::vector<ChainStage>& chain, int workers = 1);

// The run's training losses, epoch by epoch (box, cls, dfl), as its results.csv has them.
std::vector<double> epoch_losses(const std::string& run);

// `pipeline` (a CPU training pipeline) trained into DIR/run-workers and DIR/run-device with
// augment_on workers and device: checks that both succeed and the device run composed its
// pixels; returns each run's epoch losses (workers first).
std::vector<std::vector<double>> losses_on_both_paths(const std::string& pipeline, const std::string& dir);

}  // namespace yoloflow::test
