// Validation against Ultralytics 8.4.56's own validator on the same weights and images
// (shared/fixtures/coco128-val-parity): YOLO11n weights validated on coco128's 128 train
// images at 640, in rectangular batches and with square letterboxing. The metrics must agree
// within ±0.002 mAP50 / mAP50-95 and ±0.01 P / R, and the kept boxes per image must be the
// ones Ultralytics kept. On CPU, so CI runs it.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "support/kept_boxes.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/eval/weights_validation.h"

using namespace yoloflow;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/coco128-val-parity/" + name; }

// coco128's data.yaml with its train images as the val split, as Ultralytics' coco128.yaml has it.
std::string train_as_val_yaml() {
  const std::string dir = test::temp_dir("val-parity");
  std::string yaml = test::read_file(test::coco128_dir() + "/data.yaml");
  yaml.replace(yaml.find("path: ."), 7, "path: " + test::coco128_dir());
  yaml.replace(yaml.find("val: images/val2017"), 19, "val: images/train2017");
  test::write_file(dir + "/data.yaml", yaml);
  return dir + "/data.yaml";
}

core::PluginManager& parity_plugins() {
  static core::PluginManager pm;
  static const bool loaded = [] {
    for (const char* lib : {"yolo11", "yolo_dataset", "letterbox", "collate", "detection_evaluator"}) test::load_plugin(pm, lib);
    return true;
  }();
  (void)loaded;
  return pm;
}

core::WeightsValidationReport validate_fixture(bool rect) {
  core::WeightsValidationRequest r;
  r.weights = fixture("coco128-yolo11n.pt");
  r.model = "yolo11n";
  r.data = train_as_val_yaml();
  r.device = "cpu";
  r.imgsz = 640;
  r.batch = 32;
  r.rect = rect;
  r.keep_predictions = rect;
  return core::validate_weights(parity_plugins().registry(), r);
}

// The detection evaluator's columns, as results.csv and metrics.json have them.
struct BoxMetrics {
  double precision, recall, map50, map50_95;
  std::size_t classes;
};

void check_metrics(const Evaluation& e, const json& want) {
  const BoxMetrics got{e.columns.at("metrics/precision(B)"), e.columns.at("metrics/recall(B)"),
                       e.columns.at("metrics/mAP50(B)"), e.columns.at("metrics/mAP50-95(B)"), e.per_class.size()};
  INFO("yoloflow P " << got.precision << " R " << got.recall << " mAP50 " << got.map50 << " mAP50-95 " << got.map50_95);
  INFO("Ultralytics P " << want.at("precision") << " R " << want.at("recall") << " mAP50 " << want.at("mAP50")
                        << " mAP50-95 " << want.at("mAP50-95"));
  CHECK(std::abs(got.map50 - want.at("mAP50").get<double>()) <= 0.002);
  CHECK(std::abs(got.map50_95 - want.at("mAP50-95").get<double>()) <= 0.002);
  CHECK(std::abs(got.precision - want.at("precision").get<double>()) <= 0.01);
  CHECK(std::abs(got.recall - want.at("recall").get<double>()) <= 0.01);
  // The same classes scored (those with labels in these images).
  CHECK(got.classes == want.at("per_class_ap50_95").size());
  CHECK(e.fitness == got.map50_95);  // Ultralytics 8.4: fitness is mAP50-95
}

}  // namespace

TEST_CASE("val parity: rectangular batches give Ultralytics' metrics and keep Ultralytics' boxes") {
  const json want = json::parse(test::read_file(fixture("metrics.json")));
  const auto report = validate_fixture(true);
  CHECK(report.evaluation.images == 128);
  check_metrics(report.evaluation, want.at("rect"));

  // Ultralytics' NMS output per image (original pixels): the same number of boxes (±1%), and
  // its boxes found among ours (support/kept_boxes.h).
  const json ref = json::parse(test::read_file(fixture("predictions.json"))).at("images");
  REQUIRE(report.predictions.size() == 128);
  std::size_t ours_total = 0, ref_total = 0;
  for (const auto& img : report.predictions) {
    ours_total += img.boxes.size();
    ref_total += ref.at(fs::path(img.path).filename().string()).size();
  }
  const auto c = test::compare_kept_boxes(report.predictions, ref, 32);
  const std::size_t images_compared = c.images_compared, matched = c.matched, compared = c.compared,
                    degenerate = c.degenerate;
  MESSAGE("boxes kept: yoloflow " << ours_total << ", Ultralytics " << ref_total << "; compared on " << images_compared
                                  << " images: " << matched << " of " << compared << " matched at IoU >= 0.99 ("
                                  << degenerate << " zero-area boxes skipped)");
  CHECK(std::abs(static_cast<double>(ours_total) - static_cast<double>(ref_total)) <= 0.01 * ref_total);
  CHECK(images_compared >= 64);
  CHECK(static_cast<double>(matched) >= 0.99 * static_cast<double>(compared));
}

TEST_CASE("val parity: square letterboxing gives Ultralytics' square metrics") {
  const json want = json::parse(test::read_file(fixture("metrics.json")));
  const auto report = validate_fixture(false);
  CHECK(report.evaluation.images == 128);
  check_metrics(report.evaluation, want.at("square"));
}
