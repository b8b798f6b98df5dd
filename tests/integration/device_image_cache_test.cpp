// The training device's image cache (the train sink's device_image_cache): while the chain plans
// its pixels, a training image kept there is neither read from its file nor decoded again, and
// composes to the bytes it composed to from its file; a run that keeps its images trains as one
// that decodes them. Here the cache lives in host memory (the CPU composes); the CUDA test at the
// end runs on the GPU machine's test run.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/stage_sample_loaders.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/planned_batches.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/compose/device_image_store.h"
#include "training/compose/pixel_composer.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/source.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// DIR/data.yaml over copies of coco128's first `count` labelled training images (files a test may delete).
std::string write_copied_dataset(const std::string& dir, int count) {
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(test::coco128_dir() + "/images/train2017")) images.push_back(e.path());
  std::sort(images.begin(), images.end());
  fs::create_directories(dir + "/images/train");
  fs::create_directories(dir + "/labels/train");
  int n = 0;
  for (const auto& p : images) {
    const auto label = fs::path(test::coco128_dir()) / "labels/train2017" / p.filename().replace_extension(".txt");
    if (!fs::exists(label) || fs::file_size(label) == 0) continue;
    fs::copy_file(p, dir + "/images/train/" + p.filename().string());
    fs::copy_file(label, dir + "/labels/train/" + label.filename().string());
    if (++n == count) break;
  }
  // coco128's class names, under its own data.yaml's "names:".
  const std::string yaml = test::read_file(test::coco128_dir() + "/data.yaml");
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: images/train\nval: images/train\n" +
                                           yaml.substr(yaml.find("\nnames:") + 1));
  return dir + "/data.yaml";
}

struct Composed {
  torch::Tensor pixels;
  std::vector<std::vector<Box>> boxes;
};

// The planned chain over samples 0..n-1 (the same generators each time), composed on the host.
Composed planned_batch(core::StageSampleLoaders& loaders, std::size_t chain, std::size_t n, int imgsz) {
  std::vector<std::shared_ptr<PixelPlan>> plans;
  std::vector<const PixelPlan*> views;
  Composed out;
  for (std::size_t i = 0; i < n; ++i) {
    Sample s = loaders.load_source(i);
    Rng rng(100 + i);
    loaders.apply(s, rng, chain, {}, /*plan_pixels=*/true);
    plans.push_back(s.pixel_plan);
    views.push_back(plans.back().get());
    out.boxes.push_back(s.boxes);
  }
  const PlannedPixels planned = plan_batch(views, imgsz, imgsz);
  out.pixels = torch::empty({static_cast<std::int64_t>(n), imgsz, imgsz, 3}, torch::kUInt8);
  core::compose_on_host(planned, static_cast<std::int64_t>(n), imgsz, imgsz, out.pixels.data_ptr<std::uint8_t>());
  return out;
}

