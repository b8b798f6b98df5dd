#pragma once
// Where a training run's augmented pixels are made (the train sink's augment_on), epoch by epoch:
//   workers  the graph's CPU workers, always;
//   device   planned by the workers and composed on the training device (pixel_composer.h), always;
//   auto     on a CUDA device with the composing kernel: composed there from the start when the data
//            path has fewer than 8 workers, else made by the workers until an epoch in which the
//            step waited for data at least a tenth of the time, then composed there from the next
//            epoch on; made by the workers elsewhere.
// Both make the same bytes from the same draws, so switching changes no result. (YOLO11n b32 at 640
// on an H100: `taskset -c 0-3 bash bench/gpu/planned-pixels.sh`, 4 cores and 3 workers, 492 -> 914
// img/s; `WORKERS=14 bash bench/gpu/planned-pixels.sh`, 16 cores, the step bound either way,
// 1,067 -> 985: hence the 8 workers. docs/performance.md, "augment_on", has the other machines.)
#include <memory>
#include <string>

#include <torch/torch.h>

#include "training/compose/pixel_composer.h"

namespace yoloflow::core {

class AugmentPlacement {
 public:
  // `workers`: the data path's worker threads; `composes`: whether `device` composes with its own
  // kernel (PixelComposer::composes_on), which auto needs.
  AugmentPlacement(const std::string& augment_on, const torch::Device& device, int workers, bool composes);

  // Whether the coming epoch's pixels are composed on the device (Sink::composes_pixel_plans).
  bool on_device() const { return on_device_; }
  // The composer (null where pixels are never composed).
  PixelComposer* composer() { return composer_.get(); }
  // A batch of the epoch waited `seconds` for the data path.
  void waited(double seconds) { waited_ += seconds; }
  // The epoch ends after `seconds`; with auto, a data-bound epoch moves the pixels to the device.
  void epoch_ended(int epoch, double seconds);

 private:
  bool automatic_ = false;
  bool on_device_ = false;
  double waited_ = 0.0;
  std::unique_ptr<PixelComposer> composer_;
};

}  // namespace yoloflow::core
