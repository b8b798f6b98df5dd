// collate, loaded as a real plugin: NHWC RGB layout, normalised targets with batch_idx,
// partial batches, the allocator hook, and the mixed-size error; keypoints and image classes
// packed into their own arrays, and the batcher contract over all of them.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <optional>

#include <opencv2/imgproc.hpp>

#include "support/plugin_set.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/fields.h"
#include "yoloflow/testing.h"

using namespace yoloflow;

namespace {

std::unique_ptr<Batcher> make_collate(plugin_test::PluginSet& pm, const json& params) {
  return plugin_test::make_component<Batcher>(pm, Kind::Batcher, "collate", params, {640, "batch"});
}

// A w x h image whose pixel (x, y) is BGR (x, y, seed): every byte tells where it came from.
Sample coded_sample(std::size_t index, int w, int h, int seed, std::vector<Box> boxes = {}) {
  Sample s;
  s.index = index;
  s.path = "img" + std::to_string(index) + ".jpg";
  s.image = cv::Mat(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) s.image.at<cv::Vec3b>(y, x) = cv::Vec3b(x, y, seed);
  s.boxes = std::move(boxes);
  s.geometry.original_width = 2 * w;
  s.geometry.ratio_x = 0.5;
  return s;
}

}  // namespace

TEST_CASE("collate builds NHWC RGB batches with normalised [batch_idx, cls, cx, cy, w, h] targets") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 2}});
  CHECK(c->batch_size() == 2);
  const int W = 8, H = 4;
  CHECK_FALSE(c->add(coded_sample(10, W, H, 100, {Box{0, 0, 4, 2, 3}, Box{2, 1, 8, 4, 7}})));
  auto batch = c->add(coded_sample(11, W, H, 200, {Box{4, 2, 6, 4, 1}}));
  REQUIRE(batch);
  CHECK(batch->size == 2);
  CHECK(batch->width == W);
  CHECK(batch->height == H);
  CHECK(batch->index == 0);
  // NHWC, RGB: byte (n, y, x, c) at ((n*H + y)*W + x)*3 + c; BGR (x, y, seed) -> RGB (seed, y, x).
  for (int n = 0; n < 2; ++n) {
    for (int y = 0; y < H; ++y) {
      for (int x = 0; x < W; ++x) {
        const std::uint8_t* p = batch->pixels.get() + ((n * H + y) * W + x) * 3;
        CHECK(p[0] == (n == 0 ? 100 : 200));
        CHECK(p[1] == y);
        CHECK(p[2] == x);
      }
    }
  }
  CHECK(batch->image_data(1) == batch->pixels.get() + H * W * 3);
  REQUIRE(batch->num_boxes() == 3);
  CHECK(batch->boxes().shape == std::vector<std::int64_t>{3, 6});
  const std::vector<float> expected = {
      0, 3, 2.0f / 8, 1.0f / 4, 4.0f / 8, 2.0f / 4,  // box (0,0)-(4,2) of image 0
      0, 7, 5.0f / 8, 2.5f / 4, 6.0f / 8, 3.0f / 4,  // box (2,1)-(8,4) of image 0
      1, 1, 5.0f / 8, 3.0f / 4, 2.0f / 8, 2.0f / 4,  // box (4,2)-(6,4) of image 1
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(batch->boxes().values[i] == doctest::Approx(expected[i]));
  }
  REQUIRE(batch->samples.size() == 2);
  CHECK(batch->samples[0].index == 10);
  CHECK(batch->samples[1].path == "img11.jpg");
  CHECK(batch->samples[0].geometry.ratio_x == 0.5);
  CHECK(batch->samples[0].geometry.original_width == 2 * W);

  // A third sample starts a new batch; flush returns it, partial, numbered 1.
  CHECK_FALSE(c->add(coded_sample(12, W, H, 50)));
  auto last = c->flush();
  REQUIRE(last);
  CHECK(last->size == 1);
  CHECK(last->index == 1);
  CHECK(last->num_boxes() == 0);
  CHECK(last->pixels.get()[0] == 50);
  // The next epoch numbers from 0 again.
  c->add(coded_sample(0, W, H, 1));
  auto next = c->add(coded_sample(1, W, H, 1));
  REQUIRE(next);
  CHECK(next->index == 0);
  CHECK(next->epoch == 1);
}

