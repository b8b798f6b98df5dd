// Non-maximum suppression against hand-computed cases.
#include <doctest/doctest.h>

#include "training/detect/nms.h"

using namespace yoloflow;
using core::NmsOptions;

namespace {

// One image: boxes (A, 4) and per-class scores (A, nc).
Predictions one(std::vector<std::vector<float>> boxes, std::vector<std::vector<float>> scores) {
  const auto a = static_cast<std::int64_t>(boxes.size());
  const auto nc = a ? static_cast<std::int64_t>(scores[0].size()) : 2;
  auto b = torch::zeros({1, a, 4});
  auto s = torch::zeros({1, a, nc});
  for (std::int64_t i = 0; i < a; ++i) {
    for (int k = 0; k < 4; ++k) b[0][i][k] = boxes[i][k];
    for (std::int64_t c = 0; c < nc; ++c) s[0][i][c] = scores[i][c];
  }
  return {b, s};
}

// `images` x `anchors` random boxes (corners in [0, extent), sides 4 to 4 + size) with uniform
// scores over `classes`.
Predictions random_detections(int images, int anchors, int classes, float extent, float size) {
  auto xy = torch::rand({images, anchors, 2}) * extent;
  auto wh = torch::rand({images, anchors, 2}) * size + 4;
  return {torch::cat({xy, xy + wh}, 2), torch::rand({images, anchors, classes})};
}

// IoU matrix of two box sets (N, 4) x (M, 4) xyxy -> (N, M), as NMS computes it for a pair:
// the reference the kept boxes are checked against.
torch::Tensor box_iou(const torch::Tensor& a, const torch::Tensor& b) {
  const auto a1 = a.slice(1, 0, 2).unsqueeze(1), a2 = a.slice(1, 2, 4).unsqueeze(1);
  const auto b1 = b.slice(1, 0, 2).unsqueeze(0), b2 = b.slice(1, 2, 4).unsqueeze(0);
  const auto inter = (torch::min(a2, b2) - torch::max(a1, b1)).clamp_min(0).prod(2);
  const auto area_a = (a.slice(1, 2, 4) - a.slice(1, 0, 2)).clamp_min(0).prod(1).unsqueeze(1);
  const auto area_b = (b.slice(1, 2, 4) - b.slice(1, 0, 2)).clamp_min(0).prod(1).unsqueeze(0);
  return inter / (area_a + area_b - inter).clamp_min(1e-9);
}

NmsOptions opts(double conf, double iou) {
  NmsOptions o;
  o.conf = conf;
  o.iou = iou;
  return o;
}

}  // namespace

TEST_CASE("nms: no boxes, and no box above conf, give empty (0, 6) results") {
  auto out = core::non_max_suppression(one({}, {}), opts(0.25, 0.7));
  REQUIRE(out.size() == 1);
  CHECK(out[0].sizes() == torch::IntArrayRef({0, 6}));
  out = core::non_max_suppression(one({{0, 0, 10, 10}}, {{0.1f, 0.2f}}), opts(0.25, 0.7));
  CHECK(out[0].sizes() == torch::IntArrayRef({0, 6}));
}

TEST_CASE("nms: overlapping same-class boxes are suppressed above the IoU threshold") {
  // IoU of [0,0,10,10] and [1,0,11,10]: inter 90, union 110 -> 0.818. With [5,0,15,10]:
  // inter 50, union 150 -> 0.333. Far box kept.
  auto det = one({{0, 0, 10, 10}, {1, 0, 11, 10}, {5, 0, 15, 10}, {50, 50, 60, 60}},
                 {{0.9f, 0}, {0.8f, 0}, {0.7f, 0}, {0.6f, 0}});
  auto out = core::non_max_suppression(det, opts(0.25, 0.7))[0];
  REQUIRE(out.size(0) == 3);
  CHECK(out[0][4].item<float>() == doctest::Approx(0.9));
  CHECK(out[1][4].item<float>() == doctest::Approx(0.7));
  CHECK(out[2][4].item<float>() == doctest::Approx(0.6));
  CHECK(out[2][0].item<float>() == 50);
  // A lower threshold also removes the 0.333 overlap.
  out = core::non_max_suppression(det, opts(0.25, 0.3))[0];
  CHECK(out.size(0) == 2);
  // A suppressed box does not suppress others: b1 (suppressed by b0) overlaps b2 by
  // 60/140 = 0.43 > 0.4, but b2 overlaps b0 by only 0.333, so b2 stays.
  out = core::non_max_suppression(det, opts(0.25, 0.4))[0];
  CHECK(out.size(0) == 3);
}

TEST_CASE("nms: class-aware unless agnostic") {
  auto det = one({{0, 0, 10, 10}, {1, 0, 11, 10}}, {{0.9f, 0.0f}, {0.0f, 0.8f}});
  auto out = core::non_max_suppression(det, opts(0.25, 0.7))[0];
  REQUIRE(out.size(0) == 2);
  CHECK(out[0][5].item<float>() == 0);
  CHECK(out[1][5].item<float>() == 1);
  auto o = opts(0.25, 0.7);
  o.agnostic = true;
  out = core::non_max_suppression(det, o)[0];
  REQUIRE(out.size(0) == 1);
  CHECK(out[0][4].item<float>() == doctest::Approx(0.9));
}

