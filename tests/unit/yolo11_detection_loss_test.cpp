// The YOLO11 detection loss and its task-aligned assigner on hand-built cases (the plugin's
// sources are compiled into the test binary), and the same loss as the train sink gets it:
// loaded from its plugin library, configured from pipeline parameters. Here rather than beside
// the plugin: its targets come from the host's batch_targets (core/src/train).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "yoloflow/head_geometry.h"
#include "loss/yolo11_detection/box_ops.h"
#include "loss/yolo11_detection/detection_loss.h"
#include "loss/yolo11_detection/task_aligned_assigner.h"
#include "support/plugins.h"
#include "training/components/batch_targets.h"
#include "yoloflow/error.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/torch_compat.h"

using namespace yoloflow;
using namespace yoloflow::yolo11_loss;
using yoloflow::core::pad_targets;

namespace {

// Anchor centres in pixels for an image of `size` (square), strides 8/16/32.
torch::Tensor pixel_anchors(int64_t size, const std::vector<int64_t>& strides) {
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (auto s : strides) sizes.emplace_back(size / s, size / s);
  auto [a, st] = head_geometry::anchor_grid(sizes, strides, torch::TensorOptions().dtype(torch::kFloat));
  return a * st;
}

bool strictly_inside(float x, float y, const std::vector<float>& b) {
  return x > b[0] && y > b[1] && x < b[2] && y < b[3];
}

std::vector<torch::Tensor> random_levels(int64_t batch, int64_t size, int nc, bool grad = false) {
  std::vector<torch::Tensor> levels;
  for (int64_t s : {8, 16, 32}) {
    auto t = torch::randn({batch, 64 + nc, size / s, size / s});
    if (grad) t.set_requires_grad(true);
    levels.push_back(t);
  }
  return levels;
}

}  // namespace

TEST_CASE("the head's anchor grid puts anchors at cell centres level by level") {
  auto [a, st] = head_geometry::anchor_grid({{2, 3}, {1, 1}}, {8, 16}, torch::TensorOptions());
  REQUIRE(a.size(0) == 7);
  CHECK(a[0][0].item<float>() == doctest::Approx(0.5));
  CHECK(a[2][0].item<float>() == doctest::Approx(2.5));  // third column of the first row
  CHECK(a[3][1].item<float>() == doctest::Approx(1.5));  // second row
  CHECK(st[5][0].item<float>() == 8);
  CHECK(st[6][0].item<float>() == 16);
}

TEST_CASE("CIoU is 1 for identical boxes and penalises distance and aspect") {
  auto a = torch::tensor({10.f, 10.f, 30.f, 50.f});
  CHECK(bbox_ciou(a, a).item<float>() == doctest::Approx(1.0).epsilon(1e-5));
  // Disjoint boxes: IoU 0, CIoU negative by the centre-distance term.
  auto b = torch::tensor({40.f, 10.f, 60.f, 50.f});
  const float c = bbox_ciou(a, b).item<float>();
  // rho^2 = 30^2 = 900; enclosing box 50 x 40: c^2 = 4100; same aspect -> v = 0.
  CHECK(c == doctest::Approx(-900.0 / 4100.0).epsilon(1e-4));
}

