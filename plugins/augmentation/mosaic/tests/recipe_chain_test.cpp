// The YOLO11 training recipe on real data: coco128 -> mosaic -> random_perspective -> hsv ->
// flip -> collate, each a real plugin library, driven directly (no graph runner).
#include "augmentation/tests/painted_samples.h"
#include "yoloflow/batcher.h"
#include "yoloflow/source.h"

using namespace yoloflow;

namespace {

std::vector<std::uint8_t> run_recipe(plugin_test::PluginSet& pm, std::uint64_t seed, std::size_t& boxes) {
  const int imgsz = 256;
  auto source = plugin_test::make_component<DataSource>(
      pm, Kind::Source, "yolo_dataset", {{"data", test::coco128_dir() + "/data.yaml"}}, {imgsz});
  std::vector<std::unique_ptr<Augmentation>> recipe;
  recipe.push_back(plugin_test::make_augmentation(pm, "mosaic", json::object(), imgsz));
  recipe.push_back(plugin_test::make_augmentation(pm, "random_perspective", json::object(), imgsz));
  recipe.push_back(plugin_test::make_augmentation(pm, "hsv", json::object(), imgsz));
  recipe.push_back(plugin_test::make_augmentation(pm, "flip", json::object(), imgsz));
  auto collate = plugin_test::make_component<Batcher>(pm, Kind::Batcher, "collate", {{"batch", 8}}, {imgsz});
  SourceSamples loader(*source);
  std::vector<std::uint8_t> bytes;
  boxes = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    Sample s = source->load(i);
    Rng rng(Rng::mix(seed, i));
    AugmentContext ctx{rng, loader, imgsz, 0};
    for (auto& aug : recipe) aug->apply(s, ctx);
    REQUIRE(s.image.size() == cv::Size(imgsz, imgsz));
    for (const auto& b : s.boxes) {
      CHECK(b.x1 >= 0);
      CHECK(b.y1 >= 0);
      CHECK(b.x2 <= imgsz);
      CHECK(b.y2 <= imgsz);
      CHECK(b.width() > 2);
      CHECK(b.height() > 2);
    }
    if (auto batch = collate->add(std::move(s))) {
      CHECK(batch->size == 8);
      boxes += static_cast<std::size_t>(batch->num_boxes());
      bytes.insert(bytes.end(), batch->pixels.get(), batch->pixels.get() + 8 * imgsz * imgsz * 3);
      const auto& rows = batch->boxes().values;
      const auto* t = reinterpret_cast<const std::uint8_t*>(rows.data());
      bytes.insert(bytes.end(), t, t + rows.size() * sizeof(float));
    }
  }
  return bytes;
}
}  // namespace

TEST_CASE("the augmentation recipe runs on coco128 and is reproducible from its seed") {
  plugin_test::PluginSet pm;
  std::size_t boxes_a = 0, boxes_b = 0, boxes_c = 0;
  const auto a = run_recipe(pm, 1, boxes_a);
  const auto b = run_recipe(pm, 1, boxes_b);
  const auto c = run_recipe(pm, 2, boxes_c);
  CHECK(boxes_a > 16);  // mosaics of four coco images hold many boxes
  CHECK(a == b);
  CHECK(boxes_a == boxes_b);
  CHECK(a != c);
}