TEST_CASE("nms: max_det keeps the highest scores, sorted") {
  std::vector<std::vector<float>> boxes, scores;
  for (int i = 0; i < 10; ++i) {
    boxes.push_back({i * 20.f, 0, i * 20.f + 10, 10});  // disjoint
    scores.push_back({0.3f + 0.05f * static_cast<float>(i)});
  }
  auto o = opts(0.25, 0.7);
  o.max_det = 3;
  const auto out = core::non_max_suppression(one(boxes, scores), o)[0];
  REQUIRE(out.size(0) == 3);
  CHECK(out[0][4].item<float>() == doctest::Approx(0.75));
  CHECK(out[1][4].item<float>() == doctest::Approx(0.70));
  CHECK(out[2][4].item<float>() == doctest::Approx(0.65));
  CHECK(out[0][0].item<float>() == 180);
}

TEST_CASE("nms: multi_label keeps a box once per class above conf") {
  auto det = one({{0, 0, 10, 10}, {100, 100, 110, 110}}, {{0.6f, 0.5f, 0.1f}, {0.3f, 0.0f, 0.0f}});
  auto o = opts(0.2, 0.7);
  auto out = core::non_max_suppression(det, o)[0];
  CHECK(out.size(0) == 2);  // best class only
  o.multi_label = true;
  out = core::non_max_suppression(det, o)[0];
  REQUIRE(out.size(0) == 3);
  CHECK(out[0][4].item<float>() == doctest::Approx(0.6));
  CHECK(out[0][5].item<float>() == 0);
  CHECK(out[1][4].item<float>() == doctest::Approx(0.5));
  CHECK(out[1][5].item<float>() == 1);
  CHECK(out[1][0].item<float>() == 0);  // the same box as row 0
  CHECK(out[2][5].item<float>() == 0);
}

TEST_CASE("nms: thousands of boxes, max_candidates, and a batch of images") {
  torch::manual_seed(0);
  const Predictions det = random_detections(2, 8400, 80, 600, 60);
  NmsOptions o;
  o.conf = 0.001;
  o.iou = 0.7;
  o.max_det = 300;
  o.multi_label = true;
  o.max_candidates = 30000;
  const auto out = core::non_max_suppression(det, o);
  REQUIRE(out.size() == 2);
  for (const auto& r : out) {
    CHECK(r.size(0) == 300);
    // Sorted by score, and no same-class pair overlaps beyond the threshold.
    CHECK((r.slice(0, 0, 299).select(1, 4) >= r.slice(0, 1, 300).select(1, 4)).all().item<bool>());
    const auto iou = box_iou(r.slice(1, 0, 4), r.slice(1, 0, 4));
    const auto same = r.select(1, 5).unsqueeze(1).eq(r.select(1, 5).unsqueeze(0));
    const auto off_diag = torch::ones({300, 300}, torch::kBool).triu(1);
    CHECK_FALSE((iou.gt(0.7) & same & off_diag).any().item<bool>());
  }
  // max_candidates bounds what enters NMS: with 5 candidates at most 5 come out.
  o.max_candidates = 5;
  CHECK(core::non_max_suppression(det, o)[0].size(0) <= 5);
}

// The textbook greedy pass over every candidate at once, highest score first: what the
// per-class lists of nms.cpp must reproduce box for box.
static torch::Tensor reference_nms(const torch::Tensor& boxes, const torch::Tensor& scores, const NmsOptions& o) {
  const auto nz = (scores > o.conf).nonzero();
  const auto box_idx = nz.select(1, 0), cls = nz.select(1, 1);
  const auto conf = scores.index({box_idx, cls});
  const auto order = std::get<1>(conf.sort(/*stable=*/true, 0, /*descending=*/true));
  std::vector<std::int64_t> kept;
  std::vector<char> suppressed(static_cast<std::size_t>(order.size(0)), 0);
  for (std::int64_t a = 0; a < order.size(0) && static_cast<int>(kept.size()) < o.max_det; ++a) {
    const auto i = order[a].item<std::int64_t>();
    if (suppressed[a]) continue;
    kept.push_back(i);
    for (std::int64_t b = a + 1; b < order.size(0); ++b) {
      const auto j = order[b].item<std::int64_t>();
      if (suppressed[b] || (!o.agnostic && cls[j].item<std::int64_t>() != cls[i].item<std::int64_t>())) continue;
      const auto v = box_iou(boxes[box_idx[i]].unsqueeze(0), boxes[box_idx[j]].unsqueeze(0)).item<float>();
      if (v > o.iou) suppressed[b] = 1;
    }
  }
  auto out = torch::empty({static_cast<std::int64_t>(kept.size()), 6});
  for (std::size_t r = 0; r < kept.size(); ++r) {
    const auto i = kept[r];
    out[r].slice(0, 0, 4).copy_(boxes[box_idx[i]]);
    out[r][4] = conf[i];
    out[r][5] = cls[i].item<float>();
  }
  return out;
}

TEST_CASE("nms: per-class lists keep exactly what one greedy pass over all candidates keeps") {
  // Crowded boxes over few classes, a max_det that cuts the result short, class-aware and
  // agnostic: the cases where per-class processing and its early stop could differ.
  torch::manual_seed(3);
  const Predictions det = random_detections(1, 400, 5, 200, 80);
  for (const bool agnostic : {false, true}) {
    for (const int max_det : {7, 40, 1000}) {
      CAPTURE(agnostic);
      CAPTURE(max_det);
      NmsOptions o = opts(0.6, 0.45);
      o.multi_label = true;
      o.agnostic = agnostic;
      o.max_det = max_det;
      const auto got = core::non_max_suppression(det, o)[0];
      const auto want = reference_nms(det.boxes[0], det.scores[0], o);
      REQUIRE(got.size(0) == want.size(0));
      CHECK(got.size(0) > 0);
      CHECK(torch::equal(got, want));
    }
  }
}
