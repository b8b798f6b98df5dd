// yolo_dataset's polygon labels, loaded as a real plugin library: coco128-seg's outlines
// against its label files, coco128's samples without any, and a written dataset mixing box
// lines, polygon lines and bad ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/run_cli.h"
#include "yoloflow/annotations.h"
#include "yoloflow/source.h"
#include "yoloflow/testing.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<DataSource> make_source(plugin_test::PluginSet& pm, const json& params, int imgsz = 640) {
  return plugin_test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", params, {imgsz, "source"});
}

std::string coco128_seg_dir() { return test::shared_dir() + "/datasets/coco128-seg"; }

// The outlines of a label file as written: one per non-blank line, empty for a box line.
std::vector<std::vector<cv::Point2d>> label_polygons(const std::string& path) {
  std::vector<std::vector<cv::Point2d>> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    std::vector<double> v;
    for (double x; in >> x;) v.push_back(x);
    if (v.empty()) continue;
    std::vector<cv::Point2d> poly;
    if (v.size() > 5) {
      for (std::size_t i = 1; i + 1 < v.size(); i += 2) poly.emplace_back(v[i], v[i + 1]);
    }
    out.push_back(poly);
  }
  return out;
}

struct Extent {
  double x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
};
template <class P>
Extent extent_of(const std::vector<P>& points, double sx = 1, double sy = 1) {
  Extent e;
  for (const auto& p : points) {
    e.x1 = std::min(e.x1, p.x * sx), e.x2 = std::max(e.x2, p.x * sx);
    e.y1 = std::min(e.y1, p.y * sy), e.y2 = std::max(e.y2, p.y * sy);
  }
  return e;
}

// Float rounding of normalised coordinates times the image's size: far below a pixel.
constexpr double kPixelSlack = 1e-3;

void check_extent_is_box(const Extent& e, const Box& b) {
  CHECK(std::abs(e.x1 - b.x1) <= kPixelSlack);
  CHECK(std::abs(e.y1 - b.y1) <= kPixelSlack);
  CHECK(std::abs(e.x2 - b.x2) <= kPixelSlack);
  CHECK(std::abs(e.y2 - b.y2) <= kPixelSlack);
}

// True when every point of `vertices` appears in `outline`, in the same order.
bool keeps_vertices(const Polygon& outline, const std::vector<cv::Point2d>& vertices) {
  std::size_t at = 0;
  for (const auto& v : vertices) {
    while (at < outline.size() &&
           !(std::abs(outline[at].x - v.x) <= kPixelSlack && std::abs(outline[at].y - v.y) <= kPixelSlack)) {
      ++at;
    }
    if (at == outline.size()) return false;
  }
  return true;
}

bool has_issue(const std::vector<DataIssue>& issues, const std::string& problem_start, const std::string& action) {
  return std::any_of(issues.begin(), issues.end(), [&](const DataIssue& i) {
    return i.problem.compare(0, problem_start.size(), problem_start) == 0 && i.action == action;
  });
}

}  // namespace

TEST_CASE("yolo_dataset gives coco128-seg's polygons: one per box, its extent, every vertex, 1000 points") {
  const std::string root = coco128_seg_dir();
  if (!fs::exists(root + "/data.yaml")) {
    MESSAGE(root << " not found: coco128-seg checks skipped");
    return;
  }
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", root + "/data.yaml"}}, 640);
  REQUIRE(src->size() == 128);
  // coco128's quirks (2 images without label file, 2 label files without image), nothing about
  // a label line: no line is dropped or clipped, so lines and instances align.
  for (const auto& issue : src->issues()) {
    CAPTURE(issue.problem);
    CHECK((issue.action == "kept as background image" || issue.action == "ignored"));
  }
  const ComponentInfo& info = pm.component(Kind::Source, "yolo_dataset");
  CHECK(info.contract.declared);
  CHECK(info.contract.gives == (Field::Boxes | Field::Polygons));

  std::size_t instances = 0, lines = 0;
  for (std::size_t i = 0; i < src->size(); ++i) {
    const Sample s = src->load(i);
    CAPTURE(s.path);
    const std::string label = root + "/labels/train2017/" + fs::path(s.path).stem().string() + ".txt";
    const auto written = label_polygons(label);
    lines += written.size();
    instances += s.boxes.size();
    REQUIRE(s.boxes.size() == written.size());
    if (s.boxes.empty()) {
      CHECK(s.polygons.empty());
      continue;
    }
    REQUIRE(s.polygons.size() == s.boxes.size());
    CHECK(instance_problem(s).empty());
    const double W = s.image.cols, H = s.image.rows;
    for (std::size_t k = 0; k < s.boxes.size(); ++k) {
      CAPTURE(k);
      REQUIRE(written[k].size() >= 3);
      // The longest outline of coco128-seg has 179 vertices: every one resampled to 1000.
      CHECK(s.polygons[k].size() == 1000);
      // The vertices as written span the box; resampling keeps them, so the outline does too.
      check_extent_is_box(extent_of(written[k], W, H), s.boxes[k]);
      check_extent_is_box(extent_of(s.polygons[k]), s.boxes[k]);
      std::vector<cv::Point2d> pixels;
      for (const auto& p : written[k]) pixels.emplace_back(static_cast<float>(p.x) * static_cast<float>(W),
                                                           static_cast<float>(p.y) * static_cast<float>(H));
      CHECK(keeps_vertices(s.polygons[k], pixels));
    }
  }
  CHECK(lines == 929);
  CHECK(instances == 929);
  CHECK(src->info().boxes == 929);
}

