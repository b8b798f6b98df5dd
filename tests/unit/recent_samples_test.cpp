// Ultralytics' mosaic buffer, made reproducible: which samples a mosaic draws its other images
// from (recent_indexes), and the store that keeps their decoded images so the draw costs no
// decode (RecentImages, through StageSampleLoaders as the graph runner uses it).
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "runtime/graph/epoch_order.h"
#include "runtime/graph/recent_images.h"
#include "runtime/graph/stage_sample_loaders.h"

using namespace yoloflow;

TEST_CASE("recent samples: Ultralytics' buffer length, min(size, 8 x batch, 1000)") {
  CHECK(core::recent_window(128, 16) == 128);
  CHECK(core::recent_window(2560, 32) == 256);
  CHECK(core::recent_window(118287, 256) == 1000);
  CHECK(core::recent_window(5000, 0) == 1000);  // batch not known
  CHECK(core::recent_window(0, 16) == 0);
}

TEST_CASE("recent samples: the window ends at the sample and continues into the previous epoch") {
  const std::vector<std::size_t> order{5, 3, 8, 1, 0, 9};
  const std::vector<std::size_t> previous{2, 4, 6, 7};
  CHECK(core::recent_indexes(order, previous, 3, 3) == std::vector<std::size_t>{1, 8, 3});
  CHECK(core::recent_indexes(order, previous, 1, 4) == std::vector<std::size_t>{3, 5, 7, 6});
  CHECK(core::recent_indexes(order, {}, 1, 4) == std::vector<std::size_t>{3, 5});  // the first epoch
  CHECK(core::recent_indexes(order, previous, 0, 1) == std::vector<std::size_t>{5});
  // A data-parallel rank's own samples: every world-th position.
  CHECK(core::recent_indexes(order, previous, 5, 3, 2) == std::vector<std::size_t>{9, 1, 3});
  CHECK(core::recent_indexes(order, previous, 1, 3, 2) == std::vector<std::size_t>{3, 7, 4});
  // A padding position past the end stands for the start of the order.
  CHECK(core::recent_indexes(order, previous, 7, 2) == std::vector<std::size_t>{3, 5});
}

namespace {
// Sample i: a 4x4 image of value i; counts its loads (decodes).
class CountingSource final : public DataSource {
 public:
  std::size_t size() const override { return 10; }
  Sample load(std::size_t index) override {
    ++loads;
    Sample s;
    s.index = index;
    s.path = "image" + std::to_string(index);
    s.image = cv::Mat(4, 4, CV_8UC3, cv::Scalar::all(static_cast<double>(index)));
    return s;
  }
  DatasetInfo info() const override { return {}; }
  std::vector<DataIssue> issues() const override { return {}; }
  std::atomic<int> loads{0};
};

// Adds the first pixel of every recent sample it loads to its own (as a mosaic copies tiles),
// then paints its own image over.
class MixRecent final : public Augmentation {
 public:
  void apply(Sample& s, AugmentContext& ctx) override {
    for (std::size_t i = 1; i < ctx.recent.count; ++i) {
      Sample other = ctx.loader.load(ctx.recent.indexes[i]);
      s.boxes.push_back(Box{0, 0, 1, 1, other.image.at<cv::Vec3b>(0, 0)[0]});
      other.image.setTo(cv::Scalar::all(200));  // its copy, not the kept one
    }
    s.image.setTo(cv::Scalar::all(255));  // in place, as hsv does
  }
};
}  // namespace

TEST_CASE("recent samples: a mosaic's other images are copies of decoded ones, not decoded again") {
  CountingSource source;
  MixRecent mix;
  core::RecentImages kept;
  kept.reset(4);
  core::StageSampleLoaders loaders(source, {&mix}, 1, 4, 0, &kept);
  const std::vector<std::size_t> order{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  int loads_before_4 = 0;
  for (std::size_t position = 0; position < order.size(); ++position) {
    if (position == 4) loads_before_4 = source.loads.load();
    Sample s = loaders.load_source(order[position]);
    Rng rng(position);
    const auto recent = core::recent_indexes(order, {}, position, 3);
    loaders.apply(s, rng, 1, RecentSamples{recent.data(), recent.size()});
    // The pixels of the samples loaded before, untouched by what happened to them since.
    std::vector<int> got;
    for (const auto& b : s.boxes) got.push_back(b.cls);
    std::vector<int> want;
    for (std::size_t i = 1; i < recent.size(); ++i) want.push_back(static_cast<int>(recent[i]));
    CHECK(got == want);
  }
  // The store keeps samples from the first request on (sample 1's, for sample 0): samples 0 and 1
  // were loaded before it and are decoded again when drawn (by samples 1, 2 and 3). From then on
  // each sample is decoded once, its recent ones never.
  CHECK(loads_before_4 == 4 + 4);
  CHECK(source.loads.load() == loads_before_4 + 6);

  SUBCASE("the store keeps the newest and drops the oldest") {
    CHECK(kept.get(9).has_value());
    CHECK(kept.get(6).has_value());
    CHECK_FALSE(kept.get(5).has_value());
    kept.reset(0);
    kept.put(9, source.load(9));
    CHECK_FALSE(kept.get(9).has_value());
  }
}

TEST_CASE("recent samples: nothing is kept for a chain that never loads another sample") {
  CountingSource source;
  core::RecentImages kept;
  kept.reset(4);
  core::StageSampleLoaders loaders(source, {}, 1, 4, 0, &kept);
  for (std::size_t i = 0; i < 10; ++i) loaders.load_source(i);
  CHECK(source.loads.load() == 10);
  CHECK_FALSE(kept.wanted());
}
