// throughput, loaded as a real plugin: statistics of a known input, rates bounded by the
// time actually spent, and the whole inspect chain on coco128 (source -> letterbox ->
// collate -> throughput) driven directly, without the graph runner.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {

template <class T>
std::unique_ptr<T> make(plugin_test::PluginSet& pm, Kind kind, const std::string& name,
                        const json& params, int imgsz = 640) {
  return plugin_test::make_component<T>(pm, kind, name, params, {imgsz});
}

// A 640x640 batch of `n` images with the given boxes rows [batch_idx, cls, cx, cy, w, h].
Batch make_batch(std::int64_t n, std::vector<float> rows) {
  Batch b;
  b.size = n;
  b.width = b.height = 640;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[n * 640 * 640 * 3](),
                                           std::default_delete<std::uint8_t[]>());
  b.boxes() = TargetArray{{static_cast<std::int64_t>(rows.size() / 6), 6}, std::move(rows)};
  return b;
}

std::string line_starting(const std::string& text, const std::string& start) {
  const auto pos = text.find("\n" + start);
  if (text.rfind(start, 0) == 0) return text.substr(0, text.find('\n'));
  if (pos == std::string::npos) return "";
  const auto end = text.find('\n', pos + 1);
  return text.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
}

class NoLoader final : public SampleLoader {
 public:
  std::size_t size() const override { return 0; }
  Sample load(std::size_t) override { throw Error("no samples in this test"); }
};

}  // namespace

TEST_CASE("throughput counts images, empty images, boxes, classes and COCO box sizes") {
  plugin_test::PluginSet pm;
  auto sink = make<Sink>(pm, Kind::Sink, "throughput",
                         {{"top_classes", 2}, {"names", json::array({"a", "b", "c", "d", "e", "f"})}});
  sink->begin_epoch(0);
  // Sizes in pixels of 640: 20x20 (small), 64x64 (medium: 4096 px), 160x160 (large).
  const float s = 20.0f / 640, m = 64.0f / 640, l = 160.0f / 640;
  Batch b1 = make_batch(2, {0, 5, 0.5f, 0.5f, s, s,    //
                            0, 0, 0.5f, 0.5f, m, m,    //
                            0, 5, 0.5f, 0.5f, l, l});  // image 1 of this batch: none
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sink->consume(b1);
  Batch b2 = make_batch(2, {0, 5, 0.5f, 0.5f, m, s,    // 64x20 = 1280 px: medium
                            1, 7, 0.5f, 0.5f, s, s});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  sink->consume(b2);
  sink->end_epoch(0);
  const std::string text = sink->summary();
  INFO(text);
  CHECK(line_starting(text, "images:") == "images: 4, empty (no boxes): 1 (25.0%)");
  CHECK(line_starting(text, "boxes:") == "boxes: 5, per image mean 1.25, max 3");
  CHECK(line_starting(text, "box sizes") ==
        "box sizes (COCO areas in batch pixels: small < 32^2, medium < 96^2, large): "
        "small 2 (40.0%), medium 2 (40.0%), large 1 (20.0%)");
  CHECK(line_starting(text, "classes:") == "classes: 3 distinct ids; top 2 by instances: 5 f: 3, 0 a: 1");
  CHECK(line_starting(text, "batch image sizes:") == "batch image sizes: 640x640");
  // Rates: 4 images took at least 40 ms, so at most 100 images/s.
  const std::string first = line_starting(text, "throughput:");
  REQUIRE(first.rfind("throughput: 4 images in 2 batches, ", 0) == 0);
  const double rate = std::stod(first.substr(std::string("throughput: 4 images in 2 batches, ").size()));
  CHECK(rate > 0.0);
  CHECK(rate <= 100.0);
}

TEST_CASE("inspect chain on coco128: yolo_dataset -> letterbox -> collate -> throughput") {
  plugin_test::PluginSet pm;
  auto source = make<DataSource>(pm, Kind::Source, "yolo_dataset",
                                 {{"data", test::coco128_dir() + "/data.yaml"}, {"split", "train"}}, 320);
  auto letterbox = make<Augmentation>(pm, Kind::Augmentation, "letterbox", json::object(), 320);
  auto collate = make<Batcher>(pm, Kind::Batcher, "collate", {{"batch", 16}}, 320);
  auto sink = make<Sink>(pm, Kind::Sink, "throughput", json::object(), 320);
  NoLoader loader;
  sink->begin_epoch(0);
  std::size_t batches = 0;
  for (std::size_t i = 0; i < source->size(); ++i) {
    Sample s = source->load(i);
    Rng rng(i);
    AugmentContext ctx{rng, loader, 320, 0};
    letterbox->apply(s, ctx);
    if (auto b = collate->add(std::move(s))) {
      CHECK(b->width == 320);
      CHECK(b->height == 320);
      sink->consume(*b);
      ++batches;
    }
  }
  CHECK_FALSE(collate->flush());  // 128 = 8 x 16: no partial batch
  sink->end_epoch(0);
  CHECK(batches == 8);
  const std::string text = sink->summary();
  INFO(text);
  CHECK(line_starting(text, "throughput:").rfind("throughput: 128 images in 8 batches, ", 0) == 0);
  CHECK(line_starting(text, "images:") == "images: 128, empty (no boxes): 2 (1.6%)");
  CHECK(line_starting(text, "boxes:").rfind("boxes: 929, per image mean 7.26, max ", 0) == 0);
  // person (class 0) is coco128's most frequent class.
  CHECK(line_starting(text, "classes:").find("top 10 by instances: 0: ") != std::string::npos);
}
