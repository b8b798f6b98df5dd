// `yoloflow preview`, run as a user would: grids of augmented coco128 samples with boxes drawn.
#include <doctest/doctest.h>

#include <filesystem>

#include <opencv2/imgcodecs.hpp>

#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// The training recipe at imgsz 320 on coco128, with `extra` stages' JSON inserted.
std::string recipe_pipeline(const std::string& dir) {
  const std::string path = dir + "/recipe.json";
  test::write_file(path, R"({
  "name": "preview-recipe", "epochs": 1, "imgsz": 320, "seed": 3,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + test::coco128_dir() + R"(/data.yaml"}},
    "mosaic": {"plugin": "mosaic", "input": "source"},
    "perspective": {"plugin": "random_perspective", "input": "mosaic"},
    "hsv": {"plugin": "hsv", "input": "perspective"},
    "flip": {"plugin": "flip", "input": "hsv"},
    "batch": {"plugin": "collate", "input": "flip", "params": {"batch": 8}},
    "sink": {"plugin": "throughput", "input": "batch"}
  }
})");
  return path;
}

// Pixels exactly equal to a BGR colour.
int count_colour(const cv::Mat& im, cv::Vec3b c) {
  int n = 0;
  for (int y = 0; y < im.rows; ++y)
    for (int x = 0; x < im.cols; ++x) n += im.at<cv::Vec3b>(y, x) == c;
  return n;
}

}  // namespace

TEST_CASE("yoloflow preview writes grids of augmented samples with class-coloured boxes") {
  const std::string dir = test::temp_dir("preview");
  const std::string out = dir + "/out";
  const auto r = test::run_cli("preview " + recipe_pipeline(dir) + " --out " + out +
                               " --batches 2 --per-grid 4 --format png");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("wrote 2 preview grids") != std::string::npos);
  for (const char* name : {"preview_0.png", "preview_1.png"}) {
    const cv::Mat grid = cv::imread(out + "/" + name, cv::IMREAD_COLOR);
    REQUIRE_MESSAGE(!grid.empty(), name);
    // 4 mosaics of 320x320 in a 2x2 grid, under the 1920 px default limit: full size.
    CHECK(grid.cols == 640);
    CHECK(grid.rows == 640);
    // coco128 is mostly people (class 0): its box colour, drawn exactly in a PNG.
    CHECK(count_colour(grid, cv::Vec3b(56, 56, 255)) > 100);
  }
  CHECK_FALSE(fs::exists(out + "/preview_2.png"));

  // JPEG (the default) at a smaller limit: scaled down, still decodable.
  const auto j = test::run_cli("preview " + recipe_pipeline(dir) + " --out " + out +
                               " --batches 1 --per-grid 9 --max-side 600");
  INFO(j.output);
  REQUIRE(j.exit_code == 0);
  const cv::Mat jpg = cv::imread(out + "/preview_0.jpg", cv::IMREAD_COLOR);
  REQUIRE(!jpg.empty());
  CHECK(jpg.cols == 600);  // 3 tiles of 320 scaled to 200
  CHECK(jpg.rows == 600);
}

TEST_CASE("yoloflow preview of the inspect pipeline, and its errors") {
  const std::string dir = test::temp_dir("preview-inspect");
  const auto r = test::run_cli("preview " + std::string(YOLOFLOW_SOURCE_DIR) +
                               "/pipelines/inspect-coco128.json --out " + dir + " --batches 1 --per-grid 2" +
                               // coco128 where the tests find it (beside the checkout, or carried to the GPU machine)
                               " stages.source.params.data=" + test::coco128_dir() + "/data.yaml");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const cv::Mat grid = cv::imread(dir + "/preview_0.jpg", cv::IMREAD_COLOR);
  REQUIRE(!grid.empty());
  CHECK(grid.cols == 1280);  // two letterboxed 640x640 images side by side
  CHECK(grid.rows == 640);

  const auto bad = test::run_cli("preview " + dir + "/missing.json --out " + dir);
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("missing.json") != std::string::npos);
}
