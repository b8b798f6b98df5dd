#include "mask_overlap.h"

namespace yoloflow::segmentation_eval {

torch::Tensor predicted_masks(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                              const torch::Tensor& boxes, std::int64_t height, std::int64_t width) {
  const auto c = prototypes.size(0), h = prototypes.size(1), w = prototypes.size(2);
  const auto n = coefficients.size(0);
  auto masks = coefficients.to(torch::kFloat).matmul(prototypes.to(torch::kFloat).reshape({c, h * w})).reshape({n, h, w});
  const auto ratios = torch::tensor({static_cast<float>(w) / static_cast<float>(width),
                                     static_cast<float>(h) / static_cast<float>(height),
                                     static_cast<float>(w) / static_cast<float>(width),
                                     static_cast<float>(h) / static_cast<float>(height)});
  const auto scaled = boxes.to(torch::kFloat) * ratios;  // (N, 4) in the prototypes' pixels
  const auto x1 = scaled.select(1, 0).view({n, 1, 1}), y1 = scaled.select(1, 1).view({n, 1, 1});
  const auto x2 = scaled.select(1, 2).view({n, 1, 1}), y2 = scaled.select(1, 3).view({n, 1, 1});
  const auto cols = torch::arange(w, torch::kFloat).view({1, 1, w});
  const auto rows = torch::arange(h, torch::kFloat).view({1, h, 1});
  const auto inside = cols.ge(x1).logical_and(cols.lt(x2)).logical_and(rows.ge(y1)).logical_and(rows.lt(y2));
  return masks.gt(0).logical_and(inside).to(torch::kFloat);
}

torch::Tensor label_masks_at(const torch::Tensor& planes, std::int64_t h, std::int64_t w) {
  if (planes.size(0) == 0 || (planes.size(1) == h && planes.size(2) == w)) return planes.to(torch::kFloat);
  namespace F = torch::nn::functional;
  const auto resized = F::interpolate(planes.to(torch::kFloat).unsqueeze(0),
                                      F::InterpolateFuncOptions()
                                          .size(std::vector<std::int64_t>{h, w})
                                          .mode(torch::kBilinear)
                                          .align_corners(false))
                           .squeeze(0);
  return resized.gt(0.5).to(torch::kFloat);
}

torch::Tensor mask_iou(const torch::Tensor& labels, const torch::Tensor& predictions) {
  const auto a = labels.flatten(1), b = predictions.flatten(1);
  const auto intersection = a.matmul(b.t()).clamp_(0);
  const auto uni = a.sum(1).unsqueeze(1) + b.sum(1).unsqueeze(0) - intersection;
  return intersection / (uni + 1e-7);
}

}  // namespace yoloflow::segmentation_eval
