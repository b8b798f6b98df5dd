// The plugin's own test, as a third party writes one with the SDK's harness (yoloflow/testing.h):
// the built library loaded as the host loads it, the component made from its schema, run on real
// images, and checked against the augmentation contract.
// Usage: grayscale_test PLUGIN.so IMAGE... (exit status 0: passed)
#include <cstdio>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "yoloflow/error.h"
#include "yoloflow/testing.h"

namespace testing = yoloflow::testing;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: grayscale_test PLUGIN.so IMAGE...\n");
    return 2;
  }
  int failures = 0;
  auto expect = [&failures](bool ok, const std::string& what) {
    if (!ok) {
      std::fprintf(stderr, "FAILED: %s\n", what.c_str());
      ++failures;
    }
  };
  try {
    testing::PluginLibrary library(argv[1]);
    std::vector<yoloflow::Sample> samples;
    for (int i = 2; i < argc; ++i) {
      yoloflow::Sample s;
      s.path = argv[i];
      s.image = cv::imread(argv[i], cv::IMREAD_COLOR);
      expect(!s.image.empty(), std::string("read ") + argv[i]);
      s.boxes.push_back(yoloflow::Box{10, 10, 60, 40, 0});
      samples.push_back(s);
    }
    // Always grey: every pixel's three channels are equal, the boxes unchanged.
    auto always = library.make<yoloflow::Augmentation>("grayscale", {{"p", 1.0}});
    testing::SampleList loader(samples);
    const yoloflow::Sample out = testing::augmented(*always, samples[0], 1, 640, loader);
    std::vector<cv::Mat> channels;
    cv::split(out.image, channels);
    expect(cv::countNonZero(channels[0] != channels[1]) == 0 && cv::countNonZero(channels[1] != channels[2]) == 0,
           "p 1 turns the image grey");
    expect(out.boxes.size() == 1 && out.boxes[0].x2 == 60, "boxes unchanged");
    // The contract of every augmentation, at p 1 and at the default.
    for (const auto& problem : testing::augmentation_contract(*always, samples, 640)) expect(false, problem);
    auto by_default = library.make<yoloflow::Augmentation>("grayscale");
    for (const auto& problem : testing::augmentation_contract(*by_default, samples, 640, 50)) expect(false, problem);
    // The schema refuses what the host would refuse, at its JSON path.
    try {
      library.make<yoloflow::Augmentation>("grayscale", {{"p", 2.0}});
      expect(false, "p 2 refused");
    } catch (const yoloflow::InvalidInput& e) {
      expect(std::string(e.what()).find("params.p") != std::string::npos, std::string("p 2 refused at params.p: ") + e.what());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
  if (failures == 0) std::printf("grayscale_test: passed\n");
  return failures == 0 ? 0 : 1;
}