bool same_boxes(const std::vector<std::vector<Box>>& a, const std::vector<std::vector<Box>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (std::size_t k = 0; k < a[i].size(); ++k) {
      if (a[i][k].cls != b[i][k].cls || a[i][k].x1 != b[i][k].x1 || a[i][k].y1 != b[i][k].y1 ||
          a[i][k].x2 != b[i][k].x2 || a[i][k].y2 != b[i][k].y2) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

TEST_CASE("device image cache: a kept image is not read again and composes to the same bytes and boxes") {
  const auto dir = test::temp_dir("device-image-cache");
  const std::string data = write_copied_dataset(dir, 6);
  constexpr int kImgsz = 96;
  core::PluginManager pm;
  test::ComponentSetup setup;
  setup.imgsz = kImgsz;
  auto source = test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset",
                                                 {{"data", data}, {"split", "train"}, {"cache", "none"}}, setup);
  REQUIRE(source->size() == 6);
  std::vector<std::unique_ptr<Augmentation>> stages;
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective",
                                                      {{"others", "any"}}, setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup));
  stages.push_back(test::make_component<Augmentation>(pm, Kind::Augmentation, "flip", {{"flipud", 0.5}}, setup));
  std::vector<Augmentation*> chain;
  for (auto& a : stages) chain.push_back(a.get());

  core::DeviceImageStore store(torch::Device(torch::kCPU));
  core::StageSampleLoaders loaders(*source, chain, 11, kImgsz, 0);
  loaders.share_decoded_pixels(true);
  loaders.keep_source_images(&store, "imgsz 96");
  // Not open yet: nothing is kept.
  const Composed decoded = planned_batch(loaders, chain.size(), 6, kImgsz);
  CHECK(store.images() == 0);
  REQUIRE(store.open(core::DeviceImageStore::bytes_for(6, kImgsz)));
  const Composed filling = planned_batch(loaders, chain.size(), 6, kImgsz);
  CHECK(torch::equal(filling.pixels, decoded.pixels));
  CHECK(store.images() == 6);
  CHECK(store.bytes_used() > 0);
  CHECK(store.bytes_used() <= store.bytes_reserved());

  // The files gone: the kept images (a mosaic's other images too) still make the same batch.
  fs::remove_all(dir + "/images");
  const Composed kept = planned_batch(loaders, chain.size(), 6, kImgsz);
  CHECK(torch::equal(kept.pixels, decoded.pixels));
  CHECK(same_boxes(kept.boxes, decoded.boxes));
  CHECK(store.holds(loaders.load_source(0).image));

  // Another image size's key, or a chain that makes its pixels on the host: the source is asked,
  // and says the file is gone.
  core::StageSampleLoaders other_size(*source, chain, 11, kImgsz, 0);
  other_size.share_decoded_pixels(true);
  other_size.keep_source_images(&store, "imgsz 128");
  CHECK_THROWS(other_size.load_source(0));
  core::StageSampleLoaders on_host(*source, chain, 11, kImgsz, 0);
  on_host.keep_source_images(&store, "imgsz 96");
  CHECK_THROWS(on_host.load_source(0));
}

TEST_CASE("device image cache: full, it keeps what fits and the rest is decoded") {
  const auto dir = test::temp_dir("device-image-cache-full");
  const std::string data = write_copied_dataset(dir, 4);
  core::PluginManager pm;
  test::ComponentSetup setup;
  setup.imgsz = 64;
  auto source = test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset",
                                                 {{"data", data}, {"split", "train"}, {"cache", "none"}}, setup);
  // A block that cannot be allocated: a warning, nothing opened, and the images are decoded.
  core::DeviceImageStore too_big(torch::Device(torch::kCPU));
  CHECK_FALSE(too_big.open(std::size_t{1} << 60));
  CHECK_FALSE(too_big.opened());
  core::DeviceImageStore store(torch::Device(torch::kCPU));
  // Room for one image of 64 x 64 (coco's are 64 wide at most once resized).
  REQUIRE(store.open(core::DeviceImageStore::bytes_for(1, 64)));
  core::StageSampleLoaders loaders(*source, {}, 1, 64, 0);
  loaders.share_decoded_pixels(true);
  loaders.keep_source_images(&store, "k");
  for (std::size_t i = 0; i < 4; ++i) loaders.load_source(i);
  CHECK(store.images() == 1);
  CHECK(store.full());
  fs::remove_all(dir + "/images");
  CHECK(store.holds(loaders.load_source(0).image));
  CHECK_THROWS(loaders.load_source(1));
}

TEST_CASE("device image cache: its size leaves the step's memory, a margin and cuda_memory_fraction's cap") {
  constexpr std::size_t GiB = std::size_t{1} << 30;
  using Store = core::DeviceImageStore;
  // An 80 GiB device with 70 free and 6 reserved by the run: 70 - 8 (a tenth) = 62, at most 40.
  CHECK(Store::bytes_allowed(70 * GiB, 80 * GiB, 6 * GiB, 0.0) == 40 * GiB);
  // 30 free (another process holds the rest): 30 - 8.
  CHECK(Store::bytes_allowed(30 * GiB, 80 * GiB, 6 * GiB, 0.0) == 22 * GiB);
  // cuda_memory_fraction 0.25: a 20 GiB cap, 6 of it reserved, 14 - 2 (the 2 GiB floor).
  CHECK(Store::bytes_allowed(70 * GiB, 80 * GiB, 6 * GiB, 0.25) == 12 * GiB);
  // The run already holds its whole cap, or the device is nearly full: nothing.
  CHECK(Store::bytes_allowed(70 * GiB, 80 * GiB, 20 * GiB, 0.25) == 0);
  CHECK(Store::bytes_allowed(GiB, 80 * GiB, 6 * GiB, 0.0) == 0);
  // A fraction of 1 is no cap.
  CHECK(Store::bytes_allowed(30 * GiB, 80 * GiB, 6 * GiB, 1.0) == 22 * GiB);
}

