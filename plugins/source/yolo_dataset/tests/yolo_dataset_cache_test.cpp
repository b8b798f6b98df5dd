// yolo_dataset's image caches, through the real plugin: RAM and disk caches give the same
// samples as plain loads, a RAM cache over its budget is left off, disk entries are reused,
// invalidated by file or parameter changes, and safe to fill from two sources at once.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<DataSource> open_source(plugin_test::PluginSet& pm, const json& params, int imgsz) {
  return plugin_test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", params, {imgsz, "source"});
}

void check_same_sample(const Sample& a, const Sample& b) {
  CHECK(a.path == b.path);
  REQUIRE(a.image.size() == b.image.size());
  CHECK(a.image.type() == b.image.type());
  CHECK(cv::norm(a.image, b.image, cv::NORM_INF) == 0);
  CHECK(a.geometry.original_width == b.geometry.original_width);
  CHECK(a.geometry.original_height == b.geometry.original_height);
  CHECK(a.geometry.ratio_x == b.geometry.ratio_x);
  CHECK(a.geometry.ratio_y == b.geometry.ratio_y);
  REQUIRE(a.boxes.size() == b.boxes.size());
  for (std::size_t i = 0; i < a.boxes.size(); ++i) {
    CHECK(a.boxes[i].cls == b.boxes[i].cls);
    CHECK(a.boxes[i].x1 == b.boxes[i].x1);
    CHECK(a.boxes[i].y2 == b.boxes[i].y2);
  }
}

// A small dataset of distinct images (each a different colour and size) in a temp folder.
std::string write_dataset(const std::string& tag, int n) {
  const std::string dir = test::temp_dir(tag);
  fs::create_directories(dir + "/images/train");
  fs::create_directories(dir + "/labels/train");
  test::write_file(dir + "/data.yaml", "train: images/train\nnames:\n  0: cat\n  1: dog\n");
  for (int i = 0; i < n; ++i) {
    cv::Mat im(200 + 10 * i, 300 - 7 * i, CV_8UC3, cv::Scalar(20 * i, 255 - 20 * i, 90));
    cv::circle(im, cv::Point(60 + i, 70), 30 + i, cv::Scalar(0, 0, 255), cv::FILLED);
    const std::string name = "im" + std::to_string(i);
    REQUIRE(cv::imwrite(dir + "/images/train/" + name + ".jpg", im));
    test::write_file(dir + "/labels/train/" + name + ".txt", std::to_string(i % 2) + " 0.5 0.5 0.2 0.3\n");
  }
  return dir;
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& f : fs::directory_iterator(dir)) out.push_back(f.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Overwrites the pixel bytes of a disk-cache entry with a constant, keeping its header: a
// later load returning that constant proves it came from the cache.
void tamper_pixels(const std::string& file, std::size_t pixel_bytes, unsigned char value) {
  const auto size = fs::file_size(file);
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(size - pixel_bytes));
  std::vector<char> v(pixel_bytes, static_cast<char>(value));
  f.write(v.data(), static_cast<std::streamsize>(v.size()));
}

}  // namespace

TEST_CASE("yolo_dataset cache 'ram' returns the same samples as uncached loads") {
  plugin_test::PluginSet pm;
  const std::string data = test::coco128_dir() + "/data.yaml";
  auto plain = open_source(pm, {{"data", data}}, 320);
  auto cached = open_source(pm, {{"data", data}, {"cache", "ram"}, {"cache_budget_gb", 1.0}}, 320);
  REQUIRE(cached->size() == plain->size());
  for (std::size_t i = 0; i < 12; ++i) {
    const Sample ref = plain->load(i);
    Sample first = cached->load(i);  // fills the slot
    check_same_sample(ref, first);
    first.image.setTo(cv::Scalar(1, 2, 3));  // an augmentation writing into its sample...
    check_same_sample(ref, cached->load(i));  // ...does not reach the cache
  }
  // A new imgsz at an epoch boundary drops the old entries.
  StageContext ctx;
  ctx.node = "source";
  ctx.imgsz = 160;
  cached->configure(plugin_test::checked_params(pm, Kind::Source, "yolo_dataset",
                                         {{"data", data}, {"cache", "ram"}, {"cache_budget_gb", 1.0}},
                                         "stages.source.params"),
                    ctx);
  auto plain160 = open_source(pm, {{"data", data}}, 160);
  for (std::size_t i = 0; i < 3; ++i) {
    const Sample s = cached->load(i);
    CHECK(std::max(s.image.cols, s.image.rows) == 160);
    check_same_sample(plain160->load(i), s);
  }
}

