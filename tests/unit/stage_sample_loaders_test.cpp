// The other samples an augmentation loads (mosaic, mixup) reach it as the pipeline's own
// samples do: through the stages before it (Ultralytics' MixUp blends in a mosaic-and-
// perspective image), reproducibly, and the first stage gets the source's samples as they are.
#include <doctest/doctest.h>

#include <opencv2/core.hpp>

#include <string>
#include <vector>

#include "runtime/graph/stage_sample_loaders.h"

using namespace yoloflow;

namespace {

// Sample i: a 4x4 image of value i with one box of class i.
class CountingSource final : public DataSource {
 public:
  std::size_t size() const override { return 10; }
  Sample load(std::size_t index) override {
    Sample s;
    s.path = "image" + std::to_string(index);
    s.image = cv::Mat(4, 4, CV_8UC3, cv::Scalar::all(static_cast<double>(index)));
    s.boxes.push_back(Box{0, 0, 1, 1, static_cast<int>(index)});
    return s;
  }
  DatasetInfo info() const override { return {}; }
  std::vector<DataIssue> issues() const override { return {}; }
};

// Adds a box of class `tag` at a random x: which stages ran, and with which draws.
class Tag final : public Augmentation {
 public:
  explicit Tag(int tag) : tag_(tag) {}
  void apply(Sample& s, AugmentContext& ctx) override {
    const auto x = static_cast<float>(ctx.rng.integer(0, 1000));
    s.boxes.push_back(Box{x, 0, x + 1, 1, tag_});
  }

 private:
  int tag_;
};

// Takes the boxes of another sample (index 3), as mosaic and mixup do.
class Merge final : public Augmentation {
 public:
  void apply(Sample& s, AugmentContext& ctx) override {
    const Sample other = ctx.loader.load(3);
    s.boxes.insert(s.boxes.end(), other.boxes.begin(), other.boxes.end());
  }
};

std::vector<int> classes(const Sample& s) {
  std::vector<int> c;
  for (const auto& b : s.boxes) c.push_back(b.cls);
  return c;
}

}  // namespace

TEST_CASE("stage sample loaders: another sample passes the stages before the one that loads it") {
  CountingSource source;
  Merge first_merge, late_merge;
  Tag a(100), b(200);
  // merge -> tag 100 -> tag 200 -> merge
  std::vector<Augmentation*> chain{&first_merge, &a, &b, &late_merge};
  core::StageSampleLoaders loaders(source, chain, /*epoch_seed=*/42, /*imgsz=*/4, /*epoch=*/0);

  // The first stage sees the source as it is.
  CHECK(classes(loaders.for_stage(0).load(3)) == std::vector<int>{3});
  // Stage 3's other sample went through merge (3 + 3's box), tag 100 and tag 200.
  const Sample other = loaders.for_stage(3).load(3);
  CHECK(classes(other) == std::vector<int>{3, 3, 100, 200});
  CHECK(other.path == "image3");
  // The same draws each time: reproducible whichever thread asks.
  CHECK(loaders.for_stage(3).load(3).boxes[2].x1 == other.boxes[2].x1);
  CHECK(classes(loaders.for_stage(2).load(3)) == std::vector<int>{3, 3, 100});  // stops before stage 2
  CHECK(loaders.for_stage(3).load(5).boxes[2].x1 != other.boxes[2].x1);  // another sample, other draws
  // Another epoch seed, other draws.
  core::StageSampleLoaders next_epoch(source, chain, 43, 4, 1);
  CHECK(next_epoch.for_stage(3).load(3).boxes[2].x1 != other.boxes[2].x1);

  // A whole pipeline sample, the way the graph applies the chain.
  Sample own = source.load(0);
  Rng rng(7);
  for (std::size_t i = 0; i < chain.size(); ++i) {
    AugmentContext ctx{rng, loaders.for_stage(i), 4, 0};
    chain[i]->apply(own, ctx);
  }
  CHECK(classes(own) == std::vector<int>{0, 3, 100, 200, 3, 3, 100, 200});
}
