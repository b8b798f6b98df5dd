// collate's windowed mask rasterisation gives the bytes of the direct rule (each outline filled at
// the image's size, then resized, as Ultralytics makes its targets): for every outline of
// coco128-seg's images (real data) at mask ratios 1, 2, 3, 4 and 8, and for outlines crossing the
// image's edges, lying outside it, tiny or degenerate; both layouts assembled from them.
#include <doctest/doctest.h>

#include <numeric>
#include <random>

#include "batcher/collate/mask_raster.h"
#include "support/plugin_set.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {

// The windowed mask spread over its whole plane.
cv::Mat whole(const plugins::WindowedMask& m, int height, int width, int ratio) {
  cv::Mat plane = cv::Mat::zeros(height / ratio, width / ratio, CV_8UC1);
  if (!m.mask.empty()) m.mask.copyTo(plane(m.window));
  return plane;
}

bool same(const cv::Mat& a, const cv::Mat& b) { return a.size() == b.size() && cv::countNonZero(a != b) == 0; }

}  // namespace

TEST_CASE("mask raster: the window around each outline gives the direct rule's bytes, on coco128-seg and at the edges") {
  plugin_test::PluginSet pm;
  auto source = plugin_test::make_component<DataSource>(
      pm, Kind::Source, "yolo_dataset",
      {{"data", std::string(YOLOFLOW_SHARED_DIR) + "/datasets/coco128-seg/data.yaml"}, {"split", "train"}});
  std::size_t compared = 0;
  for (std::size_t i = 0; i < source->size(); i += 3) {
    const Sample s = source->load(i);
    // A canvas a multiple of every ratio, larger than the image (outlines keep their pixels).
    const int height = (s.image.rows + 23) / 24 * 24, width = (s.image.cols + 23) / 24 * 24;
    for (const auto& polygon : s.polygons) {
      for (int ratio : {1, 2, 3, 4, 8}) {
        CAPTURE(i);
        CAPTURE(ratio);
        const auto m = plugins::instance_mask(polygon, height, width, ratio);
        REQUIRE(same(whole(m, height, width, ratio), plugins::instance_mask_reference(polygon, height, width, ratio)));
        ++compared;
      }
    }
  }
  CHECK(compared > 1500);

  // Edges: across each side and corner, wholly outside, a sliver, one pixel, a line.
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-40.0f, 200.0f);
  std::vector<Polygon> edge_cases = {{{-10, -10}, {30, -5}, {20, 25}},
                                     {{150, 100}, {170, 130}, {140, 125}},
                                     {{-30, 50}, {-5, 60}, {-20, 80}},
                                     {{10, 10}, {10.5f, 10}, {10.2f, 10.9f}},
                                     {{0, 0}, {159, 0}, {159, 119}, {0, 119}},
                                     {{5, 5}, {50, 50}, {95, 95}}};
  for (int k = 0; k < 200; ++k) edge_cases.push_back({{u(gen), u(gen)}, {u(gen), u(gen)}, {u(gen), u(gen)}, {u(gen), u(gen)}});
  for (const auto& polygon : edge_cases) {
    for (int ratio : {1, 2, 4, 8}) {
      CAPTURE(ratio);
      REQUIRE(same(whole(plugins::instance_mask(polygon, 120, 160, ratio), 120, 160, ratio),
                   plugins::instance_mask_reference(polygon, 120, 160, ratio)));
    }
  }

  // The two layouts, from the windows, as the direct rule assembles them.
  const Sample s = source->load(0);
  const int height = (s.image.rows + 7) / 8 * 8, width = (s.image.cols + 7) / 8 * 8;
  std::vector<float> overlap, separate;
  plugins::append_overlap_mask(s.polygons, s.boxes.size(), height, width, 4, overlap);
  plugins::append_instance_masks(s.polygons, s.boxes.size(), height, width, 4, separate);
  const int h = height / 4, w = width / 4;
  REQUIRE(separate.size() == s.boxes.size() * static_cast<std::size_t>(h * w));
  std::vector<double> areas;
  for (std::size_t k = 0; k < s.polygons.size(); ++k) {
    const cv::Mat ref = plugins::instance_mask_reference(s.polygons[k], height, width, 4);
    cv::Mat plane(h, w, CV_32FC1, separate.data() + k * static_cast<std::size_t>(h * w));
    cv::Mat as_bytes;
    plane.convertTo(as_bytes, CV_8U);
    CHECK(same(as_bytes, ref));
    areas.push_back(cv::sum(ref)[0]);
  }
  std::vector<std::size_t> order(areas.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return areas[a] > areas[b]; });
  cv::Mat want = cv::Mat::zeros(h, w, CV_32FC1);
  for (std::size_t k : order) want.setTo(static_cast<float>(k + 1), plugins::instance_mask_reference(s.polygons[k], height, width, 4));
  CHECK(cv::countNonZero(cv::Mat(h, w, CV_32FC1, overlap.data()) != want) == 0);
}
