// Detection metrics against Ultralytics 8.4's validator: hand-worked cases of its rules
// (matching, AP integration) and a fixture of labels and boxes for which Ultralytics' own
// code computed P, R, mAP50 and mAP50-95 (shared/fixtures/coco128-val-parity).
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/paths.h"
#include "evaluator/detection/detection_metrics.h"

using namespace yoloflow::detection_eval;

namespace {
torch::Tensor rows_tensor(const std::vector<std::vector<float>>& rows, int64_t width) {
  std::vector<float> flat;
  for (auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).view({static_cast<int64_t>(rows.size()), width});
}
torch::Tensor preds(const std::vector<std::vector<float>>& rows) { return rows_tensor(rows, 6); }
torch::Tensor labels(const std::vector<std::vector<float>>& rows) { return rows_tensor(rows, 5); }
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
  CHECK(r.per_class[1].images == 1);
}

TEST_CASE("metrics: no labels give zeros, no NaN; unlabelled classes are not scored") {
  DetectionMetrics m(3);
  m.add_image(preds({{10, 10, 50, 50, 0.9f, 1}}), torch::zeros({0, 5}));
  m.add_image(torch::Tensor(), torch::Tensor());
  auto r = m.compute();
  check_finite(r);
  CHECK(r.images == 2);
  CHECK(r.instances == 0);
  CHECK(r.map50 == 0);
  CHECK(r.fitness == 0);
  CHECK(r.per_class.empty());
}

TEST_CASE("metrics: the right box with the wrong class scores zero") {
  DetectionMetrics m(2);
  m.add_image(preds({{10, 10, 50, 50, 0.9f, 1}}), labels({{0, 10, 10, 50, 50}}));
  auto r = m.compute();
  CHECK(r.map50 == 0);
  CHECK(r.map50_95 == 0);
  REQUIRE(r.per_class.size() == 1);  // class 1 has no label: not scored
  CHECK(r.per_class[0].cls == 0);
  CHECK(r.per_class[0].ap50 == 0);
}

