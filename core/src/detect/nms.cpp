// Greedy non-maximum suppression, per image, on the CPU (see nms.h).
#include "detect/nms.h"

#include <algorithm>
#include <numeric>

namespace yoloflow::core {

namespace {

struct Candidate {
  float x1, y1, x2, y2, score;
  std::int64_t cls;
};

float iou(const Candidate& a, const Candidate& b) {
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  if (iw <= 0.f || ih <= 0.f) return 0.f;
  const float inter = iw * ih;
  const float area_a = std::max(0.f, a.x2 - a.x1) * std::max(0.f, a.y2 - a.y1);
  const float area_b = std::max(0.f, b.x2 - b.x1) * std::max(0.f, b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  return uni > 0.f ? inter / uni : 0.f;
}

torch::Tensor nms_one(const torch::Tensor& boxes, const torch::Tensor& scores, const NmsOptions& o) {
  // Candidates above the confidence threshold: one per box (best class) or, with
  // multi_label, one per (box, class) pair.
  torch::Tensor box_idx, cls, conf;
  if (o.multi_label) {
    const auto nz = (scores > o.conf).nonzero();  // (K, 2)
    box_idx = nz.select(1, 0);
    cls = nz.select(1, 1);
    conf = scores.index({box_idx, cls});
  } else {
    const auto best = scores.max(1);
    conf = std::get<0>(best);
    cls = std::get<1>(best);
    box_idx = (conf > o.conf).nonzero().reshape(-1);
    conf = conf.index_select(0, box_idx);
    cls = cls.index_select(0, box_idx);
  }
  const auto n = conf.size(0);
  if (n == 0) return torch::zeros({0, 6});
  if (n > o.max_candidates) {
    const auto top = std::get<1>(conf.topk(o.max_candidates));
    box_idx = box_idx.index_select(0, top);
    cls = cls.index_select(0, top);
    conf = conf.index_select(0, top);
  }
  const auto sel = boxes.index_select(0, box_idx).contiguous();
  const auto k = conf.size(0);
  std::vector<Candidate> c(static_cast<std::size_t>(k));
  {
    const auto b = sel.accessor<float, 2>();
    const auto s = conf.accessor<float, 1>();
    const auto l = cls.accessor<std::int64_t, 1>();
    for (std::int64_t i = 0; i < k; ++i) c[i] = {b[i][0], b[i][1], b[i][2], b[i][3], s[i], l[i]};
  }
  std::vector<std::size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep their anchor order, so results are reproducible.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c[a].score > c[b].score; });

  std::vector<std::size_t> kept;
  std::vector<char> suppressed(c.size(), 0);
  for (std::size_t oi = 0; oi < order.size() && static_cast<int>(kept.size()) < o.max_det; ++oi) {
    const auto i = order[oi];
    if (suppressed[i]) continue;
    kept.push_back(i);
    for (std::size_t oj = oi + 1; oj < order.size(); ++oj) {
      const auto j = order[oj];
      if (suppressed[j]) continue;
      if (!o.agnostic && c[j].cls != c[i].cls) continue;
      if (iou(c[i], c[j]) > o.iou) suppressed[j] = 1;
    }
  }
  auto out = torch::empty({static_cast<std::int64_t>(kept.size()), 6});
  auto a = out.accessor<float, 2>();
  for (std::size_t r = 0; r < kept.size(); ++r) {
    const auto& d = c[kept[r]];
    a[r][0] = d.x1;
    a[r][1] = d.y1;
    a[r][2] = d.x2;
    a[r][3] = d.y2;
    a[r][4] = d.score;
    a[r][5] = static_cast<float>(d.cls);
  }
  return out;
}

}  // namespace

std::vector<torch::Tensor> non_max_suppression(const Detections& det, const NmsOptions& options) {
  TORCH_CHECK(det.boxes.dim() == 3 && det.boxes.size(2) == 4, "non_max_suppression: boxes must be (B, A, 4)");
  TORCH_CHECK(det.scores.dim() == 3 && det.scores.size(0) == det.boxes.size(0) &&
                  det.scores.size(1) == det.boxes.size(1),
              "non_max_suppression: scores must be (B, A, nc) matching boxes");
  torch::NoGradGuard no_grad;
  const auto boxes = det.boxes.detach().to(torch::kCPU, torch::kFloat);
  const auto scores = det.scores.detach().to(torch::kCPU, torch::kFloat);
  std::vector<torch::Tensor> out;
  out.reserve(static_cast<std::size_t>(boxes.size(0)));
  for (std::int64_t b = 0; b < boxes.size(0); ++b) out.push_back(nms_one(boxes[b], scores[b], options));
  return out;
}

torch::Tensor box_iou(const torch::Tensor& a, const torch::Tensor& b) {
  const auto a1 = a.slice(1, 0, 2).unsqueeze(1), a2 = a.slice(1, 2, 4).unsqueeze(1);
  const auto b1 = b.slice(1, 0, 2).unsqueeze(0), b2 = b.slice(1, 2, 4).unsqueeze(0);
  const auto inter = (torch::min(a2, b2) - torch::max(a1, b1)).clamp_min(0).prod(2);
  const auto area_a = (a.slice(1, 2, 4) - a.slice(1, 0, 2)).clamp_min(0).prod(1).unsqueeze(1);
  const auto area_b = (b.slice(1, 2, 4) - b.slice(1, 0, 2)).clamp_min(0).prod(1).unsqueeze(0);
  return inter / (area_a + area_b - inter).clamp_min(1e-9);
}

}  // namespace yoloflow::core