TEST_CASE("assigner: one box gets the top-k anchors inside it, with normalised scores") {
  const int64_t size = 64;
  auto anchors = pixel_anchors(size, {8, 16, 32});
  const auto A = anchors.size(0);
  const std::vector<float> box{10, 6, 50, 40};
  torch::manual_seed(3);
  auto scores = torch::rand({1, A, 2}) * 0.8 + 0.1;
  // Every anchor predicts the GT box exactly: the metric ranks anchors by class score.
  auto pd = torch::tensor(box).view({1, 1, 4}).expand({1, A, 4}).contiguous();
  auto gt_labels = torch::tensor({1, -1}, torch::kLong).view({1, 2});
  auto gt_boxes = torch::tensor({10.f, 6.f, 50.f, 40.f, 0.f, 0.f, 0.f, 0.f}).view({1, 2, 4});
  auto gt_mask = torch::tensor({true, false}).view({1, 2});
  TaskAlignedAssigner assigner(2, AssignerOptions{});
  auto r = assigner(scores, pd, anchors, gt_labels, gt_boxes, gt_mask);

  // Expected: anchors strictly inside, ranked by their class-1 score, best 10.
  std::vector<std::pair<float, int64_t>> inside;
  for (int64_t i = 0; i < A; ++i) {
    if (strictly_inside(anchors[i][0].item<float>(), anchors[i][1].item<float>(), box)) {
      inside.emplace_back(scores[0][i][1].item<float>(), i);
    }
  }
  REQUIRE(inside.size() > 10);  // the top-k cut matters in this case
  std::sort(inside.rbegin(), inside.rend());
  std::set<int64_t> expected;
  for (int k = 0; k < 10; ++k) expected.insert(inside[k].second);
  const float best = std::sqrt(inside[0].first);

  int fg = 0;
  for (int64_t i = 0; i < A; ++i) {
    const bool is_fg = r.fg_mask[0][i].item<bool>();
    CHECK(is_fg == (expected.count(i) == 1));
    if (!is_fg) {
      CHECK(r.scores[0][i].abs().sum().item<float>() == 0);
      continue;
    }
    ++fg;
    CHECK(r.labels[0][i].item<int64_t>() == 1);
    CHECK(r.gt_index[0][i].item<int64_t>() == 0);
    CHECK(r.bboxes[0][i][2].item<float>() == 50);
    // Alignment s^0.5 * 1^6, normalised so the best anchor gets its IoU (1).
    CHECK(r.scores[0][i][1].item<float>() ==
          doctest::Approx(std::sqrt(scores[0][i][1].item<float>()) / best).epsilon(1e-4));
    CHECK(r.scores[0][i][0].item<float>() == 0);
  }
  CHECK(fg == 10);
}

TEST_CASE("assigner: an anchor claimed by two boxes goes to the one it overlaps most") {
  const int64_t size = 32;  // 16 + 4 + 1 anchors: each box holds fewer than top-k
  auto anchors = pixel_anchors(size, {8, 16, 32});
  const auto A = anchors.size(0);
  const std::vector<float> box_a{2, 2, 18, 18}, box_b{6, 6, 22, 22};
  // Anchors inside B predict B, the others predict A.
  std::vector<float> pd_data;
  for (int64_t i = 0; i < A; ++i) {
    const auto& b = strictly_inside(anchors[i][0].item<float>(), anchors[i][1].item<float>(), box_b)
                        ? box_b
                        : box_a;
    pd_data.insert(pd_data.end(), b.begin(), b.end());
  }
  auto pd = torch::tensor(pd_data).view({1, A, 4});
  auto scores = torch::full({1, A, 3}, 0.5);
  auto gt_labels = torch::tensor({0, 2}, torch::kLong).view({1, 2});
  auto gt_boxes = torch::tensor({2.f, 2.f, 18.f, 18.f, 6.f, 6.f, 22.f, 22.f}).view({1, 2, 4});
  auto gt_mask = torch::tensor({true, true}).view({1, 2});
  auto r = TaskAlignedAssigner(3, AssignerOptions{})(scores, pd, anchors, gt_labels, gt_boxes, gt_mask);

  int shared = 0, only_a = 0, only_b = 0;
  for (int64_t i = 0; i < A; ++i) {
    const float x = anchors[i][0].item<float>(), y = anchors[i][1].item<float>();
    const bool in_a = strictly_inside(x, y, box_a), in_b = strictly_inside(x, y, box_b);
    CHECK(r.fg_mask[0][i].item<bool>() == (in_a || in_b));
    if (in_b) {
      CHECK(r.gt_index[0][i].item<int64_t>() == 1);
      CHECK(r.labels[0][i].item<int64_t>() == 2);
      CHECK(r.scores[0][i][2].item<float>() > 0);
      CHECK(r.scores[0][i][0].item<float>() == 0);
    } else if (in_a) {
      CHECK(r.gt_index[0][i].item<int64_t>() == 0);
      CHECK(r.labels[0][i].item<int64_t>() == 0);
    }
    shared += in_a && in_b;
    only_a += in_a && !in_b;
    only_b += in_b && !in_a;
  }
  CHECK(shared == 3);
  CHECK(only_a == 3);
  CHECK(only_b == 3);
}

