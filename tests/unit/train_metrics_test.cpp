// Detection metrics against values computed by hand (101-point interpolated AP integrated
// with the trapezoidal rule, as Ultralytics reports it: a perfect detector scores 0.995,
// because the precision envelope drops to 0 at recall 1.0).
#include <doctest/doctest.h>

#include <cmath>

#include "train/detection_metrics.h"

using namespace yoloflow::core;

namespace {
torch::Tensor preds(std::vector<std::vector<float>> rows) {
  std::vector<float> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).view({static_cast<int64_t>(rows.size()), 6});
}
torch::Tensor labels(std::vector<std::vector<float>> rows) {
  std::vector<float> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).view({static_cast<int64_t>(rows.size()), 5});
}
void check_finite(const MetricsResult& m) {
  for (double v : {m.precision, m.recall, m.map50, m.map50_95, m.fitness}) CHECK(std::isfinite(v));
}
}  // namespace

TEST_CASE("metrics: no predictions give zeros") {
  DetectionMetrics m(3);
  m.add_image(torch::zeros({0, 6}), labels({{0, 10, 10, 50, 50}, {2, 0, 0, 5, 5}}));
  auto r = m.compute();
  check_finite(r);
  CHECK(r.images == 1);
  CHECK(r.instances == 2);
  CHECK(r.map50 == 0);
  CHECK(r.map50_95 == 0);
  CHECK(r.precision == 0);
  CHECK(r.recall == 0);
  REQUIRE(r.per_class.size() == 2);
  CHECK(r.per_class[1].cls == 2);
  CHECK(r.per_class[1].instances == 1);
}

TEST_CASE("metrics: no labels give zeros, no NaN") {
  DetectionMetrics m(3);
  m.add_image(preds({{10, 10, 50, 50, 0.9f, 1}}), torch::zeros({0, 5}));
  m.add_image(torch::Tensor(), torch::Tensor());
  auto r = m.compute();
  check_finite(r);
  CHECK(r.images == 2);
  CHECK(r.instances == 0);
  CHECK(r.map50 == 0);
  CHECK(r.fitness == 0);
  REQUIRE(r.per_class.size() == 1);  // the predicted class, with nothing to score
  CHECK(r.per_class[0].cls == 1);
  CHECK(r.per_class[0].ap50 == 0);
}

TEST_CASE("metrics: the right box with the wrong class scores zero") {
  DetectionMetrics m(2);
  m.add_image(preds({{10, 10, 50, 50, 0.9f, 1}}), labels({{0, 10, 10, 50, 50}}));
  auto r = m.compute();
  CHECK(r.map50 == 0);
  CHECK(r.map50_95 == 0);
  REQUIRE(r.per_class.size() == 2);
  CHECK(r.per_class[0].instances == 1);
  CHECK(r.per_class[0].ap50 == 0);
}

TEST_CASE("metrics: a perfect set scores the maximum, P = R = 1") {
  DetectionMetrics m(3);
  m.add_image(preds({{10, 10, 50, 50, 0.9f, 0}, {60, 60, 90, 80, 0.8f, 2}}),
              labels({{0, 10, 10, 50, 50}, {2, 60, 60, 90, 80}}));
  m.add_image(preds({{0, 0, 20, 30, 0.7f, 0}}), labels({{0, 0, 0, 20, 30}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.995));
  CHECK(r.map50_95 == doctest::Approx(0.995));
  CHECK(r.fitness == doctest::Approx(0.995));
  CHECK(r.precision == doctest::Approx(1.0));
  CHECK(r.recall == doctest::Approx(1.0));
  CHECK(r.instances == 3);
}

TEST_CASE("metrics: a duplicate detection is a false positive") {
  // Class 0, two labels; detections by score: TP (label 1), duplicate of label 1, TP (label 2).
  // Precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1; envelope 1 up to recall 0.5, then 2/3, then 0
  // at recall 1. Trapezoid over 101 points: 0.49 + 0.01*(1+2/3)/2 + 0.49*2/3 + 0.01*(2/3)/2.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 100, 0.9f, 0}, {0, 0, 100, 80, 0.8f, 0}, {200, 200, 250, 250, 0.7f, 0}}),
              labels({{0, 0, 0, 100, 100}, {0, 200, 200, 250, 250}}));
  auto r = m.compute();
  const double expected = 0.49 + 0.01 * (1 + 2.0 / 3) / 2 + 0.49 * 2.0 / 3 + 0.01 * (2.0 / 3) / 2;
  CHECK(r.map50 == doctest::Approx(expected).epsilon(1e-9));
  // The duplicate has IoU 0.8: a false positive at every threshold; both TPs are exact.
  CHECK(r.map50_95 == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("metrics: matching is greedy by IoU, not by score") {
  // The better-scored detection overlaps less (IoU 0.8): the exact one takes the label.
  // Ranked by score: FP then TP -> precision 0, 1/2 at recall 0, 1: envelope 1/2 until
  // recall 1, where it drops to 0: AP = 0.99*0.5 + 0.01*0.25.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 80, 0.9f, 0}, {0, 0, 100, 100, 0.8f, 0}}),
              labels({{0, 0, 0, 100, 100}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.99 * 0.5 + 0.01 * 0.25).epsilon(1e-9));
}

TEST_CASE("metrics: an IoU between thresholds counts up to that threshold only") {
  // IoU 0.72: correct at 0.50, 0.55, 0.60, 0.65, 0.70, not at 0.75 ... 0.95.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 72, 0.9f, 0}}), labels({{0, 0, 0, 100, 100}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.995));
  CHECK(r.map50_95 == doctest::Approx(0.995 * 5 / 10));
  CHECK(r.fitness == doctest::Approx(0.1 * 0.995 + 0.9 * 0.4975));
}

TEST_CASE("metrics: a mixed case over two classes") {
  // Class 0: 2 labels, detections TP(0.9), FP(0.6).
  // Class 1: 1 label, detection FP(0.95) then TP(0.5): AP = 0.99*0.5 + 0.0025.
  DetectionMetrics m(2);
  m.add_image(preds({{0, 0, 10, 10, 0.9f, 0}, {50, 50, 60, 60, 0.6f, 0}, {30, 0, 40, 10, 0.95f, 1},
                     {100, 100, 120, 120, 0.5f, 1}}),
              labels({{0, 0, 0, 10, 10}, {0, 70, 70, 80, 80}, {1, 100, 100, 120, 120}}));
  auto r = m.compute();
  // Class 0: precision 1, 1/2 at recall 1/2, 1/2. The envelope is 1 below recall 0.5 and
  // interpolates linearly from 1/2 at recall 0.5 to the sentinel 0 at recall 1:
  // 49 intervals of 1, one of (1 + 0.5)/2, then the triangle under 1 - x from 0.5 to 1.
  const double ap0 = 0.49 + 0.01 * 0.75 + 0.125;
  const double ap1 = 0.99 * 0.5 + 0.0025;
  CHECK(r.per_class[0].ap50 == doctest::Approx(ap0).epsilon(1e-9));
  CHECK(r.per_class[1].ap50 == doctest::Approx(ap1).epsilon(1e-9));
  CHECK(r.map50 == doctest::Approx((ap0 + ap1) / 2).epsilon(1e-9));
  CHECK(r.instances == 3);
  m.reset();
  CHECK(m.compute().instances == 0);
}

TEST_CASE("metrics: a class outside the dataset is an error naming it") {
  DetectionMetrics m(2);
  CHECK_THROWS_WITH(m.add_image(torch::zeros({0, 6}), labels({{5, 0, 0, 1, 1}})),
                    doctest::Contains("label class 5"));
}