TEST_CASE("collate drop_last drops the partial batch; the allocator supplies pixel memory") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 3}, {"drop_last", true}});
  std::size_t calls = 0, bytes_asked = 0;
  c->set_allocator([&](std::size_t bytes) {
    ++calls;
    bytes_asked = bytes;
    return std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes], std::default_delete<std::uint8_t[]>());
  });
  for (std::size_t i = 0; i < 3; ++i) c->add(coded_sample(i, 5, 5, 9));
  CHECK(calls == 1);
  CHECK(bytes_asked == 3 * 5 * 5 * 3);
  c->add(coded_sample(3, 5, 5, 9));
  CHECK_FALSE(c->flush());
  CHECK_FALSE(c->flush());  // nothing pending
}

TEST_CASE("collate refuses images of different sizes, asking for a letterbox stage") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 4}});
  c->add(coded_sample(0, 8, 4, 0));
  try {
    c->add(coded_sample(1, 6, 4, 0));
    FAIL("mixed sizes must throw");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("img1.jpg") != std::string::npos);
    CHECK(what.find("6x4") != std::string::npos);
    CHECK(what.find("8x4") != std::string::npos);
    CHECK(what.find("add a letterbox stage") != std::string::npos);
  }
}

TEST_CASE("collate copies large batches in parallel, reuses returned buffers, and batches outlive it") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 8}});
  const int W = 16, H = 8;
  auto fill = [&](int seed_base) {
    std::optional<Batch> out;
    for (std::size_t i = 0; i < 8; ++i) {
      out = c->add(coded_sample(i, W, H, seed_base + static_cast<int>(i)));
      CHECK(out.has_value() == (i == 7));
    }
    return out;
  };
  auto check_pixels = [&](const Batch& b, int seed_base) {
    for (int n = 0; n < 8; ++n) {
      for (int y = 0; y < H; ++y) {
        for (int x = 0; x < W; ++x) {
          const std::uint8_t* p = b.image_data(n) + (y * W + x) * 3;
          REQUIRE(p[0] == seed_base + n);
          REQUIRE(p[1] == y);
          REQUIRE(p[2] == x);
        }
      }
    }
  };
  auto first = fill(10);
  REQUIRE(first);
  check_pixels(*first, 10);
  const std::uint8_t* first_pixels = first->pixels.get();
  first.reset();  // the consumer is done with it: its buffer serves the next batch
  auto second = fill(100);
  REQUIRE(second);
  CHECK(second->pixels.get() == first_pixels);
  check_pixels(*second, 100);
  // A buffer still held is not handed out again.
  auto third = fill(150);
  REQUIRE(third);
  CHECK(third->pixels.get() != second->pixels.get());
  check_pixels(*second, 100);
  check_pixels(*third, 150);
  c.reset();  // the collate goes first; its batches stay valid and free their memory later
  check_pixels(*third, 150);
}

namespace {

// Instance i of `s`: K keypoints spread across its box, the last one absent (visibility 0).
void add_keypoints(Sample& s, int k) {
  s.keypoints.clear();
  for (const Box& b : s.boxes) {
    std::vector<Keypoint> points;
    for (int j = 0; j < k; ++j) {
      const float f = static_cast<float>(j + 1) / static_cast<float>(k + 1);
      points.push_back({b.x1 + f * b.width(), b.y1 + f * b.height(), j + 1 == k ? 0.0f : 2.0f});
    }
    s.keypoints.push_back(std::move(points));
  }
}

// A batcher that passes collate's batches on with one change, as a faulty plugin would.
class Altered final : public Batcher {
 public:
  Altered(std::unique_ptr<Batcher> inner, std::function<void(Batch&)> change)
      : inner_(std::move(inner)), change_(std::move(change)) {}
  std::int64_t batch_size() const override { return inner_->batch_size(); }
  void set_allocator(PixelAllocator allocator) override { inner_->set_allocator(std::move(allocator)); }
  std::optional<Batch> add(Sample&& s) override { return changed(inner_->add(std::move(s))); }
  std::optional<Batch> flush() override { return changed(inner_->flush()); }

