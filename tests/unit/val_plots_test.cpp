// The data behind the validation plots: the curves' per-class AP50 and mAP@0.5 are the detection
// evaluator's own numbers on the same detections, the mean PR curve's area is mAP50, the F1
// peak is where the evaluator reads P and R, and the confusion matrix counts every label once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include <opencv2/imgcodecs.hpp>

#include "evaluator/detection/detection_metrics.h"
#include "support/run_cli.h"
#include "training/eval/confusion_matrix.h"
#include "training/eval/metric_curves.h"
#include "training/eval/metric_curves_plot.h"
#include "training/eval/val_batch_plots.h"
#include "training/eval/val_plots.h"

using namespace yoloflow;

namespace {

// Random images: labels of 3 classes, predictions near some labels (right or wrong class) and
// some anywhere, scores random.
struct Synthetic {
  std::vector<torch::Tensor> predictions, labels;  // (N, 6) and (M, 5) per image
};

Synthetic synthetic(int images, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  Synthetic s;
  for (int i = 0; i < images; ++i) {
    const int m = 1 + static_cast<int>(u(rng) * 6);
    auto lab = torch::zeros({m, 5});
    std::vector<std::vector<float>> pred;
    for (int j = 0; j < m; ++j) {
      const float x = u(rng) * 400, y = u(rng) * 400, w = 20 + u(rng) * 100, h = 20 + u(rng) * 100;
      const float cls = static_cast<float>(static_cast<int>(u(rng) * 3));
      lab[j][0] = cls, lab[j][1] = x, lab[j][2] = y, lab[j][3] = x + w, lab[j][4] = y + h;
      for (int k = 0; k < 2; ++k) {
        if (u(rng) < 0.35f) continue;
        const float jx = (u(rng) - 0.5f) * w * 0.6f, jy = (u(rng) - 0.5f) * h * 0.6f;
        const float pc = u(rng) < 0.8f ? cls : static_cast<float>(static_cast<int>(u(rng) * 3));
        pred.push_back({x + jx, y + jy, x + w + jx, y + h + jy, u(rng), pc});
      }
    }
    for (int k = 0; k < 3; ++k) {
      const float x = u(rng) * 400, y = u(rng) * 400;
      pred.push_back({x, y, x + 50, y + 50, u(rng) * 0.5f, static_cast<float>(static_cast<int>(u(rng) * 3))});
    }
    auto p = torch::zeros({static_cast<std::int64_t>(pred.size()), 6});
    for (std::size_t k = 0; k < pred.size(); ++k) {
      for (int c = 0; c < 6; ++c) p[static_cast<std::int64_t>(k)][c] = pred[k][static_cast<std::size_t>(c)];
    }
    s.predictions.push_back(p);
    s.labels.push_back(lab);
  }
  return s;
}

torch::Tensor iou_of(const torch::Tensor& labels, const torch::Tensor& predictions) {
  const auto a = labels.narrow(1, 1, 4), b = predictions.narrow(1, 0, 4);
  const auto lt = torch::max(a.unsqueeze(1).narrow(2, 0, 2), b.unsqueeze(0).narrow(2, 0, 2));
  const auto rb = torch::min(a.unsqueeze(1).narrow(2, 2, 2), b.unsqueeze(0).narrow(2, 2, 2));
  const auto wh = (rb - lt).clamp_min(0);
  const auto inter = wh.select(2, 0) * wh.select(2, 1);
  const auto area = [](const torch::Tensor& t) { return (t.select(1, 2) - t.select(1, 0)) * (t.select(1, 3) - t.select(1, 1)); };
  return inter / (area(a).unsqueeze(1) + area(b).unsqueeze(0) - inter + 1e-7);
}

}  // namespace

