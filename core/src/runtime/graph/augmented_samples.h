#pragma once
// A pipeline's source and augmentation chain outside the flow graph, for the commands that
// need training samples as training draws them without training: `yoloflow preview` (image
// grids) and auto batch (how many boxes an augmented image really carries: a mosaic holds up
// to four images' boxes). Positions follow the epoch's order and each sample gets the
// generator the graph runner gives it, so position i is the sample training sees at i.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/recent_images.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/plugin/registry.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/params.h"
#include "yoloflow/sample.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

class StageSampleLoaders;

class AugmentedSamples {
 public:
  // Creates and configures the source and every augmentation for `epoch` (its imgsz and
  // schedules), on the CPU. `source_overrides` are merged into the source's resolved
  // parameters (auto batch turns a RAM cache off: it reads a few hundred samples once).
  AugmentedSamples(const Pipeline& pipeline, const Registry& registry, int epoch,
                   const json& source_overrides = json::object());
  ~AugmentedSamples();
  AugmentedSamples(const AugmentedSamples&) = delete;
  AugmentedSamples& operator=(const AugmentedSamples&) = delete;

  std::size_t size() const { return order_.size(); }
  // The augmented sample at `position` of the epoch's order. Thread-safe (the graph runner
  // calls the same components from every worker). Throws what the source throws, and
  // yoloflow::Error naming the stage and the sample when an augmentation fails, as training.
  Sample at(std::size_t position);
  const DataSource& source() const { return *source_; }
  int imgsz() const { return imgsz_; }

 private:
  int epoch_, imgsz_;
  std::uint64_t epoch_seed_;
  std::unique_ptr<DataSource> source_;
  std::vector<std::unique_ptr<Augmentation>> chain_;
  std::vector<std::string> chain_labels_;  // stage_text() of each augmentation
  std::unique_ptr<StageSampleLoaders> loaders_;
  std::vector<std::size_t> order_, previous_order_;
  std::size_t recent_window_ = 0;
  RecentImages recent_images_;
};

}  // namespace yoloflow::core
