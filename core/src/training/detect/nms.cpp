// Greedy non-maximum suppression per image (see nms.h). The candidates are chosen where the
// detections are (a GPU keeps the (B, A, nc) scores: only the few thousand candidates cross to
// the host); the greedy pass runs on the CPU, one image per task.
#include "training/detect/nms.h"

#include <algorithm>
#include <numeric>

#include <tbb/parallel_for.h>

namespace yoloflow::core {

namespace {

struct Candidate {
  float x1, y1, x2, y2, score;
  std::int64_t cls;
  std::int64_t anchor;  // the prediction it came from: where the head's other outputs are
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

// One image's candidates above the confidence threshold, at most max_candidates, highest
// scores first: one per box (best class) or, with multi_label, one per (box, class) pair.
// Selected on the detections' device; returned on the CPU.
std::vector<Candidate> candidates(const torch::Tensor& boxes, const torch::Tensor& scores, const NmsOptions& o) {
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
  if (conf.size(0) > o.max_candidates) {
    const auto top = std::get<1>(conf.topk(o.max_candidates));
    box_idx = box_idx.index_select(0, top);
    cls = cls.index_select(0, top);
    conf = conf.index_select(0, top);
  }
  const auto sel = boxes.index_select(0, box_idx).to(torch::kCPU, torch::kFloat).contiguous();
  const auto s_cpu = conf.to(torch::kCPU, torch::kFloat).contiguous();
  const auto l_cpu = cls.to(torch::kCPU, torch::kLong).contiguous();
  const auto a_cpu = box_idx.to(torch::kCPU, torch::kLong).contiguous();
  const auto k = s_cpu.size(0);
  std::vector<Candidate> c(static_cast<std::size_t>(k));
  const auto b = sel.accessor<float, 2>();
  const auto s = s_cpu.accessor<float, 1>();
  const auto l = l_cpu.accessor<std::int64_t, 1>();
  const auto a = a_cpu.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < k; ++i) c[i] = {b[i][0], b[i][1], b[i][2], b[i][3], s[i], l[i], a[i]};
  return c;
}

// Greedy NMS over the candidates. Suppression never crosses classes (unless agnostic), so each
// class runs on its own list: the same boxes as one pass over all of them, with comparisons only
// within a class (an untrained model's 30,000 candidates spread over 80 classes). A class stops at
// max_det kept boxes: a later one of it could not be among the image's max_det best.
torch::Tensor greedy(const std::vector<Candidate>& c, const NmsOptions& o, torch::Tensor* anchors) {
  std::vector<std::size_t> order(c.size());
  std::iota(order.begin(), order.end(), 0);
  // Stable: equal scores keep their candidate order, so results are reproducible.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c[a].score > c[b].score; });

  std::vector<std::vector<std::size_t>> lists(1);  // candidates of each class, in order
  if (o.agnostic) {
    lists[0] = order;
  } else {
    std::int64_t classes = 0;
    for (const auto& d : c) classes = std::max(classes, d.cls + 1);
    lists.assign(static_cast<std::size_t>(classes), {});
    for (const auto i : order) lists[static_cast<std::size_t>(c[i].cls)].push_back(i);
  }
  std::vector<char> suppressed(c.size(), 0), is_kept(c.size(), 0);
  const auto max_det = static_cast<std::size_t>(std::max(o.max_det, 0));
  for (const auto& list : lists) {
    std::size_t kept_here = 0;
    for (std::size_t a = 0; a < list.size() && kept_here < max_det; ++a) {
      const auto i = list[a];
      if (suppressed[i]) continue;
      is_kept[i] = 1;
      ++kept_here;
      for (std::size_t b = a + 1; b < list.size(); ++b) {
        const auto j = list[b];
        if (!suppressed[j] && iou(c[i], c[j]) > o.iou) suppressed[j] = 1;
      }
    }
  }
  std::vector<std::size_t> kept;  // in score order, the image's best max_det
  for (std::size_t r = 0; r < order.size() && kept.size() < max_det; ++r) {
    if (is_kept[order[r]]) kept.push_back(order[r]);
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
  if (anchors != nullptr) {
    *anchors = torch::empty({static_cast<std::int64_t>(kept.size())}, torch::kLong);
    auto k = anchors->accessor<std::int64_t, 1>();
    for (std::size_t r = 0; r < kept.size(); ++r) k[static_cast<std::int64_t>(r)] = c[kept[r]].anchor;
  }
  return out;
}

}  // namespace

std::vector<torch::Tensor> non_max_suppression(const Predictions& det, const NmsOptions& options,
                                               std::vector<torch::Tensor>* anchors) {
  TORCH_CHECK(det.boxes.dim() == 3 && det.boxes.size(2) == 4, "non_max_suppression: boxes must be (B, A, 4)");
  TORCH_CHECK(det.scores.dim() == 3 && det.scores.size(0) == det.boxes.size(0) &&
                  det.scores.size(1) == det.boxes.size(1),
              "non_max_suppression: scores must be (B, A, nc) matching boxes");
  torch::NoGradGuard no_grad;
  const auto boxes = det.boxes.detach();
  const auto scores = det.scores.detach();
  const auto n = static_cast<std::size_t>(boxes.size(0));
  std::vector<std::vector<Candidate>> cands(n);
  for (std::size_t b = 0; b < n; ++b) cands[b] = candidates(boxes[b], scores[b], options);
  std::vector<torch::Tensor> out(n);
  if (anchors != nullptr) anchors->assign(n, torch::Tensor());
  tbb::parallel_for<std::size_t>(0, n, [&](std::size_t b) {
    out[b] = greedy(cands[b], options, anchors != nullptr ? &(*anchors)[b] : nullptr);
  });
  return out;
}

std::vector<ImagePredictions> image_predictions(const Predictions& det, const HeadDescription& head,
                                                const std::vector<torch::Tensor>& kept,
                                                const std::vector<torch::Tensor>& anchors) {
  std::vector<ImagePredictions> out(kept.size());
  for (std::size_t b = 0; b < kept.size(); ++b) {
    out[b].boxes = kept[b];
    for (const auto& o : head.outputs) {
      auto it = det.extras.find(o.name);
      if (it == det.extras.end()) continue;
      const auto image = it->second[static_cast<std::int64_t>(b)].detach();
      out[b].extras[o.name] =
          (o.per_anchor ? image.index_select(0, anchors.at(b).to(image.device())) : image).to(torch::kCPU);
    }
  }
  return out;
}

}  // namespace yoloflow::core