TEST_CASE("yolo_dataset cache 'ram' is filled safely from several threads") {
  plugin_test::PluginSet pm;
  const std::string data = test::coco128_dir() + "/data.yaml";
  auto plain = open_source(pm, {{"data", data}, {"split", "val"}}, 160);
  auto cached = open_source(pm, {{"data", data}, {"split", "val"}, {"cache", "ram"}}, 160);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (std::size_t i = 0; i < 16; ++i) cached->load(i);  // all threads race on each slot
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < 16; ++i) check_same_sample(plain->load(i), cached->load(i));
}

TEST_CASE("yolo_dataset cache 'ram' that does not fit its budget falls back to reading the files") {
  plugin_test::PluginSet pm;
  const std::string data = test::coco128_dir() + "/data.yaml";
  auto plain = open_source(pm, {{"data", data}}, 640);
  // As Ultralytics: not caching is no reason to stop; the samples are the files' as before.
  std::unique_ptr<DataSource> small;
  REQUIRE_NOTHROW(small = open_source(pm, {{"data", data}, {"cache", "ram"}, {"cache_budget_gb", 0.05}}, 640));
  for (std::size_t i = 0; i < 4; ++i) check_same_sample(plain->load(i), small->load(i));
  // The automatic budget (two thirds of the available memory) holds coco128 at 640 (0.1 GB).
  std::unique_ptr<DataSource> automatic;
  REQUIRE_NOTHROW(automatic = open_source(pm, {{"data", data}, {"cache", "ram"}}, 640));
  for (std::size_t i = 0; i < 4; ++i) check_same_sample(plain->load(i), automatic->load(i));
}

TEST_CASE("yolo_dataset cache 'disk' is reused by a second open and invalidated by mtime or imgsz") {
  plugin_test::PluginSet pm;
  const std::string dir = write_dataset("yolo-disk-cache", 3);
  const std::string data = dir + "/data.yaml";
  const std::string cache_dir = dir + "/.yoloflow_cache";  // the documented default
  const json params = {{"data", data}, {"cache", "disk"}};
  auto plain = open_source(pm, {{"data", data}}, 160);
  const Sample ref = plain->load(0);
  {
    auto first = open_source(pm, params, 160);
    check_same_sample(ref, first->load(0));
  }
  auto entries = files_in(cache_dir);
  REQUIRE(entries.size() == 1);
  const std::size_t pixel_bytes = ref.image.total() * 3;
  tamper_pixels(entries[0], pixel_bytes, 77);

  auto second = open_source(pm, params, 160);
  const Sample hit = second->load(0);
  REQUIRE(hit.image.size() == ref.image.size());
  CHECK(cv::norm(hit.image, cv::Mat(ref.image.size(), CV_8UC3, cv::Scalar::all(77)), cv::NORM_INF) == 0);
  CHECK(hit.geometry.original_width == ref.geometry.original_width);
  CHECK(hit.boxes.size() == ref.boxes.size());

  SUBCASE("a new modification time misses and writes a new entry") {
    const std::string image = ref.path;
    fs::last_write_time(image, fs::last_write_time(image) + std::chrono::seconds(5));
    check_same_sample(ref, second->load(0));
    CHECK(files_in(cache_dir).size() == 2);
  }
  SUBCASE("another imgsz misses") {
    auto at320 = open_source(pm, params, 320);
    const Sample s = at320->load(0);
    check_same_sample(open_source(pm, {{"data", data}}, 320)->load(0), s);
    CHECK(files_in(cache_dir).size() == 2);
  }
  SUBCASE("another interpolation misses") {
    json other = params;
    other["shrink_interpolation"] = other.value("shrink_interpolation", "linear") == "area" ? "linear" : "area";
    const Sample s = open_source(pm, other, 160)->load(0);
    CHECK(cv::norm(s.image, cv::Mat(s.image.size(), CV_8UC3, cv::Scalar::all(77)), cv::NORM_INF) > 0);
    CHECK(files_in(cache_dir).size() == 2);
  }
}