 private:
  std::optional<Batch> changed(std::optional<Batch> b) {
    if (b) change_(*b);
    return b;
  }
  std::unique_ptr<Batcher> inner_;
  std::function<void(Batch&)> change_;
};

}  // namespace

TEST_CASE("collate registers the fields it packs: boxes, keypoints, image classes and outlines (as masks)") {
  plugin_test::PluginSet pm;
  pm.load("collate");
  const ComponentInfo& info = pm.component(Kind::Batcher, "collate");
  CHECK(info.contract.declared);
  CHECK(info.contract.keeps == (Field::Boxes | Field::Keypoints | Field::ImageClass | Field::Polygons));
}

TEST_CASE("collate rasterises outlines into Ultralytics' mask targets: per image with overlaps, or per instance") {
  // Two 32 x 32 images. Image 0: a large square (8..24) and a small one (12..16) inside it, and a
  // box without an outline; image 1: one triangle. Masks at mask_ratio 4 (8 x 8).
  auto square = [](float a, float b) { return Polygon{{a, a}, {b, a}, {b, b}, {a, b}}; };
  auto samples = [&] {
    std::vector<Sample> out;
    out.push_back(coded_sample(0, 32, 32, 1, {Box{8, 8, 24, 24, 0}, Box{12, 12, 16, 16, 1}, Box{0, 0, 4, 4, 2}}));
    out.back().polygons = {square(8, 24), square(12, 16), Polygon{}};
    out.push_back(coded_sample(1, 32, 32, 2, {Box{0, 0, 31, 31, 0}}));
    out.back().polygons = {Polygon{{0, 0}, {31.9f, 0}, {0, 31.9f}}};
    return out;
  };
  auto batch_of = [&](const json& params) {
    plugin_test::PluginSet pm;
    auto c = make_collate(pm, params);
    auto in = samples();
    CHECK_FALSE(c->add(std::move(in[0])));
    auto b = c->add(std::move(in[1]));
    REQUIRE(b);
    return std::move(*b);
  };
  // The filled square covers pixels 8..24; bilinear halving twice keeps cells 2..5.
  auto cell = [](const TargetArray& t, std::int64_t plane, int y, int x) { return t.values[static_cast<std::size_t>((plane * 8 + y) * 8 + x)]; };

  SUBCASE("overlap (the default): one plane per image, k + 1 where instance k is on top") {
    const Batch b = batch_of({{"batch", 2}, {"masks", true}});
    CHECK(b.targets.count("masks") == 0);
    const TargetArray& m = b.target("image_masks");
    CHECK(m.shape == std::vector<std::int64_t>{2, 8, 8});
    CHECK(cell(m, 0, 2, 2) == 1);   // the large square
    CHECK(cell(m, 0, 5, 5) == 1);
    CHECK(cell(m, 0, 3, 3) == 2);   // the small one, drawn after the larger and so on top
    CHECK(cell(m, 0, 1, 1) == 0);   // outside both; the box without an outline has no mask
    CHECK(cell(m, 0, 6, 6) == 0);
    CHECK(cell(m, 1, 0, 0) == 1);   // image 1's only instance
    CHECK(cell(m, 1, 7, 7) == 0);
    double large = 0, small = 0;
    for (float v : std::vector<float>(m.values.begin(), m.values.begin() + 64)) {
      large += v == 1;
      small += v == 2;
    }
    CHECK(large + small == 16);  // the 4 x 4 cells of the large square
  }
  SUBCASE("overlap_mask false: one plane per instance, in the boxes' row order, at mask_ratio 2") {
    const Batch b = batch_of({{"batch", 2}, {"masks", true}, {"overlap_mask", false}, {"mask_ratio", 2}});
    CHECK(b.targets.count("image_masks") == 0);
    const TargetArray& m = b.target("masks");
    REQUIRE(m.shape == std::vector<std::int64_t>{4, 16, 16});
    auto sum = [&](std::int64_t plane) {
      double s = 0;
      for (std::size_t i = 0; i < 256; ++i) s += m.values[static_cast<std::size_t>(plane) * 256 + i];
      return s;
    };
    // Pixels 8..24 halved: cells 4..11 wholly inside, cell 12 half covered (kept or not by the
    // bilinear rounding); the small square's plane is separate, not subtracted.
    CHECK(sum(0) >= 64);
    CHECK(sum(0) <= 81);
    CHECK(sum(1) >= 4);
    CHECK(sum(2) == 0);   // the instance without an outline
    CHECK(sum(3) > 100);  // the triangle: half of 16 x 16
    for (float v : m.values) CHECK((v == 0 || v == 1));
  }
  SUBCASE("without masks (the default): no mask targets, and images that mask_ratio does not divide are refused") {
    const Batch b = batch_of({{"batch", 2}});
    CHECK(b.targets.count("image_masks") == 0);
    CHECK(b.targets.count("masks") == 0);
    plugin_test::PluginSet pm;
    auto c = make_collate(pm, {{"batch", 2}, {"masks", true}, {"mask_ratio", 3}});
    try {
      c->add(coded_sample(0, 32, 32, 1));
      FAIL("expected a refusal");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "collate 'batch': images of 32x32 do not divide by mask_ratio 3");
    }
  }
}

