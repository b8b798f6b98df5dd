#include "training/eval/validation_batch.h"

#include <chrono>
#include <vector>

#include "training/components/batch_targets.h"

namespace yoloflow::core {

torch::Tensor validate_batch(Model& model, const torch::Device& device, PrecisionStrategy* precision,
                             Loss* loss, const torch::Tensor& pixels, const torch::Tensor& rows,
                             const NmsOptions& nms, DetectionMetrics& metrics, std::vector<torch::Tensor>* kept_out,
                             ValidationTimes* times) {
  // Milliseconds since the last call, once the device's queued work is done.
  auto last = std::chrono::steady_clock::now();
  auto lap = [&](double ValidationTimes::*phase) {
    if (times == nullptr) return;
    if (device.is_cuda()) torch::cuda::synchronize(device.index() < 0 ? -1 : device.index());
    const auto now = std::chrono::steady_clock::now();
    times->*phase += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
  };
  const std::int64_t n = pixels.size(0);
  const float h = static_cast<float>(pixels.size(1)), w = static_cast<float>(pixels.size(2));
  auto x = pixels.to(device).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
  lap(&ValidationTimes::preprocess_ms);
  std::vector<torch::Tensor> levels;
  {
    std::unique_ptr<AutocastScope> scope;
    if (precision != nullptr) scope = precision->autocast(device);
    levels = model.forward_train(x);
    for (auto& l : levels) l = l.to(torch::kFloat);
  }
  const auto decoded = model.decode(levels);
  lap(&ValidationTimes::inference_ms);
  torch::Tensor items;
  if (loss != nullptr) items = loss->compute(levels, pad_targets(rows, n).to(device), 1.0).items.to(torch::kCPU);
  lap(&ValidationTimes::loss_ms);
  std::vector<torch::Tensor> kept = non_max_suppression(decoded, nms);
  if (nms.one_class) {
    for (auto& k : kept) k.select(1, 5).zero_();
  }
  lap(&ValidationTimes::postprocess_ms);
  if (times != nullptr) times->images += n;
  // Labels back in the letterboxed pixels: [cls, x1, y1, x2, y2] per image.
  const auto r = rows.to(torch::kCPU).contiguous();
  const auto a = r.accessor<float, 2>();
  std::vector<std::vector<float>> labels(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < r.size(0); ++k) {
    const float cx = a[k][2] * w, cy = a[k][3] * h, bw = a[k][4] * w, bh = a[k][5] * h;
    labels[static_cast<std::size_t>(a[k][0])].insert(labels[static_cast<std::size_t>(a[k][0])].end(),
                                                     {a[k][1], cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
  }
  for (std::int64_t i = 0; i < n; ++i) {
    auto& lab = labels[static_cast<std::size_t>(i)];
    metrics.add_image(kept[static_cast<std::size_t>(i)],
                      torch::from_blob(lab.data(), {static_cast<std::int64_t>(lab.size() / 5), 5}, torch::kFloat).clone());
  }
  if (kept_out != nullptr) *kept_out = kept;
  return items;
}

}  // namespace yoloflow::core
