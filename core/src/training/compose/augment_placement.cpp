#include "training/compose/augment_placement.h"

#include "runtime/util/text_format.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

namespace {
constexpr int kFewWorkers = 8;          // below this many workers auto composes on the device at once
constexpr double kDataBoundShare = 0.1;  // a data wait of this share of an epoch moves it there
}  // namespace

AugmentPlacement::AugmentPlacement(const std::string& augment_on, const torch::Device& device, int workers,
                                   bool composes) {
  automatic_ = augment_on == "auto" && composes;
  if (augment_on == "device" || automatic_) composer_ = std::make_unique<PixelComposer>(device);
  on_device_ = augment_on == "device" || (automatic_ && workers < kFewWorkers);
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