TEST_CASE("train device_image_cache on: images kept from the second epoch, the same losses as decoding them") {
  const auto dir = test::temp_dir("device-image-cache-train");
  const std::string data = write_copied_dataset(dir, 6);
  test::write_file(dir + "/pipeline.json", R"({
  "name": "kept", "epochs": 3, "imgsz": 64, "seed": 0, "ordered": true, "device": "cpu", "workers": 2,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train", "cache": "none"}},
    "mosaic_perspective": {"plugin": "mosaic_perspective", "input": "source"},
    "hsv": {"plugin": "hsv", "input": "mosaic_perspective"},
    "flip": {"plugin": "flip", "input": "hsv"},
    "batch": {"plugin": "collate", "input": "flip", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml", "model": {"plugin": "yolo11", "params": {"scale": "n"}},
      "precision": {"plugin": "fp32"}, "scheduler": {"plugin": "linear"}, "val_every": 0, "augment_on": "device"}}
  }
})");
  std::vector<std::vector<double>> losses;
  for (const std::string cache : {"off", "on"}) {
    const std::string run = dir + "/run-" + cache;
    const auto r = test::run_cli("train " + dir + "/pipeline.json --run-dir " + run +
                                     " stages.train.params.device_image_cache=" + cache,
                                 "OMP_NUM_THREADS=1 ");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    if (cache == "on") {
      CHECK(r.output.find("device image cache: ") != std::string::npos);
      CHECK(r.output.find("device image cache: 6 images kept") != std::string::npos);
    } else {
      CHECK(r.output.find("device image cache") == std::string::npos);
    }
    const std::vector<double> l = test::epoch_losses(run);
    CHECK(l.size() == 9);
    losses.push_back(l);
  }
  CHECK(losses[0] == losses[1]);
}

TEST_CASE("device image cache on CUDA: the composer reads kept images where they are, the same bytes") {
  const torch::Device cuda(torch::kCUDA, 0);
  if (!test::composes_on_cuda(cuda)) return;
  core::PluginManager pm;
  test::ComponentSetup setup;
  setup.imgsz = 640;
  auto source = test::coco128_train_source(pm, setup);
  auto mosaic = test::make_component<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective", {{"others", "any"}}, setup);
  auto hsv = test::make_component<Augmentation>(pm, Kind::Augmentation, "hsv", json::object(), setup);
  std::vector<Augmentation*> chain{mosaic.get(), hsv.get()};
  core::DeviceImageStore store(cuda);
  core::StageSampleLoaders loaders(*source, chain, 5, 640, 0);
  loaders.share_decoded_pixels(true);
  loaders.keep_source_images(&store, "640");
  auto batch_of = [&] { return test::planned_batch(loaders, chain.size(), 16, 640); };
  // Decoded from the files (the store not open yet), composed on the host: the reference.
  const Batch from_files = batch_of();
  torch::Tensor on_host = torch::empty({16, 640, 640, 3}, torch::kUInt8);
  core::compose_on_host(*from_files.planned, 16, 640, 640, on_host.data_ptr<std::uint8_t>());
  REQUIRE(store.open(core::DeviceImageStore::bytes_for(source->size(), 640)));
  core::PixelComposer composer(cuda);
  composer.read_kept_images(&store);
  // Filling (some images already kept, a mosaic's other images among them), then all kept.
  const Batch filling = batch_of();
  CHECK(torch::equal(composer.compose(filling).cpu(), on_host));
  const Batch from_store = batch_of();
  REQUIRE(store.images() > 0);
  for (const cv::Mat& s : from_store.planned->sources) CHECK(store.holds(s));
  const std::size_t uploaded = composer.kept_images();
  CHECK(torch::equal(composer.compose(from_store).cpu(), on_host));
  CHECK(composer.kept_images() == uploaded);  // nothing uploaded
}
