// collate, loaded as a real plugin: NHWC RGB layout, normalised targets with batch_idx,
// partial batches, the allocator hook, and the mixed-size error.
#include <doctest/doctest.h>

#include <optional>

#include <opencv2/imgproc.hpp>

#include "support/plugin_set.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"

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
  const std::vector<float> expected = {
      0, 3, 2.0f / 8, 1.0f / 4, 4.0f / 8, 2.0f / 4,  // box (0,0)-(4,2) of image 0
      0, 7, 5.0f / 8, 2.5f / 4, 6.0f / 8, 3.0f / 4,  // box (2,1)-(8,4) of image 0
      1, 1, 5.0f / 8, 3.0f / 4, 2.0f / 8, 2.0f / 4,  // box (4,2)-(6,4) of image 1
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(batch->targets[i] == doctest::Approx(expected[i]));
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
