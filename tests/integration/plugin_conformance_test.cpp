// Every component of every shipped plugin library, loaded the way a third party's test loads
// its own (yoloflow/testing.h), created from its schema defaults and run through its kind's
// contract on real coco128 samples.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "support/paths.h"
#include "yoloflow/error.h"
#include "yoloflow/testing.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> plugin_libraries() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::plugin_dir())) {
    if (e.path().extension() == ".so") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string report(const std::vector<std::string>& problems) {
  std::string text;
  for (std::size_t i = 0; i < problems.size() && i < 10; ++i) text += "\n  " + problems[i];
  return text;
}

// `s` resized to size x size, its boxes with it (what a batcher receives after letterbox).
Sample square(const Sample& s, int size) {
  Sample out = s;
  cv::resize(s.image, out.image, cv::Size(size, size));
  const float fx = static_cast<float>(size) / s.image.cols, fy = static_cast<float>(size) / s.image.rows;
  for (auto& b : out.boxes) b = Box{b.x1 * fx, b.y1 * fy, b.x2 * fx, b.y2 * fy, b.cls};
  return out;
}

}  // namespace

TEST_CASE("conformance: every shipped component meets its kind's contract") {
  constexpr int kImgsz = 320;
  const json data = {{"data", test::coco128_dir() + "/data.yaml"}};
  StageContext context;
  context.imgsz = kImgsz;

  // Real samples, read by the shipped source through the same harness.
  std::vector<Sample> samples;
  {
    testing::PluginLibrary reader(test::plugin_dir() + "/yoloflow_yolo_dataset.so");
    auto source = reader.make<DataSource>("yolo_dataset", data, context);
    for (std::size_t i = 0; i < 6; ++i) samples.push_back(source->load(i * 9));
  }
  REQUIRE(samples.size() == 6);

  const auto libraries = plugin_libraries();
  REQUIRE(libraries.size() >= 10);
  int checked = 0;
  for (const auto& path : libraries) {
    testing::PluginLibrary library(path);
    CHECK_MESSAGE(!library.components().empty(), path << " registers nothing");
    for (const ComponentInfo& c : library.components()) {
      const std::string label = std::string(kind_name(c.kind)) + " '" + c.name + "' (" + fs::path(path).filename().string() + ")";
      CAPTURE(label);
      // A source reads the dataset; everything else is made from its defaults alone.
      const json params = c.schema.find("data") != nullptr ? data : json::object();
      std::unique_ptr<Component> component;
      try {
        component.reset(library.create(c.kind, c.name, params, context));
      } catch (const std::exception& e) {
        FAIL_CHECK(label << " cannot be made from its schema's defaults: " << e.what());
        continue;
      }
      std::vector<std::string> problems;
      if (c.kind == Kind::Augmentation) {
        problems = testing::augmentation_contract(static_cast<Augmentation&>(*component), samples, kImgsz, 4);
      } else if (c.kind == Kind::Source) {
        problems = testing::source_contract(static_cast<DataSource&>(*component), kImgsz);
      } else if (c.kind == Kind::Batcher) {
        std::vector<Sample> same_size;
        for (const auto& s : samples) same_size.push_back(square(s, kImgsz));
        problems = testing::batcher_contract(static_cast<Batcher&>(*component), same_size);
      }
      CHECK_MESSAGE(problems.empty(), label << ":" << report(problems));
      ++checked;
    }
  }
  MESSAGE(checked << " components of " << libraries.size() << " plugin libraries checked");
}

TEST_CASE("conformance: the harness finds what breaks the contract") {
  // The harness itself: a library that is no plugin, an unknown component, bad parameters.
  CHECK_THROWS_WITH_AS(testing::PluginLibrary(test::plugin_dir() + "/missing.so"),
                       doctest::Contains("cannot load plugin"), yoloflow::Error);
  testing::PluginLibrary flip(test::plugin_dir() + "/yoloflow_flip.so");
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flop"), doctest::Contains("has no augmentation 'flop'"), yoloflow::Error);
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flip", {{"fliplr", 2.0}}), doctest::Contains("params.fliplr"),
                       yoloflow::InvalidInput);
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flip", {{"flipud_p", 0.5}}), doctest::Contains("params.flipud_p"),
                       yoloflow::InvalidInput);

  // A source whose boxes leave the image and whose reloads differ is caught.
  struct Broken final : DataSource {
    std::size_t size() const override { return 2; }
    Sample load(std::size_t index) override {
      Sample s;
      s.index = index;
      s.path = "broken.jpg";
      s.image = cv::Mat(10, 10, CV_8UC3, cv::Scalar::all(static_cast<double>(calls++)));
      s.boxes.push_back(Box{5, 5, 20, 8, 0});
      if (index >= 2) throw yoloflow::InvalidInput("out of range");
      return s;
    }
    DatasetInfo info() const override { return {}; }
    std::vector<DataIssue> issues() const override { return {}; }
    int calls = 0;
  } broken;
  const auto problems = testing::source_contract(broken, 320);
  CHECK(problems.size() == 4);  // two samples: each box leaves its image, each reload differs

  // An augmentation that pushes boxes out of the image and draws from a generator of its own.
  struct Sloppy final : Augmentation {
    void apply(Sample& s, AugmentContext&) override {
      for (auto& b : s.boxes) b.x2 = static_cast<float>(s.image.cols) + 5.0f;
      s.image.at<cv::Vec3b>(0, 0)[0] = static_cast<unsigned char>(calls++);
    }
    int calls = 0;
  } sloppy;
  Sample one;
  one.path = "one.jpg";
  one.image = cv::Mat(20, 20, CV_8UC3, cv::Scalar::all(50));
  one.boxes.push_back(Box{2, 2, 8, 8, 3});
  const auto found = testing::augmentation_contract(sloppy, {one}, 320, 2);
  CHECK(found.size() == 4);  // per seed: a box leaves the image, another output for the same seed
  CHECK(report(found).find("leaves the 20x20 image") != std::string::npos);
  CHECK(report(found).find("another output for the same seed") != std::string::npos);
}