TEST_CASE("collate packs keypoints (N, K, 3) and image classes (B,) normalised, keypoints row i for boxes row i") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 3}});
  const int W = 8, H = 4;
  Sample a = coded_sample(0, W, H, 1, {Box{0, 0, 4, 2, 3}, Box{2, 1, 8, 4, 7}});
  add_keypoints(a, 3);
  a.image_class = 5;
  Sample none = coded_sample(1, W, H, 2);  // no boxes, so no keypoints; no image class
  Sample b = coded_sample(2, W, H, 3, {Box{4, 2, 6, 4, 1}});
  add_keypoints(b, 3);
  b.image_class = 0;
  const Sample a_copy = a, b_copy = b;
  CHECK_FALSE(c->add(std::move(a)));
  CHECK_FALSE(c->add(std::move(none)));
  auto batch = c->add(std::move(b));
  REQUIRE(batch);

  // The boxes array is exactly the detection layout, in sample order.
  const TargetArray& boxes = batch->target(targets::kBoxes);
  CHECK(boxes.shape == std::vector<std::int64_t>{3, 6});
  REQUIRE(boxes.values.size() == 18);
  CHECK(boxes.values[0] == 0);
  CHECK(boxes.values[6] == 0);
  CHECK(boxes.values[12] == 2);

  REQUIRE(batch->has_target(targets::kKeypoints));
  const TargetArray& kp = batch->target(targets::kKeypoints);
  CHECK(kp.shape == std::vector<std::int64_t>{3, 3, 3});
  CHECK(kp.rows() == 3);
  CHECK(kp.row_size() == 9);
  REQUIRE(kp.values.size() == 27);
  const std::vector<const Keypoint*> rows = {a_copy.keypoints[0].data(), a_copy.keypoints[1].data(),
                                             b_copy.keypoints[0].data()};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t j = 0; j < 3; ++j) {
      CAPTURE(r);
      CAPTURE(j);
      const float* p = kp.values.data() + (r * 3 + j) * 3;
      CHECK(p[0] == doctest::Approx(rows[r][j].x / W));
      CHECK(p[1] == doctest::Approx(rows[r][j].y / H));
      CHECK(p[2] == rows[r][j].visible);
      CHECK(p[0] >= 0.0f);
      CHECK(p[0] <= 1.0f);
      CHECK(p[1] >= 0.0f);
      CHECK(p[1] <= 1.0f);
    }
  }
  CHECK(kp.values[2] == 2.0f);   // row 0, keypoint 0: visible
  CHECK(kp.values[8] == 0.0f);   // row 0, keypoint 2: absent
  // Row 2 is image 2's box (4,2)-(6,4): its first keypoint a quarter into it.
  CHECK(kp.values[18] == doctest::Approx(4.5f / W));
  CHECK(kp.values[19] == doctest::Approx(2.5f / H));

  REQUIRE(batch->has_target(targets::kImageClasses));
  const TargetArray& classes = batch->target(targets::kImageClasses);
  CHECK(classes.shape == std::vector<std::int64_t>{3});
  CHECK(classes.values == std::vector<float>{5, -1, 0});
}

