#pragma once
// How validation batches are made, as Ultralytics' validator makes them, for every place that
// validates (the train sink each epoch, `yoloflow val`; validation_pipeline.h runs them):
// - square: each image letterboxed to imgsz x imgsz;
// - rect (rectangular batches, what `yolo val` and validation during Ultralytics' training
//   use): images ordered by aspect ratio (height / width of the original file), cut into
//   batches of `batch`, and each batch letterboxed to its own shape: the side of its most
//   extreme image's aspect ratio scaled to imgsz, plus half a stride, rounded up to the stride.
// Each image is fitted to its batch's shape by the validation transform, an augmentation given
// that shape as its `height` and `width` parameters: the train sink's `val_transform`, or
// train-defaults.json's (which never enlarges an image and pads grey 114, centred, as
// Ultralytics does).
#include <cstddef>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

struct ValidationOptions {
  int imgsz = 640;
  std::int64_t batch = 32;
  bool rect = true;
  int stride = 32;  // the model's largest stride
  // Strides added to each rectangular batch's side before rounding up: Ultralytics validates with
  // half a stride, and its rectangular training batches have none (0).
  double pad = 0.5;
  // Square batches only: every image letterboxed to height x width instead of imgsz x imgsz
  // (a fixed-shape exported file's input); 0: imgsz.
  int height = 0, width = 0;
  // The first round(fraction x size) images of the source only, at most `limit` of them
  // (0: no limit): int8 calibration's --fraction, as Ultralytics' fraction takes the first ones.
  double fraction = 1.0;
  std::size_t limit = 0;
  // Polled between batches: once set, validation stops early (`yoloflow val` on Ctrl-C).
  const std::atomic<bool>* stop_flag = nullptr;
};

// Which images make each validation batch, in order, and the shape each batch is fitted to.
struct ValidationPlan {
  std::vector<std::vector<std::size_t>> batches;  // source indices per batch
  std::vector<std::pair<int, int>> shapes;        // (height, width) per batch
  std::size_t skipped = 0;                        // images that failed to load (left out)
};

// The plan for `source` (rect: reads every image once for its size; a failure is warned
// naming `where` and leaves the image out).
ValidationPlan plan_validation(DataSource& source, const ValidationOptions& options, const std::string& where);

// Throws InvalidInput naming `path` unless `spec` ({"plugin": ..., "params": ...}) is a loaded
// augmentation with `height` and `width` parameters, as a validation transform must be.
void check_validation_transform(const Registry& registry, const json& spec, const std::string& path);

// Throws InvalidInput naming `path` unless `spec` is a loaded batcher with an integer `batch`
// parameter, as the validation batcher must be (it is given the validation batch through it).
void check_validation_batcher(const Registry& registry, const json& spec, const std::string& path);

// Ultralytics' batch shape for images whose aspect ratios (h / w) span [min_ar, max_ar], each side
// `pad` strides more before it is rounded up to the stride.
std::pair<int, int> rect_batch_shape(double min_ar, double max_ar, int imgsz, int stride, double pad = 0.5);

}  // namespace yoloflow::core
