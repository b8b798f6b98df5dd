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

#include "training/compose/device_image_store.h"
#include "training/compose/pixel_composer.h"

namespace yoloflow::core {

class AugmentPlacement {
 public:
  // `workers`: the data path's worker threads; `composes`: whether `device` composes with its own
  // kernel (PixelComposer::composes_on), which auto needs. `image_cache` (device_image_cache):
  // "auto" keeps the training images on a CUDA device that composes them, "on" on any device
  // that composes them (the CPU: for checks), "off" nowhere; `memory_fraction`
  // (cuda_memory_fraction, 0 = none) caps what the cache may take with the rest of the run.
  AugmentPlacement(const std::string& augment_on, const torch::Device& device, int workers, bool composes,
                   const std::string& image_cache = "off", double memory_fraction = 0.0);

  // Whether the coming epoch's pixels are composed on the device (Sink::composes_pixel_plans).
  bool on_device() const { return on_device_; }
  // The composer (null where pixels are never composed).
  PixelComposer* composer() { return composer_.get(); }
  // Where the data path may keep decoded training images (null: nowhere), once opened.
  DeviceImageStore* kept_images() { return kept_.get(); }
  // At an epoch's end, once its validation is done (after epoch_ended). After the run's first
  // epoch whose pixels were composed on the device (the step's and validation's memory then
  // reserved) the image cache opens, sized from the device's free memory, at most what `images`
  // images of `imgsz` need, and logs what it got; after the next one, what it holds.
  void kept_images_epoch_end(std::size_t images, int imgsz);
  // A batch of the epoch waited `seconds` for the data path.
  void waited(double seconds) { waited_ += seconds; }
  // The epoch ends after `seconds`; with auto, a data-bound epoch moves the pixels to the device.
  void epoch_ended(int epoch, double seconds);

 private:
  bool automatic_ = false;
  bool on_device_ = false;
  double waited_ = 0.0;
  double memory_fraction_ = 0.0;
  bool opening_tried_ = false, kept_reported_ = false;
  std::unique_ptr<PixelComposer> composer_;
  std::unique_ptr<DeviceImageStore> kept_;
};

}  // namespace yoloflow::core