TEST_CASE("collate: a boxes-only batch has a boxes array and no keypoints or image classes; an empty one (0, 6)") {
  plugin_test::PluginSet pm;
  auto c = make_collate(pm, {{"batch", 2}});
  c->add(coded_sample(0, 8, 4, 0, {Box{0, 0, 4, 2, 3}}));
  auto batch = c->add(coded_sample(1, 8, 4, 0, {Box{2, 1, 8, 4, 7}}));
  REQUIRE(batch);
  CHECK(batch->targets.size() == 1);
  CHECK(batch->boxes().shape == std::vector<std::int64_t>{2, 6});
  CHECK_FALSE(batch->has_target(targets::kKeypoints));
  CHECK_FALSE(batch->has_target(targets::kImageClasses));
  CHECK_THROWS_WITH_AS(batch->target(targets::kKeypoints), doctest::Contains("it has boxes"), Error);

  // A batch after a keypoints batch starts clean: nothing carries over.
  Sample with = coded_sample(2, 8, 4, 0, {Box{0, 0, 4, 2, 3}});
  add_keypoints(with, 2);
  with.image_class = 1;
  c->add(std::move(with));
  REQUIRE(c->add(coded_sample(3, 8, 4, 0)));
  c->add(coded_sample(4, 8, 4, 0));
  auto empty = c->add(coded_sample(5, 8, 4, 0));
  REQUIRE(empty);
  REQUIRE(empty->has_target(targets::kBoxes));
  CHECK(empty->boxes().shape == std::vector<std::int64_t>{0, 6});
  CHECK(empty->boxes().values.empty());
  CHECK(empty->targets.size() == 1);
}

TEST_CASE("collate refuses boxes without keypoints in a batch whose other samples carry them, naming the sample") {
  plugin_test::PluginSet pm;
  const int W = 8, H = 4;
  auto with_keypoints = [&](std::size_t index, int k) {
    Sample s = coded_sample(index, W, H, 0, {Box{0, 0, 4, 2, 3}});
    add_keypoints(s, k);
    return s;
  };
  SUBCASE("the bare sample comes second") {
    auto c = make_collate(pm, {{"batch", 4}});
    c->add(with_keypoints(0, 3));
    CHECK_NOTHROW(c->add(coded_sample(1, W, H, 0)));  // no boxes: nothing to pair keypoints with
    CHECK_THROWS_WITH_AS(c->add(coded_sample(2, W, H, 0, {Box{2, 1, 8, 4, 7}})),
                         doctest::Contains("sample 'img2.jpg' has 1 box(es) without keypoints"), Error);
    // The refused sample left the batch as it was: it completes with the others' rows.
    c->add(with_keypoints(3, 3));
    auto batch = c->add(with_keypoints(4, 3));
    REQUIRE(batch);
    CHECK(batch->size == 4);
    CHECK(batch->target(targets::kKeypoints).shape == std::vector<std::int64_t>{3, 3, 3});
    CHECK(batch->boxes().shape == std::vector<std::int64_t>{3, 6});
  }
  SUBCASE("the bare sample comes first") {
    auto c = make_collate(pm, {{"batch", 4}});
    c->add(coded_sample(0, W, H, 0, {Box{2, 1, 8, 4, 7}}));
    CHECK_THROWS_WITH_AS(c->add(with_keypoints(1, 3)), doctest::Contains("sample 'img0.jpg' has box(es) without keypoints"),
                         Error);
  }
  SUBCASE("another keypoint count") {
    auto c = make_collate(pm, {{"batch", 4}});
    c->add(with_keypoints(0, 3));
    CHECK_THROWS_WITH_AS(c->add(with_keypoints(1, 2)), doctest::Contains("sample 'img1.jpg' has 2 keypoints"), Error);
  }
  SUBCASE("not one keypoint set per box") {
    auto c = make_collate(pm, {{"batch", 4}});
    Sample s = with_keypoints(0, 3);
    s.boxes.push_back(Box{2, 1, 8, 4, 7});
    CHECK_THROWS_WITH_AS(c->add(std::move(s)), doctest::Contains("1 keypoint sets for 2 box(es)"), Error);
  }
}