TEST_CASE("yolo_dataset: coco128-seg's polygons are the same from the RAM cache, and the source meets its contract") {
  const std::string root = coco128_seg_dir();
  if (!fs::exists(root + "/data.yaml")) {
    MESSAGE(root << " not found: coco128-seg checks skipped");
    return;
  }
  plugin_test::PluginSet pm;
  auto plain = make_source(pm, {{"data", root + "/data.yaml"}}, 320);
  auto cached = make_source(pm, {{"data", root + "/data.yaml"}, {"cache", "ram"}}, 320);
  for (std::size_t i : {0u, 7u, 63u}) {
    for (int pass = 0; pass < 2; ++pass) {  // the first load fills the cache, the second reads it
      const Sample a = plain->load(i), b = cached->load(i);
      REQUIRE(a.polygons.size() == b.polygons.size());
      for (std::size_t k = 0; k < a.polygons.size(); ++k) CHECK(a.polygons[k] == b.polygons[k]);
    }
  }
  const auto problems = yoloflow::testing::source_contract(*plain, 320);
  std::string listed;
  for (const auto& p : problems) listed += p + "\n";
  CHECK_MESSAGE(problems.empty(), listed);
}

TEST_CASE("yolo_dataset: coco128's box labels give samples without polygons, allocating none") {
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", test::coco128_dir() + "/data.yaml"}}, 320);
  std::size_t boxes = 0;
  for (std::size_t i = 0; i < src->size(); ++i) {
    const Sample s = src->load(i);
    boxes += s.boxes.size();
    CHECK(s.polygons.empty());
    CHECK(s.polygons.capacity() == 0);
  }
  CHECK(boxes == 929);
}

