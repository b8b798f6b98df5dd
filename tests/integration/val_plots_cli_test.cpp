// `yoloflow val` draws Ultralytics' plots into its folder (plots=True is the default there too):
// the confusion matrices, the box curves, the first batches with labels and detections; the
// matrix's counts in metrics.json agree with the validation's; --no-plots (plots=False) draws
// none. The train side is checked with Ultralytics' words (ultralytics_words_test.cpp).
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace yoloflow;

namespace {

const char* const kPlots[] = {"confusion_matrix.png", "confusion_matrix_normalized.png", "BoxPR_curve.png",
                              "BoxF1_curve.png",      "BoxP_curve.png",                  "BoxR_curve.png",
                              "val_batch0_labels.jpg", "val_batch0_pred.jpg",            "val_batch1_labels.jpg",
                              "val_batch1_pred.jpg"};

std::string state_dict() { return test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt"; }

}  // namespace

TEST_CASE("val plots: yoloflow val draws the matrices, curves and batches; --no-plots none") {
  const std::string dir = test::temp_dir("val-plots");
  const std::string data = test::write_coco128_subset(dir, 8);
  const std::string base = "val --weights " + state_dict() + " --model yolo11n --data " + data +
                           " --batch 4 --imgsz 320 --device cpu --out ";
  const auto r = test::run_cli(base + dir + "/on");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("plots (confusion_matrix.png") != std::string::npos);
  for (const char* f : kPlots) {
    CAPTURE(f);
    const cv::Mat image = cv::imread(dir + "/on/" + f);
    REQUIRE(!image.empty());
    CHECK(image.cols >= 300);
    CHECK(image.rows >= 150);
    cv::Scalar mean, dev;
    cv::meanStdDev(image, mean, dev);
    CHECK(dev[0] + dev[1] + dev[2] > 5.0);  // not a blank picture
  }
  CHECK(!fs::exists(dir + "/on/val_batch2_labels.jpg"));  // 8 images: two batches of 4

  // The matrix's counts: each true class's column sums to its labels, background's column holds
  // only false positives, and every label is counted once.
  const json m = json::parse(test::read_file(dir + "/on/metrics.json"));
  const json& cm = m.at("confusion_matrix");
  CHECK(cm.at("conf").get<double>() == doctest::Approx(0.25));
  CHECK(cm.at("iou").get<double>() == doctest::Approx(0.45));
  const json& matrix = cm.at("matrix");
  REQUIRE(matrix.size() == 81);
  auto column = [&](int c) {
    long s = 0;
    for (const auto& row : matrix) s += row.at(static_cast<std::size_t>(c)).get<long>();
    return s;
  };
  long labelled = 0;
  for (const auto& pc : m.at("per_class")) {
    CAPTURE(pc.dump());
    CHECK(column(pc.at("class").get<int>()) == pc.at("instances").get<long>());
    labelled += pc.at("instances").get<long>();
  }
  long all_true = 0;
  for (int c = 0; c < 80; ++c) all_true += column(c);
  CHECK(all_true == labelled);
  CHECK(labelled == m.at("instances").get<long>());
  CHECK(matrix[80][80].get<long>() == 0);  // background is never both predicted and true
  // The weights were trained on these images: most labels are found as their class.
  long diagonal = 0;
  for (int c = 0; c < 80; ++c) diagonal += matrix[static_cast<std::size_t>(c)][static_cast<std::size_t>(c)].get<long>();
  CHECK(diagonal * 2 > labelled);

  const auto off = test::run_cli(base + dir + "/off --no-plots");
  INFO(off.output);
  REQUIRE(off.exit_code == 0);
  for (const auto& e : fs::directory_iterator(dir + "/off")) {
    const std::string ext = e.path().extension().string();
    CHECK_MESSAGE(ext != ".png", e.path().string());
    CHECK_MESSAGE(ext != ".jpg", e.path().string());
  }
  CHECK(!json::parse(test::read_file(dir + "/off/metrics.json")).contains("confusion_matrix"));
}