TEST_CASE("yolo_dataset cache 'disk' filled by two sources at once holds correct entries") {
  plugin_test::PluginSet pm;
  const int n = 8;
  const std::string dir = write_dataset("yolo-disk-race", n);
  const std::string data = dir + "/data.yaml";
  const std::string cache_dir = test::temp_dir("yolo-disk-race-cache");
  const json params = {{"data", data}, {"cache", "disk"}, {"cache_dir", cache_dir}};
  auto plain = open_source(pm, {{"data", data}}, 128);
  auto a = open_source(pm, params, 128);
  auto b = open_source(pm, params, 128);
  std::vector<Sample> ref;
  for (int i = 0; i < n; ++i) ref.push_back(plain->load(i));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    DataSource* src = (t % 2) ? a.get() : b.get();
    threads.emplace_back([&, src, t] {
      for (int round = 0; round < 3; ++round) {
        for (int k = 0; k < n; ++k) {
          const int i = (t % 2) ? k : n - 1 - k;  // opposite orders meet in the middle
          const Sample s = src->load(i);
          if (s.image.size() != ref[i].image.size() || cv::norm(s.image, ref[i].image, cv::NORM_INF) != 0)
            ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(mismatches == 0);
  const auto entries = files_in(cache_dir);
  CHECK(entries.size() == static_cast<std::size_t>(n));  // one per image, no temporary files left
  for (const auto& e : entries) CHECK(fs::path(e).extension() == ".yfimg");
  auto c = open_source(pm, params, 128);
  for (int i = 0; i < n; ++i) check_same_sample(ref[i], c->load(i));
}

TEST_CASE("yolo_dataset cache 'disk' reports a cache folder it cannot create") {
  plugin_test::PluginSet pm;
  const std::string dir = write_dataset("yolo-disk-bad", 1);
  test::write_file(dir + "/blocker", "a file, not a folder\n");
  CHECK_THROWS_WITH_AS(open_source(pm, {{"data", dir + "/data.yaml"}, {"cache", "disk"}, {"cache_dir", dir + "/blocker/cache"}}, 128),
                       doctest::Contains("stages.source.params.cache_dir"), InvalidInput);
}

TEST_CASE("yolo_dataset cache_fill 'eager' decodes every image at configure time") {
  plugin_test::PluginSet pm;
  const int n = 5;
  const std::string dir = write_dataset("yolo-eager", n);
  const std::string data = dir + "/data.yaml";
  auto plain = open_source(pm, {{"data", data}}, 128);
  std::vector<Sample> ref;
  for (int i = 0; i < n; ++i) ref.push_back(plain->load(i));
  auto eager = open_source(pm, {{"data", data}, {"cache", "ram"}, {"cache_fill", "eager"}}, 128);
  // The files are gone: every load must come from memory.
  yoloflow::test::remove_tree(dir + "/images");
  for (int i = 0; i < n; ++i) check_same_sample(ref[i], eager->load(i));
  CHECK_THROWS_AS(plain->load(0), Error);  // the uncached source cannot
}