TEST_CASE("yolo_dataset: a label file mixing polygons and boxes keeps each as written; bad polygon lines are reported") {
  const std::string dir = test::temp_dir("yolo-polygons");
  fs::create_directories(dir + "/images");
  fs::create_directories(dir + "/labels");
  test::write_file(dir + "/data.yaml", "train: images\nnames: [a, b, c]\n");
  const cv::Mat plain(100, 200, CV_8UC3, cv::Scalar(30, 60, 90));
  REQUIRE(cv::imwrite(dir + "/images/mixed.png", plain));
  test::write_file(dir + "/labels/mixed.txt",
                   "1 0.5 0.5 0.2 0.4\n"                        // 1 box: no outline
                   "0 0.1 0.1 0.3 0.1 0.2 0.4\n"                // 2 triangle
                   "2 0.6 0.2 0.9 0.2 0.9 0.8 0.6 0.8\n"        // 3 rectangle
                   "0 0.1 0.1 0.3 0.1 0.2\n"                    // 4 six values: neither a box nor a polygon
                   "0 0.1 0.1 0.3 0.1 0.2 0.4 0.5\n"            // 5 odd number of coordinates (7)
                   "0 0.5 0.5\n"                                // 6 one point
                   "2 0.8 0.5 1.2 0.5 1.0 0.9\n"                // 7 partly outside: clipped
                   "1 1.2 0.5 1.4 0.5 1.3 0.9\n"                // 8 outside: dropped
                   "2 0.9 0.8 0.6 0.8 0.6 0.2 0.9 0.2\n"        // 9 line 3's extent and class: a duplicate
                   "0 0.2 0.6 0.4 0.6\n");                      // 10 box line after polygons: no outline
  // 1200 vertices on a circle: every outline of the image gets 1201 points (Ultralytics' rule).
  REQUIRE(cv::imwrite(dir + "/images/long.png", plain));
  std::ostringstream ring;
  ring << "0";
  for (int k = 0; k < 1200; ++k) {
    const double t = 2 * CV_PI * k / 1200;
    ring << " " << 0.5 + 0.4 * std::cos(t) << " " << 0.5 + 0.4 * std::sin(t);
  }
  test::write_file(dir + "/labels/long.txt", ring.str() + "\n1 0.1 0.1 0.2 0.1 0.15 0.2\n");
  // Only box lines: no outlines at all.
  REQUIRE(cv::imwrite(dir + "/images/boxes.png", plain));
  test::write_file(dir + "/labels/boxes.txt", "0 0.5 0.5 0.2 0.2\n");

  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", dir + "/data.yaml"}}, 200);
  REQUIRE(src->size() == 3);  // sorted: boxes, long, mixed
  const auto issues = src->issues();
  std::string listed;
  for (const auto& i : issues) listed += i.path + ": " + i.problem + " -> " + i.action + "\n";
  INFO(listed);
  CHECK(has_issue(issues,
                  "bad label line 4: expected 5 values (class cx cy w h) or a polygon of 3 points or more "
                  "(class x1 y1 x2 y2 x3 y3 ...), found 6 values",
                  "dropped line"));
  CHECK(has_issue(issues, "bad label line 5: polygon with an odd number of coordinates (7)", "dropped line"));
  CHECK(has_issue(issues, "bad label line 6: expected 5 values (class cx cy w h) or a polygon of 3 points or more",
                  "dropped line"));
  CHECK(has_issue(issues, "box partly outside image on line 7", "clipped box and polygon"));
  CHECK(has_issue(issues, "box outside image on line 8", "dropped box and polygon"));
  CHECK(has_issue(issues, "duplicate box on line 9 (same as line 3)", "removed duplicate"));
  // Box lines among outlines (1 and 10) are named: their instances have no outline.
  CHECK(has_issue(issues, "box line in a polygon file on line 1: class cx cy w h among outlines; its instance has no "
                          "outline (an empty mask)",
                  "kept box without outline"));
  CHECK(has_issue(issues, "box line in a polygon file on line 10", "kept box without outline"));
  CHECK(issues.size() == 8);

  const Sample boxes = src->load(0);
  CHECK(boxes.boxes.size() == 1);
  CHECK(boxes.polygons.empty());

  const Sample mixed = src->load(2);
  REQUIRE(mixed.image.size() == cv::Size(200, 100));
  // Lines 1, 2, 3, 7 and 10, in file order.
  REQUIRE(mixed.boxes.size() == 5);
  REQUIRE(mixed.polygons.size() == 5);
  CHECK(mixed.boxes[0].cls == 1);
  CHECK(mixed.polygons[0].empty());  // a box line: its box, no outline
  CHECK(mixed.boxes[0].x1 == doctest::Approx(80.0));
  CHECK(mixed.boxes[0].y2 == doctest::Approx(70.0));
  CHECK(mixed.polygons[4].empty());
  CHECK(mixed.boxes[4].cls == 0);
  CHECK(mixed.boxes[4].x1 == doctest::Approx(0.0));  // 0 0.2 0.6 0.4 0.6 as a box: cx 0.2, w 0.4
  CHECK(mixed.boxes[4].x2 == doctest::Approx(80.0));
  for (std::size_t k : {1u, 2u, 3u}) {
    CAPTURE(k);
    CHECK(mixed.polygons[k].size() == 1000);
    check_extent_is_box(extent_of(mixed.polygons[k]), mixed.boxes[k]);
  }
  CHECK(keeps_vertices(mixed.polygons[1], {{20, 10}, {60, 10}, {40, 40}}));
  CHECK(keeps_vertices(mixed.polygons[2], {{120, 20}, {180, 20}, {180, 80}, {120, 80}}));
  // Line 7 clipped to the image, box and outline alike: x 0.8..1.0 (1.2 clipped), y 0.5..0.9.
  CHECK(mixed.boxes[3].x1 == doctest::Approx(160.0));
  CHECK(mixed.boxes[3].x2 == doctest::Approx(200.0));
  CHECK(mixed.boxes[3].y2 == doctest::Approx(90.0));
  CHECK(keeps_vertices(mixed.polygons[3], {{160, 50}, {200, 50}, {200, 90}}));

  const Sample longest = src->load(1);
  REQUIRE(longest.polygons.size() == 2);
  CHECK(longest.polygons[0].size() == 1201);
  CHECK(longest.polygons[1].size() == 1201);
  check_extent_is_box(extent_of(longest.polygons[0]), longest.boxes[0]);
  check_extent_is_box(extent_of(longest.polygons[1]), longest.boxes[1]);
  CHECK(keeps_vertices(longest.polygons[1], {{20, 10}, {40, 10}, {30, 20}}));

  // classes: the boxes of other classes dropped with their outlines, the rest still paired.
  auto only_c = make_source(pm, {{"data", dir + "/data.yaml"}, {"classes", {2}}}, 200);
  const Sample c = only_c->load(2);
  REQUIRE(c.boxes.size() == 2);  // lines 3 and 7
  REQUIRE(c.polygons.size() == 2);
  CHECK(keeps_vertices(c.polygons[0], {{120, 20}, {180, 20}, {180, 80}, {120, 80}}));
  CHECK(keeps_vertices(c.polygons[1], {{160, 50}, {200, 50}, {200, 90}}));
  // An image left with box lines only carries no outline at all.
  auto only_b = make_source(pm, {{"data", dir + "/data.yaml"}, {"classes", {1}}}, 200);
  const Sample b = only_b->load(2);
  REQUIRE(b.boxes.size() == 1);  // line 1
  CHECK(b.polygons.empty());
  const Sample long_b = only_b->load(1);
  REQUIRE(long_b.boxes.size() == 1);
  REQUIRE(long_b.polygons.size() == 1);
  CHECK(long_b.polygons[0].size() == 1000);  // the long outline (class 0) is gone: 1000 again
  CHECK(keeps_vertices(long_b.polygons[0], {{20, 10}, {40, 10}, {30, 20}}));
  test::remove_tree(dir);
}