TEST_CASE("metrics: a perfect set scores 0.995 (101 points, the last at precision 0), P = R = 1") {
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
  REQUIRE(r.per_class.size() == 2);
  CHECK(r.per_class[0].images == 2);
  CHECK(r.per_class[0].instances == 2);
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

TEST_CASE("metrics: a label goes to the higher-scored prediction, not to the one that overlaps it most") {
  // Both predictions choose the only label; it keeps the better-scored one (IoU 0.8), so the
  // exact box (IoU 1.0, lower score) is a false positive up to IoU 0.80. Ranked by score: TP
  // then FP -> AP 0.995 at 0.50..0.80. From 0.85 the loose box no longer matches and the exact
  // one takes the label: FP then TP -> precision 0, 1/2 at recall 0, 1 -> 0.99*0.5 + 0.01*0.25.
  DetectionMetrics m(1);
  // Given in the wrong order on purpose: the metrics sort by score themselves.
  m.add_image(preds({{0, 0, 100, 100, 0.8f, 0}, {0, 0, 100, 80, 0.9f, 0}}), labels({{0, 0, 0, 100, 100}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.995).epsilon(1e-9));
  const double late = 0.99 * 0.5 + 0.01 * 0.25;
  CHECK(r.map50_95 == doctest::Approx((7 * 0.995 + 3 * late) / 10).epsilon(1e-9));
}

TEST_CASE("metrics: a prediction keeps its best label even when a better-scored one took it") {
  // Two labels of one class side by side; A (0.9) overlaps label 0 best, B (0.8) overlaps
  // label 0 best too and label 1 less: B stays unmatched rather than falling back to label 1.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 100, 0.9f, 0}, {0, 0, 120, 100, 0.8f, 0}}),
              labels({{0, 0, 0, 100, 100}, {0, 40, 0, 140, 100}}));
  auto r = m.compute();
  // B: IoU 0.833 with label 0, 0.571 with label 1. Recall 1/2 then stays: AP = 0.495.
  CHECK(r.map50 == doctest::Approx(0.495).epsilon(1e-9));
}

TEST_CASE("metrics: recall never reached earns nothing") {
  // One TP for two labels: precision 1 up to recall 0.5, then 0.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 100, 0.9f, 0}}), labels({{0, 0, 0, 100, 100}, {0, 300, 300, 400, 400}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.495).epsilon(1e-9));
  CHECK(r.recall == doctest::Approx(0.5));
  CHECK(r.precision == doctest::Approx(1.0));
}

TEST_CASE("metrics: an IoU between thresholds counts up to that threshold only") {
  // IoU 0.72: correct at 0.50, 0.55, 0.60, 0.65, 0.70, not at 0.75 ... 0.95.
  DetectionMetrics m(1);
  m.add_image(preds({{0, 0, 100, 72, 0.9f, 0}}), labels({{0, 0, 0, 100, 100}}));
  auto r = m.compute();
  CHECK(r.map50 == doctest::Approx(0.995));
  CHECK(r.map50_95 == doctest::Approx(0.995 * 5 / 10));
  CHECK(r.fitness == doctest::Approx(0.4975));  // fitness is mAP50-95
}

TEST_CASE("metrics: a mixed case over two classes") {
  // Class 0: 2 labels, detections TP(0.9), FP(0.6): recall stops at 1/2 -> AP 0.495.
  // Class 1: 1 label, detection FP(0.95) then TP(0.5): AP = 0.99*0.5 + 0.0025.
  DetectionMetrics m(2);
  m.add_image(preds({{0, 0, 10, 10, 0.9f, 0}, {50, 50, 60, 60, 0.6f, 0}, {30, 0, 40, 10, 0.95f, 1},
                     {100, 100, 120, 120, 0.5f, 1}}),
              labels({{0, 0, 0, 10, 10}, {0, 70, 70, 80, 80}, {1, 100, 100, 120, 120}}));
  auto r = m.compute();
  const double ap0 = 0.495;
  const double ap1 = 0.99 * 0.5 + 0.0025;
  REQUIRE(r.per_class.size() == 2);
  CHECK(r.per_class[0].ap50 == doctest::Approx(ap0).epsilon(1e-9));
  CHECK(r.per_class[1].ap50 == doctest::Approx(ap1).epsilon(1e-9));
  CHECK(r.map50 == doctest::Approx((ap0 + ap1) / 2).epsilon(1e-9));
  CHECK(r.instances == 3);
  m.reset();
  CHECK(m.compute().instances == 0);
}

TEST_CASE("metrics: a class outside the dataset is an error naming it") {
  DetectionMetrics m(2);
  CHECK_THROWS_WITH(m.add_image(torch::zeros({0, 6}), labels({{5, 0, 0, 1, 1}})), doctest::Contains("label class 5"));
}

TEST_CASE("metrics: equal to Ultralytics' on the 4-image fixture (labels and boxes, no model)") {
  const std::string path = yoloflow::test::fixtures_dir() + "/coco128-val-parity/metrics-4img.json";
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "missing fixture " << path);
  const auto fx = nlohmann::json::parse(f);
  DetectionMetrics m(fx.at("nc").get<int>());
  for (const auto& image : fx.at("images")) {
    m.add_image(preds(image.at("pred").get<std::vector<std::vector<float>>>()),
                labels(image.at("labels").get<std::vector<std::vector<float>>>()));
  }
  const auto r = m.compute();
  const auto& want = fx.at("expected");
  MESSAGE("P " << r.precision << " R " << r.recall << " mAP50 " << r.map50 << " mAP50-95 " << r.map50_95
               << " (Ultralytics: " << want.dump() << ")");
  CHECK(std::abs(r.precision - want.at("P").get<double>()) < 1e-4);
  CHECK(std::abs(r.recall - want.at("R").get<double>()) < 1e-4);
  CHECK(std::abs(r.map50 - want.at("mAP50").get<double>()) < 1e-4);
  CHECK(std::abs(r.map50_95 - want.at("mAP50_95").get<double>()) < 1e-4);
}
