// Boxes from polygons, as Ultralytics 8.4.56 trains on them: coco128-seg images loaded by the
// yolo_dataset source (polygons resampled), placed on the mosaic canvas (place_instances, what
// mosaic and mosaic_perspective do) and moved by Ultralytics' own RandomPerspective matrices
// with rotation, shear and perspective (move_instances, what random_perspective and
// mosaic_perspective do), compared with the boxes Ultralytics' own augmentation gave for the
// same images, centres and matrices (tests/fixtures/ultralytics-8.4.56-polygon-boxes.json, made
// by tests/fixtures/make-ultralytics-polygon-boxes.py). Ultralytics computes in float32, we in
// float64: coordinates agree to a hundredth of a pixel.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "geometry/mosaic_layout.h"
#include "support/paths.h"
#include "support/plugin_set.h"
#include "yoloflow/annotations.h"
#include "yoloflow/source.h"

using namespace yoloflow;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr double kTolerance = 0.01;  // px: float32 there, float64 here

json fixture() {
  std::ifstream in(std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-polygon-boxes.json");
  REQUIRE(in.good());
  return json::parse(in);
}

PixelMap case_map(const json& c) {
  PixelMap m;
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) m.M(r, k) = c["M"][r][k].get<double>();
  }
  m.projective = c["projective"].get<bool>();
  m.size = cv::Size(c["size"][0].get<int>(), c["size"][1].get<int>());
  m.scale = c["s"].get<double>();
  m.clip = cv::Rect2d(0, 0, m.size.width, m.size.height);
  return m;
}

// Compares [cls, x1, y1, x2, y2] rows with the sample's boxes, in order.
void check_boxes(const std::vector<Box>& got, const json& want, const std::string& what) {
  CAPTURE(what);
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    const json& w = want[i];
    CHECK(got[i].cls == w[0].get<int>());
    CHECK(std::abs(got[i].x1 - w[1].get<double>()) < kTolerance);
    CHECK(std::abs(got[i].y1 - w[2].get<double>()) < kTolerance);
    CHECK(std::abs(got[i].x2 - w[3].get<double>()) < kTolerance);
    CHECK(std::abs(got[i].y2 - w[4].get<double>()) < kTolerance);
  }
}

}  // namespace

TEST_CASE("polygon boxes: mosaic and perspective give the boxes Ultralytics 8.4.56 gives on coco128-seg") {
  const std::string root = test::shared_dir() + "/datasets/coco128-seg";
  if (!fs::exists(root + "/data.yaml")) {
    MESSAGE(root << " not found: the Ultralytics polygon-box comparison is skipped");
    return;
  }
  const json data = fixture();
  REQUIRE(data["meta"]["ultralytics_version"] == "8.4.56");
  const int imgsz = data["meta"]["imgsz"].get<int>();
  plugin_test::PluginSet& plugins = plugin_test::plugins_with("yolo_dataset");
  auto source = plugin_test::make_component<DataSource>(plugins, Kind::Source, "yolo_dataset",
                                                        {{"data", root + "/data.yaml"}}, {imgsz});
  // Sample index by image file name.
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < source->size(); ++i) index[fs::path(source->load(i).path).filename().string()] = i;

  int cases = 0, boxes = 0, differ = 0;
  for (const json& c : data["cases"]) {
    const std::string id = c["id"].get<std::string>();
    CAPTURE(id);
    std::vector<Sample> tiles;
    for (std::size_t t = 0; t < c["tiles"].size(); ++t) {
      const std::string name = c["tiles"][t].get<std::string>();
      REQUIRE(index.count(name) == 1);
      tiles.push_back(source->load(index[name]));
      // Resized as Ultralytics resizes (long side imgsz), every instance outlined.
      CHECK(tiles.back().image.rows == c["tile_shapes"][t][0].get<int>());
      CHECK(tiles.back().image.cols == c["tile_shapes"][t][1].get<int>());
      CHECK(tiles.back().polygons.size() == tiles.back().boxes.size());
    }
    Sample input;
    const std::string kind = c["kind"].get<std::string>();
    if (kind == "mosaic") {
      for (std::size_t t = 0; t < tiles.size(); ++t) {
        const auto p = plugins::place_tile(static_cast<int>(t), c["xc"].get<int>(), c["yc"].get<int>(),
                                           tiles[t].image.cols, tiles[t].image.rows, imgsz);
        plugins::place_instances(tiles[t], p, input);
      }
      input.image = cv::Mat(2 * imgsz, 2 * imgsz, CV_8UC3, cv::Scalar::all(114));
    } else if (kind == "letterbox") {
      input = tiles[0];
      const json& lb = c["letterbox"];
      const double k = lb["scale"].get<double>();
      const int top = lb["top"].get<int>(), left = lb["left"].get<int>();
      scale_instances(input, k, k, left, top, cv::Size(imgsz, imgsz));
      input.image = cv::Mat(imgsz, imgsz, CV_8UC3, cv::Scalar::all(114));
    } else {
      REQUIRE(kind == "no_mosaic");
      input = tiles[0];
    }
    REQUIRE(input.image.rows == c["input_shape"][0].get<int>());
    check_boxes(input.boxes, c["canvas_boxes"], "the instances RandomPerspective receives");

    const InstanceFilter filter;
    Sample with_polygons = input;
    move_instances(with_polygons, case_map(c), &filter);
    check_boxes(with_polygons.boxes, c["boxes"], "boxes from the moved polygons");
    CHECK(instance_problem(with_polygons).empty());

    // The same data without polygons (a detection dataset): the moved corners' boxes.
    Sample corners_only = input;
    corners_only.polygons.clear();
    move_instances(corners_only, case_map(c), &filter);
    check_boxes(corners_only.boxes, c["boxes_from_corners"], "boxes from the moved corners");

    ++cases;
    boxes += static_cast<int>(with_polygons.boxes.size());
    // The same instance kept both ways (by its index among the input's): do the boxes differ?
    const auto& a = with_polygons.boxes;
    const auto& b = corners_only.boxes;
    std::map<int, std::size_t> from_corners;
    for (std::size_t j = 0; j < c["kept_index_from_corners"].size(); ++j) {
      from_corners[c["kept_index_from_corners"][j].get<int>()] = j;
    }
    for (std::size_t i = 0; i < c["kept_index"].size() && i < a.size(); ++i) {
      const auto it = from_corners.find(c["kept_index"][i].get<int>());
      if (it == from_corners.end() || it->second >= b.size()) continue;
      const Box &p = a[i], &q = b[it->second];
      if (std::max({std::abs(p.x1 - q.x1), std::abs(p.y1 - q.y1), std::abs(p.x2 - q.x2), std::abs(p.y2 - q.y2)}) > 1) {
        ++differ;
      }
    }
  }
  CHECK(cases >= 13);
  CHECK(boxes >= 300);
  // Polygons matter: with rotation most boxes are tighter than their warped corners'.
  CHECK(differ > boxes / 3);
}
