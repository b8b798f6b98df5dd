#include "training/compose/augment_placement.h"

#include <algorithm>

#include "runtime/util/text_format.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

namespace {
constexpr int kFewWorkers = 8;          // below this many workers auto composes on the device at once
constexpr double kDataBoundShare = 0.1;  // a data wait of this share of an epoch moves it there
}  // namespace

AugmentPlacement::AugmentPlacement(const std::string& augment_on, const torch::Device& device, int workers,
                                   bool composes, const std::string& image_cache, double memory_fraction)
    : memory_fraction_(memory_fraction) {
  automatic_ = augment_on == "auto" && composes;
  if (augment_on == "device" || automatic_) composer_ = std::make_unique<PixelComposer>(device);
  on_device_ = augment_on == "device" || (automatic_ && workers < kFewWorkers);
  if (composer_ && (image_cache == "on" || (image_cache == "auto" && device.is_cuda() && composes))) {
    kept_ = std::make_unique<DeviceImageStore>(device);
    composer_->read_kept_images(kept_.get());
  }
}

void AugmentPlacement::kept_images_epoch_end(std::size_t images, int imgsz) {
  if (!kept_) return;
  auto gib = [](std::size_t bytes) { return format_fixed(static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0), 2); };
  if (kept_->opened() && !kept_reported_) {
    kept_reported_ = true;
    YF_LOG_INFO("device image cache: " << kept_->images() << " images kept (" << gib(kept_->bytes_used()) << " of "
                                       << gib(kept_->bytes_reserved()) << " GiB)");
  }
  // Only once pixels are composed on the device (with auto and many workers, perhaps never):
  // before that, the loaders would not read it and its memory would be lost to the run.
  if (kept_->opened() || opening_tried_ || !on_device_) return;
  opening_tried_ = true;
  const std::size_t wanted = DeviceImageStore::bytes_for(images, imgsz);
  const std::size_t free = DeviceImageStore::free_bytes(kept_->device(), memory_fraction_);
  const std::size_t bytes = std::min(wanted, free);
  if (free < std::min(wanted, std::size_t{64} << 20)) {
    YF_LOG_INFO("device image cache: off (" << gib(free) << " GiB free after the step and validation, less the margin)");
    return;
  }
  if (kept_->open(bytes)) {
    YF_LOG_INFO("device image cache: " << gib(bytes) << " GiB on " << kept_->device().str()
                                       << " for the training images (" << gib(wanted) << " GiB would hold all "
                                       << images << " at " << imgsz << "); a kept image is not decoded again");
  }
}

void AugmentPlacement::epoch_ended(int epoch, double seconds) {
  const double share = seconds > 0.0 ? waited_ / seconds : 0.0;
  waited_ = 0.0;
  if (!automatic_ || on_device_ || share < kDataBoundShare) return;
  on_device_ = true;
  YF_LOG_INFO("augment_on auto: the step waited for data " << format_fixed(100.0 * share, 1) << "% of epoch "
                                                           << epoch + 1 << "; augmentations composed on the "
                                                           << "training device from epoch " << epoch + 2);
}

}  // namespace yoloflow::core
