#pragma once
// Rectangular training batches (the train sink's train_rect; Ultralytics' rect=True on train):
// the train split ordered by aspect ratio, cut into batches of the epoch's batch size, each batch
// fitted to its own stride-aligned shape (Ultralytics' training shapes: no padding stride, where
// validation adds half a stride) by every augmentation stage that declares `height` and `width`
// (random_perspective, letterbox). The order is the same every epoch: Ultralytics turns
// shuffling off for rectangular training, since a shuffled batch would mix aspect ratios.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/graph/graph_runner.h"

namespace yoloflow::core {

// The augmentation stages of `pipeline` that take a batch's shape as `height` and `width`.
std::vector<std::string> rect_shape_stages(const Pipeline& pipeline);

struct RectTrainingPlan {
  std::vector<PlannedBatch> batches;
  int imgsz = 0;
  std::int64_t batch = 0;
  std::size_t skipped = 0;  // images that could not be read for their size (left out)
};

// The plan for the runner's source at `imgsz`, `batch` images a batch, each batch's shape given
// to `stages`. Reads every image once for its size (the RAM cache keeps them where it is on).
RectTrainingPlan plan_rect_training(GraphRunner& runner, const std::vector<std::string>& stages, int imgsz,
                                    std::int64_t batch, int stride, const std::string& where);

// The train sink's rectangular epochs: planned again when the epoch's imgsz or batch size
// differs from the plan's; a resumed epoch goes on with the batches it had not trained.
class RectEpochs {
 public:
  RectEpochs() = default;
  RectEpochs(std::vector<std::string> stages, int stride, std::string where)
      : stages_(std::move(stages)), stride_(stride), where_(std::move(where)) {}
  bool on() const { return !stages_.empty(); }
  // Epoch `epoch` at `imgsz` from position `first_sequence` of its order.
  EpochStats run(GraphRunner& runner, int epoch, int imgsz, std::uint64_t first_sequence);

 private:
  std::vector<std::string> stages_;
  int stride_ = 32;
  std::string where_;
  RectTrainingPlan plan_;
};

}  // namespace yoloflow::core