TEST_CASE("assigner: a box smaller than a stride is assigned when it holds an anchor centre") {
  auto anchors = pixel_anchors(32, {8, 16, 32});
  const auto A = anchors.size(0);
  auto scores = torch::full({1, A, 1}, 0.5);
  auto gt_labels = torch::zeros({1, 2}, torch::kLong);
  // The first box holds the centre (4, 4); the second lies between centres.
  auto gt_boxes = torch::tensor({3.f, 3.f, 5.f, 5.f, 5.f, 5.f, 7.f, 7.f}).view({1, 2, 4});
  auto pd = gt_boxes.narrow(1, 0, 1).expand({1, A, 4}).contiguous();
  auto gt_mask = torch::tensor({true, true}).view({1, 2});
  auto r = TaskAlignedAssigner(1, AssignerOptions{})(scores, pd, anchors, gt_labels, gt_boxes, gt_mask);
  CHECK(r.fg_mask.sum().item<int64_t>() == 1);
  CHECK(r.fg_mask[0][0].item<bool>());
  CHECK(r.gt_index[0][0].item<int64_t>() == 0);
  CHECK(torch::isfinite(r.scores).all().item<bool>());
}

TEST_CASE("assigner: with the small-object rule a box under a stride counts as the next stride for candidates") {
  auto anchors = pixel_anchors(32, {8, 16, 32});
  const auto A = anchors.size(0);
  auto scores = torch::full({1, A, 1}, 0.5);
  auto gt_labels = torch::zeros({1, 1}, torch::kLong);
  // 2x2 px between the anchor centres (4, 8 and 12 on each axis): no centre inside it.
  auto gt_boxes = torch::tensor({5.f, 5.f, 7.f, 7.f}).view({1, 1, 4});
  auto pd = gt_boxes.expand({1, A, 4}).contiguous();
  auto gt_mask = torch::tensor({true}).view({1, 1});
  auto off = TaskAlignedAssigner(1, AssignerOptions{})(scores, pd, anchors, gt_labels, gt_boxes, gt_mask);
  CHECK(off.fg_mask.sum().item<int64_t>() == 0);
  // Widened to 16x16 around (6, 6) for the candidate test only: the four stride-8 centres and
  // the stride-16 centre (8, 8) lie strictly inside [-2, 14].
  AssignerOptions small;
  small.small_side = 8;
  small.small_side_as = 16;
  auto on = TaskAlignedAssigner(1, small)(scores, pd, anchors, gt_labels, gt_boxes, gt_mask);
  CHECK(on.fg_mask.sum().item<int64_t>() == 5);
  // The targets keep the box as labelled.
  for (int64_t i = 0; i < A; ++i) {
    if (!on.fg_mask[0][i].item<bool>()) continue;
    CHECK(on.bboxes[0][i][0].item<float>() == 5.f);
    CHECK(on.bboxes[0][i][2].item<float>() == 7.f);
  }
  // A padding row is never widened into a candidate.
  auto padded = TaskAlignedAssigner(1, small)(scores, pd, anchors, gt_labels, gt_boxes, torch::tensor({false}).view({1, 1}));
  CHECK(padded.fg_mask.sum().item<int64_t>() == 0);
}