TEST_CASE("batcher_contract checks collate's keypoints and image classes, and catches a batcher that packs them wrongly") {
  plugin_test::PluginSet pm;
  const int W = 16, H = 8;
  std::vector<Sample> samples;
  for (std::size_t i = 0; i < 5; ++i) {
    std::vector<Box> boxes;
    for (std::size_t j = 0; j < i % 3; ++j) {
      const float x = static_cast<float>(2 * j + i % 2);
      boxes.push_back(Box{x, 1, x + 6, 7, static_cast<int>(i + j)});
    }
    Sample s = coded_sample(i, W, H, static_cast<int>(10 * i), boxes);
    add_keypoints(s, 4);
    s.image_class = i == 2 ? -1 : static_cast<int>(i);
    samples.push_back(std::move(s));
  }
  auto collate = [&] { return make_collate(pm, {{"batch", 2}}); };
  CHECK(testing::batcher_contract(*collate(), samples).empty());

  auto problems = [&](std::function<void(Batch&)> change) {
    Altered altered(collate(), std::move(change));
    const auto found = testing::batcher_contract(altered, samples);
    std::string all;
    for (const auto& p : found) all += p + "\n";
    return all;
  };
  CHECK(problems([](Batch& b) { b.targets.erase(targets::kKeypoints); }).find("no 'keypoints' target array") !=
        std::string::npos);
  CHECK(problems([](Batch& b) { b.targets.erase(targets::kImageClasses); }).find("no 'image_classes' target array") !=
        std::string::npos);
  CHECK(problems([](Batch& b) { b.targets.erase(targets::kBoxes); }).find("no 'boxes' target array") !=
        std::string::npos);
  CHECK(problems([](Batch& b) {
          auto& kp = b.targets.at(targets::kKeypoints);
          kp.shape = {kp.rows(), 2, 6};
        }).find("the keypoints array has shape") != std::string::npos);
  // Keypoints in pixels instead of normalised.
  CHECK(problems([](Batch& b) {
          auto& kp = b.targets.at(targets::kKeypoints).values;
          for (std::size_t i = 0; i < kp.size(); i += 3) kp[i] *= static_cast<float>(b.width);
        }).find("its keypoints are not an instance") != std::string::npos);
  // Keypoints rows in another order than the boxes rows.
  CHECK(problems([](Batch& b) {
          auto& kp = b.targets.at(targets::kKeypoints);
          if (kp.rows() < 2) return;
          const auto n = static_cast<std::ptrdiff_t>(kp.row_size());
          std::swap_ranges(kp.values.begin(), kp.values.begin() + n, kp.values.begin() + n);
        }).find("its keypoints are not an instance") != std::string::npos);
  CHECK(problems([](Batch& b) { b.targets.at(targets::kImageClasses).values[0] = 9; }).find("has image class 9") !=
        std::string::npos);
}