TEST_CASE("val plots: the curves' AP50 and mAP@0.5 are the detection evaluator's, the PR mean's area is mAP50") {
  for (unsigned seed : {1u, 7u, 42u}) {
    CAPTURE(seed);
    const auto s = synthetic(40, seed);
    detection_eval::DetectionMetrics evaluator(3);
    std::vector<core::ScoredPrediction> scored;
    std::vector<int> label_cls;
    for (std::size_t i = 0; i < s.labels.size(); ++i) {
      evaluator.add_image(s.predictions[i], s.labels[i]);
      std::vector<int> cls;
      for (std::int64_t j = 0; j < s.labels[i].size(0); ++j) cls.push_back(s.labels[i][j][0].item<int>());
      label_cls.insert(label_cls.end(), cls.begin(), cls.end());
      const auto tp = core::true_positives(s.predictions[i], cls, iou_of(s.labels[i], s.predictions[i]));
      for (std::int64_t k = 0; k < s.predictions[i].size(0); ++k) {
        scored.push_back({s.predictions[i][k][4].item<float>(), s.predictions[i][k][5].item<int>(),
                          tp[static_cast<std::size_t>(k)]});
      }
    }
    const auto m = evaluator.compute();
    const auto c = core::metric_curves(scored, label_cls);
    REQUIRE(c.classes.size() == m.per_class.size());
    for (std::size_t k = 0; k < c.classes.size(); ++k) {
      CHECK(c.classes[k] == m.per_class[k].cls);
      CHECK(c.instances[k] == m.per_class[k].instances);
      CHECK(c.ap50[k] == doctest::Approx(m.per_class[k].ap50).epsilon(1e-9));
    }
    CHECK(c.map50() == doctest::Approx(m.map50).epsilon(1e-9));
    // The PR curve samples the same envelope at 1000 recalls instead of 101: its mean's area
    // is mAP50 within the sampling's error.
    CHECK(std::fabs(core::curve_area(c.x, core::mean_curve(c.pr)) - m.map50) < 0.01);
    // The F1 legend's peak is where the evaluator reads its P and R: the mean P and R there.
    const auto [f1, at] = core::curve_peak(c.x, c.f1);
    const auto i = static_cast<std::size_t>(std::lround(at * (core::kCurvePoints - 1)));
    CHECK(core::mean_curve(c.precision)[i] == doctest::Approx(m.precision).epsilon(1e-9));
    CHECK(core::mean_curve(c.recall)[i] == doctest::Approx(m.recall).epsilon(1e-9));
    CHECK(f1 > 0.0);
    CHECK(f1 <= 1.0);
  }
}

TEST_CASE("val plots: the confusion matrix counts each label once, by Ultralytics' matching") {
  core::ConfusionMatrix cm(2);
  // Label 0 (class 0) found as class 0; label 1 (class 1) found as class 0; label 2 (class 1)
  // missed; a confident prediction on nothing; a prediction under conf 0.25 not counted.
  const auto labels = torch::tensor({0.f, 0.f, 0.f, 10.f, 10.f, 1.f, 20.f, 20.f, 30.f, 30.f, 1.f, 50.f, 50.f, 60.f, 60.f})
                          .reshape({3, 5});
  const auto preds = torch::tensor({0.f, 0.f, 10.f, 10.f, 0.9f, 0.f,   //
                                    20.f, 20.f, 30.f, 29.f, 0.8f, 0.f,  //
                                    80.f, 80.f, 90.f, 90.f, 0.7f, 1.f,  //
                                    50.f, 50.f, 60.f, 60.f, 0.2f, 1.f})
                         .reshape({4, 6});
  cm.add_image(preds, labels);
  CHECK(cm.at(0, 0) == 1);
  CHECK(cm.at(0, 1) == 1);
  CHECK(cm.at(2, 1) == 1);  // missed: background row
  CHECK(cm.at(1, 2) == 1);  // on nothing: background column
  CHECK(cm.column_sum(0) == 1);
  CHECK(cm.column_sum(1) == 2);
  CHECK(cm.total() == 4);
  const auto n = cm.normalized();
  CHECK(n[0 * 3 + 1] == doctest::Approx(0.5));
  CHECK(n[2 * 3 + 1] == doctest::Approx(0.5));
  // An image without labels: its confident predictions are background false positives.
  cm.add_image(preds, torch::zeros({0, 5}));
  CHECK(cm.at(0, 2) == 2);
  CHECK(cm.at(1, 2) == 2);
}