TEST_CASE("loss: a perfect prediction gives near-zero box and DFL loss") {
  const int64_t size = 64;
  const int nc = 2;
  HeadDescription head{nc, 16, {8, 16, 32}};
  // GT [12, 12, 52, 52] class 1: edges sit at whole stride-8 cells from the stride-8 centres.
  const std::vector<float> box{12, 12, 52, 52};
  std::vector<torch::Tensor> levels;
  for (int64_t s : {8, 16, 32}) {
    const int64_t n = size / s;
    auto t = torch::zeros({1, 64 + nc, n, n});
    t.narrow(1, 64, nc).fill_(-10.0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const float cx = (j + 0.5f) * s, cy = (i + 0.5f) * s;
        std::vector<int64_t> bins{1, 1, 1, 1};
        if (s == 8 && strictly_inside(cx, cy, box)) {
          bins = {static_cast<int64_t>((cx - box[0]) / s), static_cast<int64_t>((cy - box[1]) / s),
                  static_cast<int64_t>((box[2] - cx) / s), static_cast<int64_t>((box[3] - cy) / s)};
          t[0][64 + 1][i][j] = 10.0;
        }
        for (int side = 0; side < 4; ++side) t[0][side * 16 + bins[side]][i][j] = 25.0;
      }
    }
    levels.push_back(t);
  }
  auto targets = torch::tensor({1.f, 0.5f, 0.5f, 40.f / 64, 40.f / 64}).view({1, 1, 5});
  DetectionLoss loss(head);
  auto r = loss(levels, targets);
  CHECK(r.items[0].item<float>() < 1e-4);
  CHECK(r.items[2].item<float>() < 1e-4);
  CHECK(r.items[1].item<float>() > 0);
  CHECK(r.total.item<float>() == doctest::Approx(r.items.sum().item<float>()));
}

TEST_CASE("loss: a wrong box prediction costs box and DFL loss, more when further off") {
  HeadDescription head{2, 16, {8, 16, 32}};
  auto targets = torch::tensor({1.f, 0.5f, 0.5f, 0.5f, 0.5f}).view({1, 1, 5});
  DetectionLoss loss(head);
  torch::manual_seed(1);
  auto levels = random_levels(1, 64, 2);
  auto r1 = loss(levels, targets);
  CHECK(r1.items[0].item<float>() > 0.1);
  CHECK(r1.items[2].item<float>() > 0.1);
  // Gains scale their own term only.
  loss.set_gains(LossGains{15.0, 0.5, 1.5});
  auto r2 = loss(levels, targets);
  CHECK(r2.items[0].item<float>() == doctest::Approx(2 * r1.items[0].item<float>()));
  CHECK(r2.items[1].item<float>() == doctest::Approx(r1.items[1].item<float>()));
}

