#include "training/eval/validation_batch.h"

#include <chrono>
#include <vector>

#include "training/components/batch_targets.h"

namespace yoloflow::core {

torch::Tensor validate_batch(Model& model, const torch::Device& device, PrecisionStrategy* precision,
                             Loss* loss, const Batch& batch,
                             const NmsOptions& nms, std::vector<ImagePredictions>& predictions, ValidationTimes* times) {
  // Milliseconds since the last call, once the device's queued work is done.
  auto last = std::chrono::steady_clock::now();
  auto lap = [&](double ValidationTimes::*phase) {
    if (times == nullptr) return;
    if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
    const auto now = std::chrono::steady_clock::now();
    times->*phase += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
  };
  const auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
  const std::int64_t n = pixels.size(0);
  auto x = pixels.to(device).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
  lap(&ValidationTimes::preprocess_ms);
  ModelOutput output;
  {
    std::unique_ptr<AutocastScope> scope;
    if (precision != nullptr) scope = precision->autocast(device);
    output = model.forward_train(x);
    for (auto& l : output.levels) l = l.to(torch::kFloat);
    for (auto& [name, t] : output.extras) t = t.to(torch::kFloat);
  }
  const auto decoded = model.decode(output);
  lap(&ValidationTimes::inference_ms);
  torch::Tensor items;
  if (loss != nullptr) items = loss->compute(output, targets_to(loss_targets(batch), device), 1.0).items.to(torch::kCPU);
  lap(&ValidationTimes::loss_ms);
  std::vector<torch::Tensor> anchors;
  std::vector<torch::Tensor> kept = non_max_suppression(decoded, nms, &anchors);
  if (nms.one_class) {
    for (auto& k : kept) k.select(1, 5).zero_();
  }
  predictions = image_predictions(decoded, model.head(), kept, anchors);
  lap(&ValidationTimes::postprocess_ms);
  if (times != nullptr) times->images += n;
  return items;
}

}  // namespace yoloflow::core