TEST_CASE("val plots: the pictures are written and readable, with ink on them") {
  const std::string dir = test::temp_dir("val-plots-unit");
  const auto s = synthetic(10, 3);
  core::ValPlots plots({"cat", "dog", "bird"});
  plots.reset(3);
  // Through a batch, as the val sink feeds it: 10 images of 448 x 448, boxes normalised.
  Batch b;
  b.size = 10;
  b.height = b.width = 448;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[10 * 448 * 448 * 3], std::default_delete<std::uint8_t[]>());
  std::fill(b.pixels.get(), b.pixels.get() + 10 * 448 * 448 * 3, std::uint8_t{90});
  TargetArray& boxes = b.boxes();
  std::int64_t rows = 0;
  std::vector<ImagePredictions> predictions(10);
  int instances = 0;
  for (int i = 0; i < 10; ++i) {
    const auto& l = s.labels[static_cast<std::size_t>(i)];
    for (std::int64_t j = 0; j < l.size(0); ++j, ++rows, ++instances) {
      const float x1 = l[j][1].item<float>(), y1 = l[j][2].item<float>(), x2 = l[j][3].item<float>(), y2 = l[j][4].item<float>();
      boxes.values.insert(boxes.values.end(), {static_cast<float>(i), l[j][0].item<float>(), (x1 + x2) / 2 / 448, (y1 + y2) / 2 / 448,
                                               (x2 - x1) / 448, (y2 - y1) / 448});
    }
    predictions[static_cast<std::size_t>(i)].boxes = s.predictions[static_cast<std::size_t>(i)];
  }
  boxes.shape = {rows, 6};
  plots.add_batch(b, predictions);
  // Every label lands in its class's column once.
  std::int64_t counted = 0;
  for (int c = 0; c < 3; ++c) counted += plots.confusion().column_sum(c);
  CHECK(counted == instances);
  const auto written = plots.write(dir);
  CHECK(written.size() == 8);  // 2 matrices, 4 curves, one batch's labels and predictions
  for (const auto& f : written) {
    CAPTURE(f);
    const cv::Mat image = cv::imread(dir + "/" + f);
    REQUIRE(!image.empty());
    CHECK(image.cols >= 400);
    CHECK(image.rows >= 400);
    // Not blank: a spread of pixel values.
    cv::Scalar mean, dev;
    cv::meanStdDev(image, mean, dev);
    CHECK(dev[0] + dev[1] + dev[2] > 5.0);
  }
}

