// mosaic, loaded as a real plugin: four tiles on a 2*imgsz canvas with every box on its
// copied pixels over many seeds, p honoured, same seed -> same output.
#include "augmentation/tests/painted_samples.h"

using namespace yoloflow;

namespace {
// Four samples with long side 160, rectangles at least 6 px from every edge.
std::vector<Sample> tiles() {
  return {test::painted_sample(160, 120, {{10, 10, 60, 40}, {100, 60, 50, 50}}, 0, 0),
          test::painted_sample(100, 160, {{20, 30, 60, 100}}, 2, 1),
          test::painted_sample(160, 160, {{6, 6, 40, 40}, {90, 100, 60, 50}}, 3, 2),
          test::painted_sample(160, 90, {{50, 20, 100, 60}, {8, 8, 30, 70}}, 5, 3)};
}
}  // namespace

TEST_CASE("mosaic places four tiles around a random centre, boxes on their pixels") {
  plugin_test::PluginSet pm;
  auto mosaic = plugin_test::make_augmentation(pm, "mosaic", {{"p", 1.0}}, 160);
  test::FixedLoader loader(tiles());
  const Sample base = loader.load(0);
  std::set<std::pair<int, int>> corners;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*mosaic, base, seed, 160, loader);
    REQUIRE(out.image.size() == cv::Size(320, 320));
    REQUIRE_FALSE(out.boxes.empty());
    test::check_boxes_on_paint(out, 0.99, 0.01);
    for (const auto& b : out.boxes) {
      CHECK(b.x1 >= 0);
      CHECK(b.y2 <= 320);
    }
    // The centre (xc, yc) is drawn in [80, 240): the tiles, and so the boxes, move.
    const auto& first = out.boxes[0];
    corners.insert({static_cast<int>(first.x1), static_cast<int>(first.y1)});
    CHECK(test::same_output(out, test::augmented(*mosaic, base, seed, 160, loader)));
  }
  CHECK(corners.size() > 50);  // the centre moves

  auto never = plugin_test::make_augmentation(pm, "mosaic", {{"p", 0.0}}, 160);
  CHECK(test::same_output(test::augmented(*never, base, 1, 160, loader), base));
}

TEST_CASE("mosaic keeps every box of the tiles that lands on the canvas") {
  plugin_test::PluginSet pm;
  auto mosaic = plugin_test::make_augmentation(pm, "mosaic", json::object(), 160);
  // Four identical tiles of 160x160: each quadrant holds one whole tile or a cut one, the
  // canvas holds all four boxes' visible parts; every painted pixel belongs to a box.
  std::vector<Sample> same(4, test::painted_sample(160, 160, {{40, 40, 80, 80}}, 6));
  test::FixedLoader loader(same);
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    CAPTURE(seed);
    const Sample out = test::augmented(*mosaic, loader.load(0), seed, 160, loader);
    cv::Mat painted;
    cv::inRange(out.image, cv::Scalar(200, 200, 200), cv::Scalar(255, 255, 255), painted);
    cv::Mat covered(painted.size(), CV_8U, cv::Scalar(0));
    for (const auto& b : out.boxes) {
      covered(cv::Rect(cv::Point(static_cast<int>(b.x1), static_cast<int>(b.y1)),
                       cv::Point(static_cast<int>(b.x2), static_cast<int>(b.y2))))
          .setTo(255);
    }
    cv::Mat outside = painted & ~covered;
    CHECK(cv::countNonZero(outside) == 0);
    CHECK(static_cast<int>(out.boxes.size()) <= 4);
  }
}

namespace {
// Counts which samples an augmentation loaded.
class RecordingLoader final : public SampleLoader {
 public:
  explicit RecordingLoader(std::vector<Sample> samples) : inner_(std::move(samples)) {}
  std::size_t size() const override { return inner_.size(); }
  Sample load(std::size_t i) override {
    loaded.insert(i);
    return inner_.load(i);
  }
  std::set<std::size_t> loaded;

 private:
  test::FixedLoader inner_;
};
}  // namespace

TEST_CASE("mosaic draws its other images among the recent samples, or among all with others=any") {
  plugin_test::PluginSet pm;
  std::vector<Sample> samples;
  for (int i = 0; i < 12; ++i) samples.push_back(test::painted_sample(160, 120, {{10, 10, 60, 40}}, i % 7, i % 5));
  const std::size_t recent[] = {7, 2, 9};  // this sample (7) and the two loaded before it
  for (const char* name : {"mosaic", "mosaic_perspective"}) {
    CAPTURE(name);
    RecordingLoader loader(samples);
    auto from_recent = plugin_test::make_augmentation(pm, name, json::object(), 160);  // the default: recent
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      test::augmented(*from_recent, samples[7], seed, 160, loader, RecentSamples{recent, 3});
    }
    CHECK(loader.loaded == std::set<std::size_t>{7, 2, 9});
    // No recent samples (a sample made on its own): the whole source.
    loader.loaded.clear();
    for (std::uint64_t seed = 0; seed < 40; ++seed) test::augmented(*from_recent, samples[7], seed, 160, loader);
    CHECK(loader.loaded.size() > 8);

    RecordingLoader any_loader(samples);
    auto any = plugin_test::make_augmentation(pm, name, {{"others", "any"}}, 160);
    for (std::uint64_t seed = 0; seed < 40; ++seed) {
      test::augmented(*any, samples[7], seed, 160, any_loader, RecentSamples{recent, 3});
    }
    CHECK(any_loader.loaded.size() > 8);
  }
}
