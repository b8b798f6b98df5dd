#pragma once
// Auto batch, the measurement: `stages.<batcher>.params.batch` = "auto" (0.60 of the device's
// memory) or a fraction in (0, 1) becomes a number of samples before the graph is built. On
// the train sink's CUDA device the model, precision strategy and loss the sink would build run
// real forward + loss + backward steps on random images at batches 1, 2, 4, 8, 16 (stopping at
// an out-of-memory error) with targets padded to the rows the sink would pad the densest
// augmented image of the first epoch to (a mosaic carries up to four images' boxes); the caching allocator's peak reserved bytes of each step are fitted and the largest batch
// within the target is taken (auto_batch.h). On the CPU it warns and uses 16, as Ultralytics.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "training/autobatch/auto_batch.h"
#include "yoloflow/source.h"

namespace yoloflow {
class Loss;
class Model;
class PrecisionStrategy;
}  // namespace yoloflow

namespace yoloflow::core {

class Registry;
struct Pipeline;

// Resolves an auto or fractional batch of `pipeline`'s batcher in place: the stage's params
// and the resolved document (what the run folder's pipeline.json saves, so a resume keeps the
// number). Nothing for a plain batch. `device_override`: the CLI's --device ("" = none).
// Throws InvalidInput naming the JSON path for what it cannot do (data parallel).
void resolve_auto_batch(Pipeline& pipeline, const Registry& registry, const std::string& device_override);

// The densest of the first `max_samples` samples of the first epoch through `pipeline`'s
// source and augmentation chain, as training draws them (a RAM cache is turned off for the
// one pass). Samples that fail to load count as empty, as training skips them.
struct AugmentedBoxes {
  std::size_t densest = 0;  // boxes of the densest sample drawn
  std::size_t sampled = 0;  // samples drawn
  std::size_t samples = 0;  // the source's size()
  DatasetInfo info;         // the source's info()
};
AugmentedBoxes densest_augmented_boxes(const Pipeline& pipeline, const Registry& registry, std::size_t max_samples);

struct StepMemoryProfile {
  std::vector<BatchMemory> points;  // batches that ran, ascending
  std::int64_t oom_batch = 0;       // the batch that ran out of memory (0 = none)
};

// The mask targets the pipeline's batcher makes (its `masks`, `mask_ratio`, `overlap_mask`), which
// a segmentation loss reads: the profiled step is given random ones of the same layout and size.
struct ProfiledMasks {
  int ratio = 0;         // 0: no masks; else the masks are imgsz / ratio on a side
  bool overlap = true;   // one plane per image ('image_masks'), else one per instance ('masks')
};

// The batcher's mask targets, from its parameters (none when it makes no masks).
ProfiledMasks profiled_masks(const json& batcher_params);

// Runs one training step (forward, loss, backward; no optimizer step) per batch in `batches`
// on `device` with random uint8 images of `imgsz`, `rows` random boxes per image and, with
// `masks`, random mask targets, calling `restart` before and `measure` after each (the peak in
// bytes). Stops at the first out-of-memory error. The device-specific part is only `restart`
// and `measure`.
StepMemoryProfile profile_step_memory(Model& model, PrecisionStrategy& precision, Loss& loss,
                                      const c10::Device& device, int imgsz, std::int64_t rows,
                                      const std::vector<std::int64_t>& batches, const std::function<void()>& restart,
                                      const std::function<double()>& measure, const ProfiledMasks& masks = {});

}  // namespace yoloflow::core
