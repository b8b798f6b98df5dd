#pragma once
// Validation batches as Ultralytics' validator builds them, for every place that validates
// (the train sink each epoch, `yoloflow val`):
// - square: each image letterboxed to imgsz x imgsz;
// - rect (rectangular batches, what `yolo val` and validation during Ultralytics' training
//   use): images ordered by aspect ratio (height / width of the original file), cut into
//   batches of `batch`, and each batch letterboxed to its own shape: the side of its most
//   extreme image's aspect ratio scaled to imgsz, plus half a stride, rounded up to the stride.
// Each image is fitted to its batch's shape by the validation transform, an augmentation given
// that shape as its `height` and `width` parameters: the train sink's `val_transform`, or
// train-defaults.json's (which never enlarges an image and pads grey 114, centred, as
// Ultralytics does). An image that fails to load is skipped with a warning.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "plugin/registry.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/sample.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

struct ValidationOptions {
  int imgsz = 640;
  std::int64_t batch = 32;
  bool rect = true;
  int stride = 32;  // the model's largest stride
  // {"plugin": NAME, "params": {...}}: an augmentation declaring `height` and `width`, which are
  // set to each batch's shape. Null: the train sink's val_transform in train-defaults.json.
  json transform;
  std::string transform_path;  // names `transform` in messages ("stages.train.params.val_transform")
};

struct ValidationBatch {
  torch::Tensor pixels;             // (N, H, W, 3) uint8 RGB, CPU
  torch::Tensor rows;               // (M, 6) [image, cls, cx, cy, w, h], normalised by W and H
  std::vector<SampleInfo> samples;  // per image: path and geometry (original pixels = (x - pad) / ratio)
};

class ValidationLoader {
 public:
  // `source` must outlive the loader; `where` names it in messages ("train.validation").
  // Throws InvalidInput naming options.transform_path when the transform is not a loaded
  // augmentation with `height` and `width` parameters.
  ValidationLoader(const Registry& registry, DataSource& source, const ValidationOptions& options,
                   std::string where);
  ~ValidationLoader();

  // Batches in one pass. The first call of a rect loader reads every image once for its size.
  std::size_t batches();
  ValidationBatch load(std::size_t batch);
  // The (height, width) batch `batch` is letterboxed to.
  std::pair<int, int> shape(std::size_t batch);
  // Images left out because they failed to load (counted once, when the plan is made or at load).
  std::size_t skipped() const { return skipped_; }

 private:
  void plan();
  Augmentation& transform_for(std::pair<int, int> shape);

  const Registry& registry_;
  DataSource& source_;
  ValidationOptions options_;
  std::string where_;
  bool planned_ = false;
  std::vector<std::vector<std::size_t>> batches_;  // source indices per batch
  std::vector<std::pair<int, int>> shapes_;        // (height, width) per batch
  std::map<std::pair<int, int>, std::unique_ptr<Augmentation>> transforms_;
  std::size_t skipped_ = 0;
};

// Throws InvalidInput naming `path` unless `spec` ({"plugin": ..., "params": ...}) is a loaded
// augmentation with `height` and `width` parameters, as a validation transform must be.
void check_validation_transform(const Registry& registry, const json& spec, const std::string& path);

// Ultralytics' batch shape for images whose aspect ratios (h / w) span [min_ar, max_ar].
std::pair<int, int> rect_batch_shape(double min_ar, double max_ar, int imgsz, int stride);

}  // namespace yoloflow::core