TEST_CASE("val plots: a segmentation model's drawn detections carry their masks, as predict makes them") {
  // One 64 x 64 image; prototypes at 16 x 16 (mask_ratio 4): channel 0 is +1 on the left half,
  // -1 on the right; channel 1 is +1 everywhere.
  Batch b;
  b.size = 1;
  b.height = b.width = 64;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[64 * 64 * 3], std::default_delete<std::uint8_t[]>());
  std::fill(b.pixels.get(), b.pixels.get() + 64 * 64 * 3, std::uint8_t{90});
  b.boxes().shape = {0, 6};
  auto prototypes = torch::zeros({2, 16, 16});
  prototypes[0].narrow(1, 0, 8).fill_(1.0f);
  prototypes[0].narrow(1, 8, 8).fill_(-1.0f);
  prototypes[1].fill_(1.0f);
  ImagePredictions p;
  // Three detections, highest score first: the first uses channel 0 (left half only) inside
  // 8..56 x 8..40, the second channel 1 (all) inside 16..32 x 40..60, the third under 0.25.
  p.boxes = torch::tensor({8.f, 8.f, 56.f, 40.f, 0.9f, 0.f, 16.f, 40.f, 32.f, 60.f, 0.6f, 1.f, 0.f, 0.f, 64.f, 64.f, 0.1f, 0.f})
                .reshape({3, 6});
  p.extras["mask_coefficients"] = torch::tensor({1.f, 0.f, 0.f, 1.f, 1.f, 1.f}).reshape({3, 2});
  p.extras["prototypes"] = prototypes;
  const core::DrawnBatch drawn = core::keep_batch_for_drawing(b, {p}, {"a", "b"});
  REQUIRE(drawn.predictions.size() == 1);
  const Sample& s = drawn.predictions[0];
  REQUIRE(s.boxes.size() == 2);  // the 0.1 detection is not drawn
  REQUIRE(s.masks.size() == 2);
  const cv::Mat& left = s.masks[0];
  CHECK(left.rows == 64);
  CHECK(left.cols == 64);
  CHECK(left.at<std::uint8_t>(20, 12) == 255);  // inside its box, left half
  CHECK(left.at<std::uint8_t>(20, 50) == 0);    // inside its box, right half: below 0
  CHECK(left.at<std::uint8_t>(50, 12) == 0);    // outside its box
  const cv::Mat& all = s.masks[1];
  CHECK(cv::countNonZero(all) == 16 * 20);  // exactly its box: columns 16..31, rows 40..59
  CHECK(all.at<std::uint8_t>(45, 20) == 255);
  // A detection model's predictions have no masks.
  ImagePredictions plain;
  plain.boxes = p.boxes;
  CHECK(core::keep_batch_for_drawing(b, {plain}, {"a", "b"}).predictions[0].masks.empty());
}

TEST_CASE("val plots: each family the evaluator matches by (Mask) gets its curves, equal to its own AP50") {
  // The evaluator matched by another overlap than the boxes' (as the segmentation evaluator's
  // mask IoU): the plotted curves come from its matching, and their AP50 are its AP50.
  const auto s = synthetic(40, 11);
  detection_eval::DetectionMetrics masks(3);
  for (std::size_t i = 0; i < s.labels.size(); ++i) {
    // An overlap unlike the boxes': their IoU shrunk by a per-pair factor.
    const auto iou = iou_of(s.labels[i], s.predictions[i]);
    const auto factor = 0.55 + 0.45 * torch::sin(torch::arange(iou.numel(), torch::kFloat)).abs().reshape(iou.sizes());
    masks.add_image(s.predictions[i], s.labels[i], iou * factor);
  }
  const auto m = masks.compute();
  const MatchedDetections family = masks.matched("Mask");
  CHECK(family.family == "Mask");
  CHECK(family.label_classes.size() == static_cast<std::size_t>(m.instances));
  const auto c = core::family_curves(family);
  REQUIRE(c.classes.size() == m.per_class.size());
  for (std::size_t k = 0; k < c.classes.size(); ++k) {
    CHECK(c.classes[k] == m.per_class[k].cls);
    CHECK(c.ap50[k] == doctest::Approx(m.per_class[k].ap50).epsilon(1e-9));
  }
  CHECK(c.map50() == doctest::Approx(m.map50).epsilon(1e-9));

  // Written beside the box curves; a family whose name is no plain word draws nothing.
  const std::string dir = test::temp_dir("val-plots-families");
  core::ValPlots plots({"cat", "dog", "bird"});
  plots.reset(3);
  MatchedDetections hostile = family;
  hostile.family = "../Evil";
  plots.set_matched({masks.matched("Box"), family, hostile});
  const auto written = plots.write(dir);
  for (const char* f : {"MaskPR_curve.png", "MaskF1_curve.png", "MaskP_curve.png", "MaskR_curve.png"}) {
    CAPTURE(f);
    CHECK(std::find(written.begin(), written.end(), f) != written.end());
    CHECK(!cv::imread(dir + "/" + f).empty());
  }
  CHECK(std::none_of(written.begin(), written.end(), [](const std::string& f) { return f.find("Evil") != std::string::npos; }));
  CHECK(!std::filesystem::exists(std::filesystem::path(dir).parent_path() / "EvilPR_curve.png"));
}
