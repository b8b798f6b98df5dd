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

double iou(const std::array<float, 6>& a, const std::vector<double>& b) {
  const double iw = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
  const double ih = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
  const double inter = iw * ih;
  const double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

}  // namespace

TEST_CASE("val parity: rectangular batches give Ultralytics' metrics and keep Ultralytics' boxes") {
  const json want = json::parse(test::read_file(fixture("metrics.json")));
  const auto report = validate_fixture(true);
  CHECK(report.evaluation.images == 128);
  check_metrics(report.evaluation, want.at("rect"));

  // Ultralytics' NMS output per image (original pixels): the same number of boxes (±1%), and
  // its boxes found among ours (same class, IoU >= 0.99), compared in the network's input
  // pixels: Ultralytics maps both axes back with the height's scale, where the source's
  // rounded-up resize made the width's scale differ slightly (500x333 -> 640x427).
  const json ref = json::parse(test::read_file(fixture("predictions.json"))).at("images");
  REQUIRE(report.predictions.size() == 128);
  // Images whose aspect ratio also occurs in another batch: which of the equal ones open the
  // next batch is the sort's choice among equal keys (numpy's is unspecified), and the batch
  // decides their padding, so their boxes are compared only in number.
  const auto& preds = report.predictions;
  auto ar = [](const core::OriginalImageDetections& d) { return static_cast<double>(d.height) / d.width; };
  std::size_t ours_total = 0, ref_total = 0, compared = 0, matched = 0, degenerate = 0, images_compared = 0;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const auto& img = preds[i];
    const std::string name = fs::path(img.path).filename().string();
    CAPTURE(name);
    REQUIRE(ref.contains(name));
    const auto theirs = ref.at(name).get<std::vector<std::vector<double>>>();
    ours_total += img.boxes.size();
    ref_total += theirs.size();
    bool ambiguous = false;
    for (std::size_t j = 0; j < preds.size(); ++j) ambiguous |= j / 32 != i / 32 && ar(preds[j]) == ar(img);
    if (ambiguous) continue;
    ++images_compared;
    const double r = 640.0 / std::max(img.width, img.height);
    const double rw = r == 1.0 ? 1.0 : std::min(std::ceil(img.width * r), 640.0) / img.width;
    const double rh = r == 1.0 ? 1.0 : std::min(std::ceil(img.height * r), 640.0) / img.height;
    std::vector<char> used(img.boxes.size(), 0);
    for (auto t : theirs) {
      t[0] *= rh / rw;
      t[2] *= rh / rw;
      if (t[2] <= t[0] || t[3] <= t[1]) {  // clipped to nothing outside the image: no IoU to compare
        ++degenerate;
        continue;
      }
      ++compared;
      double best = 0;
      std::size_t best_k = img.boxes.size();
      for (std::size_t k = 0; k < img.boxes.size(); ++k) {
        if (used[k] || static_cast<int>(img.boxes[k][5]) != static_cast<int>(t[5])) continue;
        const double v = iou(img.boxes[k], t);
        if (v > best) {
          best = v;
          best_k = k;
        }
      }
      if (best >= 0.99) {
        used[best_k] = 1;
        ++matched;
      }
    }
  }
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