TEST_CASE("loss: empty images give only class loss, finite") {
  HeadDescription head{3, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  auto levels = random_levels(2, 64, 3);
  auto padded = torch::zeros({2, 4, 5});
  padded.select(2, 0).fill_(-1);
  for (const auto& targets : {padded, torch::zeros({2, 0, 5})}) {
    auto r = loss(levels, targets);
    CHECK(r.items[0].item<float>() == 0);
    CHECK(r.items[2].item<float>() == 0);
    // Every logit is a negative: BCE sum / 1, times the gain 0.5.
    auto expected = torch::binary_cross_entropy_with_logits(
        torch::cat({levels[0].narrow(1, 64, 3).flatten(2), levels[1].narrow(1, 64, 3).flatten(2),
                    levels[2].narrow(1, 64, 3).flatten(2)}, 2),
        torch::zeros({2, 3, 84}), {}, {}, at::Reduction::Sum);
    CHECK(r.items[1].item<float>() == doctest::Approx(0.5 * expected.item<float>()).epsilon(1e-4));
    CHECK(r.total.item<float>() == doctest::Approx(2 * r.items[1].item<float>()).epsilon(1e-4));
  }
}

TEST_CASE("loss: tiny boxes and mixed images stay finite, gradients flow") {
  HeadDescription head{4, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  torch::manual_seed(7);
  auto levels = random_levels(3, 64, 4, /*grad=*/true);
  // Image 0: a normal box and a 1-pixel box; image 1: nothing; image 2: a box covering it all.
  auto rows = torch::tensor({0.f, 2.f, 0.3f, 0.4f, 0.3f, 0.2f,    //
                             0.f, 1.f, 0.71f, 0.71f, 1.f / 64, 1.f / 64,  //
                             2.f, 3.f, 0.5f, 0.5f, 1.f, 1.f}).view({3, 6});
  auto targets = pad_targets(rows, 3);
  auto r = loss(levels, targets);
  CHECK(torch::isfinite(r.items).all().item<bool>());
  CHECK(r.items[0].item<float>() > 0);
  r.total.backward();
  for (const auto& l : levels) {
    REQUIRE(l.grad().defined());
    CHECK(torch::isfinite(l.grad()).all().item<bool>());
    CHECK(l.grad().abs().sum().item<float>() > 0);
  }
}

TEST_CASE("loss rejects levels that do not match the head") {
  HeadDescription head{2, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  auto levels = random_levels(1, 64, 3);  // 3 classes for a 2-class head
  CHECK_THROWS_WITH_AS(loss(levels, torch::zeros({1, 0, 5})),
                       doctest::Contains("expected (1, 66, H, W)"), yoloflow::Error);
}

TEST_CASE("pad_targets lays rows out per image, padding with class -1") {
  auto rows = torch::tensor({1.f, 5.f, 0.1f, 0.2f, 0.3f, 0.4f,  //
                             1.f, 6.f, 0.5f, 0.5f, 0.1f, 0.1f,  //
                             0.f, 7.f, 0.9f, 0.9f, 0.2f, 0.2f}).view({3, 6});
  auto t = pad_targets(rows, 3);
  REQUIRE((t.sizes() == torch::IntArrayRef({3, 2, 5})));
  CHECK(t[0][0][0].item<float>() == 7);
  CHECK(t[0][1][0].item<float>() == -1);
  CHECK(t[1][0][0].item<float>() == 5);
  CHECK(t[1][0][4].item<float>() == doctest::Approx(0.4));
  CHECK(t[1][1][0].item<float>() == 6);
  CHECK((t[2].select(1, 0) == -1).all().item<bool>());
  int64_t dropped = -1;
  auto f = pad_targets(rows, 3, 1, &dropped);
  CHECK(f.size(1) == 1);
  CHECK(dropped == 1);
  CHECK((pad_targets(torch::zeros({0, 6}), 2).sizes() == torch::IntArrayRef({2, 0, 5})));
  CHECK_THROWS_WITH_AS(pad_targets(rows, 1), doctest::Contains("batch index 1"), yoloflow::Error);
}

TEST_CASE("a batch's boxes array becomes the padded targets; a malformed one is refused before it is read") {
  Batch batch;
  batch.size = 3;
  batch.boxes() = TargetArray{{3, 6}, {1.f, 5.f, 0.1f, 0.2f, 0.3f, 0.4f,  //
                                       1.f, 6.f, 0.5f, 0.5f, 0.1f, 0.1f,  //
                                       0.f, 7.f, 0.9f, 0.9f, 0.2f, 0.2f}};
  // Keypoints beside the boxes change nothing in the detection targets; row i's are all i + 1.
  batch.targets[targets::kKeypoints] = TargetArray{{3, 1, 3}, {1, 1, 1, 2, 2, 2, 3, 3, 3}};
  batch.targets[targets::kImageClasses] = TargetArray{{3}, {4.f, -1.f, 2.f}};
  const auto rows = core::box_rows(batch);
  CHECK((rows.sizes() == torch::IntArrayRef({3, 6})));
  CHECK(rows.data_ptr<float>() == batch.boxes().values.data());  // a view, no copy
  core::BatchTargets padded(core::TargetRows{});
  const LossTargets named = padded(batch, false, 0, 0);
  CHECK(torch::equal(named.boxes(), pad_targets(rows, 3)));
  // Every other per-instance array at the boxes' padded rows, padding 0; per-image ones as they are.
  const auto keypoints = named.get(targets::kKeypoints);
  CHECK((keypoints.sizes() == torch::IntArrayRef({3, 2, 1, 3})));
  CHECK(torch::equal(keypoints.select(3, 0).flatten(),
                     torch::tensor({3.f, 0.f, 1.f, 2.f, 0.f, 0.f})));  // image 0: row 2; image 1: rows 0, 1
  CHECK(torch::equal(named.get(targets::kImageClasses), torch::tensor({4.f, -1.f, 2.f})));
  CHECK_THROWS_WITH_AS(named.get("masks"), doctest::Contains("the batch has no 'masks' targets (it has: boxes, image_classes, keypoints)"),
                       yoloflow::Error);
  // A fixed row count drops an image's extra instances from every array alike.
  const LossTargets one_row = core::loss_targets(batch, /*fixed_rows=*/1);
  CHECK(torch::equal(one_row.get(targets::kKeypoints).select(3, 0).flatten(), torch::tensor({3.f, 1.f, 0.f})));
  // An array whose rows are not the batch's instances names itself.
  batch.targets[targets::kKeypoints] = TargetArray{{2, 1, 3}, std::vector<float>(6, 0.f)};
  CHECK_THROWS_WITH_AS(padded(batch, false, 0, 0),
                       doctest::Contains("the batch's 'keypoints' target array has shape (2, 1, 3) and 6 values; it must "
                                         "have one row per instance (3)"),
                       yoloflow::Error);
  batch.targets.erase(targets::kKeypoints);
  // A batch without a boxes array has no boxes.
  Batch empty;
  empty.size = 2;
  CHECK((core::box_rows(empty).sizes() == torch::IntArrayRef({0, 6})));
  CHECK((padded(empty, false, 0, 0).boxes().sizes() == torch::IntArrayRef({2, 0, 5})));
  batch.boxes().values.pop_back();
  CHECK_THROWS_WITH_AS(core::box_rows(batch), doctest::Contains("has shape (3, 6) and 17 values"), yoloflow::Error);
  batch.boxes() = TargetArray{{2, 9}, std::vector<float>(18, 0.f)};
  CHECK_THROWS_WITH_AS(core::box_rows(batch), doctest::Contains("must be (N, 6)"), yoloflow::Error);
}

TEST_CASE("pad_targets rounds rows up to a multiple, and the loss ignores the extra padding") {
  auto rows = torch::tensor({0.f, 1.f, 0.3f, 0.4f, 0.3f, 0.2f,  //
                             0.f, 0.f, 0.7f, 0.6f, 0.2f, 0.3f,  //
                             1.f, 2.f, 0.5f, 0.5f, 0.4f, 0.4f}).view({3, 6});
  CHECK(pad_targets(rows, 2, 0, nullptr, 32).size(1) == 32);
  CHECK(pad_targets(rows, 2, 0, nullptr, 1).size(1) == 2);
  CHECK(pad_targets(torch::zeros({0, 6}), 2, 0, nullptr, 32).size(1) == 0);  // nothing to pad
  int64_t dropped = -1;
  CHECK(pad_targets(rows, 2, 4, &dropped, 32).size(1) == 4);  // a fixed count wins over rounding
  CHECK(dropped == 0);
  // A captured step's shape: a batch that fits gets exactly fit_rows, a fuller one the rounded
  // count, and no box is dropped either way.
  CHECK(pad_targets(rows, 2, 0, &dropped, 32, 5).size(1) == 5);
  CHECK(dropped == 0);
  CHECK(pad_targets(rows, 2, 0, &dropped, 32, 1).size(1) == 32);
  CHECK(dropped == 0);
  CHECK(pad_targets(rows, 2, 3, &dropped, 32, 5).size(1) == 3);  // a fixed count still wins

  HeadDescription head{3, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  torch::manual_seed(3);
  auto levels = random_levels(2, 64, 3);
  auto exact = loss(levels, pad_targets(rows, 2)).items;
  auto rounded = loss(levels, pad_targets(rows, 2, 0, nullptr, 32)).items;
  CHECK(exact[0].item<float>() > 0);
  for (int i = 0; i < 3; ++i) CHECK(rounded[i].item<float>() == doctest::Approx(exact[i].item<float>()).epsilon(1e-5));
}

TEST_CASE("loss on YOLO11-sized outputs (640 px, 80 classes, 8400 anchors) is finite and trains") {
  HeadDescription head{80, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  torch::manual_seed(11);
  auto levels = random_levels(2, 640, 80, /*grad=*/true);
  // Ten boxes per image: [batch_idx, cls, cx, cy, w, h].
  auto batch_idx = torch::cat({torch::zeros({10, 1}), torch::ones({10, 1})});
  auto rows = torch::cat({batch_idx, torch::randint(0, 80, {20, 1}).to(torch::kFloat),
                          torch::rand({20, 2}) * 0.6 + 0.2, torch::rand({20, 2}) * 0.3 + 0.05},
                         1);
  auto targets = pad_targets(rows, 2, 16);
  REQUIRE(targets.size(1) == 16);
  auto r = loss(levels, targets);
  CHECK(torch::isfinite(r.items).all().item<bool>());
  CHECK(r.items[0].item<float>() > 0);
  CHECK(r.items[2].item<float>() > 0);
  r.total.backward();
  for (const auto& l : levels) CHECK(torch::isfinite(l.grad()).all().item<bool>());
}

TEST_CASE("loss computes in fp32 inside a bf16 autocast region") {
  HeadDescription head{2, 16, {8, 16, 32}};
  DetectionLoss loss(head);
  torch::manual_seed(5);
  auto levels = random_levels(2, 64, 2);
  auto targets = torch::tensor({1.f, 0.5f, 0.5f, 0.5f, 0.5f, 0.f, 0.3f, 0.3f, 0.2f, 0.2f}).view({2, 1, 5});
  auto plain = loss(levels, targets);
  torch::Tensor inside;
  {
    yoloflow::compat::AutocastGuard bf16(c10::DeviceType::CPU, true, torch::kBFloat16);
    inside = loss(levels, targets).items;
    CHECK(yoloflow::compat::autocast_enabled(c10::DeviceType::CPU));  // restored after the loss
  }
  CHECK((inside.scalar_type() == torch::kFloat));
  CHECK(torch::allclose(inside, plain.items, 1e-5, 1e-6));
}

namespace {

std::unique_ptr<Loss> plugin_loss(const HeadDescription& head, const json& params = json::object()) {
  auto loss = test::make_component<Loss>(test::plugins_with("yolo11_detection"), Kind::Loss, "yolo11_detection", params,
                                         {640, "train.params.loss", "yolo11_detection"});
  loss->setup(head);
  return loss;
}

// Five boxes over two images, [batch_idx, cls, cx, cy, w, h], padded to 8 rows.
torch::Tensor five_boxes() {
  auto rows = torch::tensor({0.f, 1.f, 0.30f, 0.40f, 0.20f, 0.30f,  //
                             0.f, 0.f, 0.70f, 0.60f, 0.05f, 0.04f,  //
                             1.f, 2.f, 0.50f, 0.50f, 0.60f, 0.70f,  //
                             1.f, 1.f, 0.20f, 0.80f, 0.10f, 0.15f,  //
                             1.f, 0.f, 0.85f, 0.15f, 0.25f, 0.20f})
                  .view({5, 6});
  return pad_targets(rows, 2, 8);
}

}  // namespace

TEST_CASE("yolo11_detection plugin: exactly the loss the train sink used before it was a plugin") {
  const HeadDescription head{3, 16, {8, 16, 32}};
  torch::manual_seed(21);
  auto levels = random_levels(2, 96, 3, /*grad=*/true);
  const auto targets = five_boxes();
  const auto plugin = plugin_loss(head);
  CHECK(plugin->item_names() == std::vector<std::string>{"box", "cls", "dfl"});
  const LossOutput out = plugin->compute(ModelOutput{levels, {}}, LossTargets{{{"boxes", targets}}}, 1.0);
  const LossResult direct = DetectionLoss(head)(levels, targets);  // Ultralytics' gains 7.5 / 0.5 / 1.5
  CHECK(torch::equal(out.total, direct.total));
  CHECK(torch::equal(out.items, direct.items));
  CHECK(torch::equal(out.normaliser, direct.score_sum));
  CHECK_FALSE(out.items.requires_grad());
  // A micro-batch's floor reaches the loss as given.
  CHECK(torch::equal(plugin->compute(ModelOutput{levels, {}}, LossTargets{{{"boxes", targets}}}, 0.5).total, DetectionLoss(head)(levels, targets, 0.5).total));
  // Gradients flow from the plugin's total into the model's outputs.
  out.total.backward();
  for (const auto& l : levels) CHECK(l.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("yolo11_detection plugin: its gains and assigner are its parameters") {
  const HeadDescription head{3, 16, {8, 16, 32}};
  torch::manual_seed(22);
  const auto levels = random_levels(2, 96, 3);
  const auto targets = five_boxes();
  const ModelOutput output{levels, {}};
  const LossTargets named{{{"boxes", targets}}};
  const auto base = plugin_loss(head)->compute(output, named, 1.0).items;
  const auto gained = plugin_loss(head, {{"box", 1.0}, {"cls", 2.0}, {"dfl", 0.0}})->compute(output, named, 1.0);
  CHECK(gained.items[0].item<double>() == doctest::Approx(base[0].item<double>() / 7.5));
  CHECK(gained.items[1].item<double>() == doctest::Approx(base[1].item<double>() * 4.0));
  CHECK(gained.items[2].item<double>() == 0.0);
  CHECK(gained.total.item<double>() == doctest::Approx(gained.items.sum().item<double>() * 2));  // times the batch
  AssignerOptions wide;
  wide.topk = 3;
  const auto topk = plugin_loss(head, {{"topk", 3}})->compute(output, named, 1.0);
  CHECK(torch::equal(topk.items, DetectionLoss(head, LossGains{}, wide)(levels, targets).items));
  CHECK_FALSE(torch::equal(topk.items, base));
}

TEST_CASE("yolo11_detection plugin: refuses a head with outputs it does not train, naming them") {
  HeadDescription head{3, 16, {8, 16, 32}};
  head.task = "segment";
  head.outputs.push_back({"mask_coefficients", true, 32, "mask coefficients"});
  try {
    plugin_loss(head);
    FAIL("a segmentation head was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(
          "yolo11_detection trains boxes and classes only, but the model's 'segment' head also gives "
          "'mask_coefficients': choose a loss for the 'segment' task") != std::string::npos);
  }
}

TEST_CASE("yolo11_detection plugin: bad parameters are refused at their JSON path") {
  auto& pm = test::plugins_with("yolo11_detection");
  const core::RegisteredComponent* rc = pm.registry().find(Kind::Loss, "yolo11_detection");
  REQUIRE(rc != nullptr);
  Diagnostics d;
  rc->info.schema.validate(json{{"box", -1.0}, {"topk", 0}, {"boxx", 2.0}}, "stages.train.params.loss.params", d);
  REQUIRE(d.size() == 3);
  std::set<std::string> paths;
  for (const auto& problem : d) paths.insert(problem.path);
  CHECK(paths == std::set<std::string>{"stages.train.params.loss.params.box", "stages.train.params.loss.params.topk",
                                       "stages.train.params.loss.params.boxx"});
  // topk is fixed: no schedule; the gains may follow one.
  Diagnostics scheduled;
  rc->info.schema.validate(json{{"box", {{"steps", {{"0", 7.5}, {"5", 5.0}}}}}, {"topk", {{"steps", {{"0", 10}}}}}},
                           "stages.train.params.loss.params", scheduled);
  REQUIRE(scheduled.size() == 1);
  CHECK(scheduled[0].path == "stages.train.params.loss.params.topk");
}
