// Hostile files and folders through the CLI: files larger than any of their kind (sparse, so no
// disk is used), headers declaring images far over the decoder's limit in every format OpenCV
// reads, folders that loop through symbolic links, a data.yaml that is a loop of links or points
// into /proc, values of the wrong type in a data.yaml, the smallest valid images, and a signal
// during a long listing. Each gets one clear line and a meaningful exit code, in bounded memory
// and time; a refused command leaves nothing behind.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "support/image_headers.h"
#include "support/paths.h"
#include "support/output_checks.h"
#include "support/run_cli.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;
using test::count;
using test::check_no_internals;
using test::seconds_since;

// The CLI under a 4 GB address-space limit: reading any of these files whole, or decoding any of
// these images, would not fit.
test::CliResult run_bounded(const std::string& args) {
  return test::run_shell("ulimit -v 4000000; " + test::cli() + " " + args);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// A file of `size` bytes starting with `head`, the rest a hole: no disk is used for it.
void write_sparse(const std::string& path, const std::string& head, long long size) {
  write_bytes(path, head);
  REQUIRE(::truncate(path.c_str(), size) == 0);
}

// A small image of `width` x `height` in `ext`'s format.
void write_image(const std::string& path, int width, int height, const std::string& ext) {
  cv::Mat img(height, width, CV_8UC3, cv::Scalar(40, 120, 200));
  std::vector<unsigned char> bytes;
  REQUIRE(cv::imencode(ext, img, bytes));
  write_bytes(path, std::string(bytes.begin(), bytes.end()));
}

// An Ultralytics-layout dataset in `dir` with `n` small good images (96x64, with labels) in
// images/train, of 80 classes as the checkpoint predict and val read; returns its data.yaml.
std::string small_dataset(const std::string& dir, int n) {
  for (int i = 0; i < n; ++i) {
    write_image(dir + "/images/train/good" + std::to_string(i) + ".jpg", 96, 64, ".jpg");
    test::write_file(dir + "/labels/train/good" + std::to_string(i) + ".txt", "0 0.5 0.5 0.4 0.4\n");
  }
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: images/train\nval: images/train\nnc: 80\n");
  return dir + "/data.yaml";
}

// yolo_dataset -> letterbox -> collate -> throughput at 64 px: reads every image once.
std::string inspect_pipeline(const std::string& dir, const std::string& data) {
  const std::string path = dir + "/inspect.json";
  test::write_file(path, R"({"name": "inspect", "imgsz": 64, "workers": 1, "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": ")" + data + R"("}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "sink": {"plugin": "throughput", "input": "batch"}}})");
  return path;
}

// Ultralytics' own checkpoint: weights `yoloflow predict` reads without a training first.
std::string weights() { return test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-best.pt"; }

std::string predict_args(const std::string& source, const std::string& out) {
  return "predict --weights " + weights() + " --source " + source + " --out " + out + " --imgsz 64 --device cpu";
}

}  // namespace

TEST_CASE("hostile files: a 2 GiB sparse .jpg is refused unread by training and predict, in bounded memory") {
  const std::string dir = test::temp_dir("hostile-2gib");
  const std::string data = small_dataset(dir, 2);
  write_sparse(dir + "/images/train/huge.jpg", test::jpeg_of_size(640, 480), 2LL << 30);
  const auto start = std::chrono::steady_clock::now();
  auto run = run_bounded("run " + inspect_pipeline(dir, data));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, dir + "/images/train/huge.jpg: image file too large (it holds 2147483648 bytes, more than "
                                   "the 1073741824 bytes an image file may hold) -> skipped image"));
  check_no_internals(run.output);

  auto predict = run_bounded(predict_args(dir + "/images/train", dir + "/predict"));
  INFO(predict.output);
  CHECK(predict.exit_code == 0);
  CHECK(contains(predict.output, "huge.jpg: skipped: image file too large (it holds 2147483648 bytes"));
  CHECK(contains(predict.output, "good1.jpg: 96x64, "));
  check_no_internals(predict.output);
  CHECK(seconds_since(start) < 120);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: a 6 GiB image list without a newline is refused at its first line, unread") {
  const std::string dir = test::temp_dir("hostile-6gib-list");
  small_dataset(dir, 1);
  write_sparse(dir + "/train.txt", "images/train/", 6LL << 30);
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: train.txt\nval: train.txt\nnames: [thing]\n");
  const auto start = std::chrono::steady_clock::now();
  auto run = run_bounded("run " + inspect_pipeline(dir, dir + "/data.yaml") + " --run-dir " + dir + "/run");
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(contains(run.output, "image list '" + dir + "/train.txt' has a line 1 longer than 4096 bytes: it is not an image list"));
  CHECK_FALSE(contains(run.output, "0 image files found"));
  CHECK_FALSE(fs::exists(dir + "/run"));
  check_no_internals(run.output);

  // predict reads a list the same way.
  auto predict = run_bounded(predict_args(dir + "/train.txt", dir + "/predict"));
  INFO(predict.output);
  CHECK(predict.exit_code == 2);
  CHECK(contains(predict.output, "--source " + dir + "/train.txt has a line 1 longer than 4096 bytes"));
  CHECK_FALSE(fs::exists(dir + "/predict"));
  check_no_internals(predict.output);
  CHECK(seconds_since(start) < 60);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: headers declaring 300 megapixels are refused before decoding, in every format OpenCV reads") {
  const std::string dir = test::temp_dir("hostile-headers");
  const std::string data = small_dataset(dir, 2);
  const std::uint32_t w = 20000, h = 15000;
  // The dataset lists image extensions; the format is told by the bytes, as OpenCV tells it.
  const std::vector<std::pair<std::string, std::string>> files = {
      {"jpeg.jpg", test::jpeg_of_size(w, h)},    {"png.png", test::png_of_size(w, h)},
      {"bmp.bmp", test::bmp_of_size(w, h)},      {"tiff.tif", test::tiff_of_size(w, h)},
      {"webp.webp", test::webp_of_size(w, h)},   {"ppm.jpg", test::ppm_of_size(w, h)},
      {"pam.jpg", test::pam_of_size(w, h)},      {"pfm.jpg", test::pfm_of_size(w, h)},
      {"sun.bmp", test::sun_raster_of_size(w, h)}, {"hdr.png", test::hdr_of_size(w, h)},
      {"jp2.tif", test::jp2_of_size(w, h)},      {"j2k.jpg", test::j2k_of_size(w, h)},
      {"exr.png", test::exr_of_size(w, h)}};
  for (const auto& [name, bytes] : files) write_bytes(dir + "/images/train/" + name, bytes);
  const std::string refusal = "image too large: 20000x15000 pixels (300 megapixels), over the 179-megapixel limit";
  const auto start = std::chrono::steady_clock::now();

  auto run = run_bounded("run " + inspect_pipeline(dir, data));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, std::to_string(files.size()) + " image too large;"));
  CHECK(contains(run.output, "2 samples of 2 images"));
  check_no_internals(run.output);

  auto predict = run_bounded(predict_args(dir + "/images/train", dir + "/predict"));
  INFO(predict.output);
  CHECK(predict.exit_code == 0);
  for (const auto& [name, bytes] : files) {
    CHECK_MESSAGE(contains(predict.output, name + ": skipped: " + refusal), name);
  }
  CHECK(count(predict.output, refusal) == files.size());
  check_no_internals(predict.output);
  CHECK(seconds_since(start) < 120);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: symbolic link loops in image folders list each image once") {
  const std::string dir = test::temp_dir("hostile-link-loops");
  const std::string data = small_dataset(dir, 4);
  const std::string images = dir + "/images/train";
  fs::create_directory_symlink(".", images + "/again");        // the folder itself
  fs::create_directory_symlink("..", images + "/up");           // its parent, which holds it
  fs::create_symlink("loop-b.jpg", images + "/loop-a.jpg");    // two links naming each other
  fs::create_symlink("loop-a.jpg", images + "/loop-b.jpg");
  fs::create_directory(images + "/deeper");
  fs::create_directory_symlink("../..", images + "/deeper/back");
  const auto start = std::chrono::steady_clock::now();

  auto run = run_bounded("run " + inspect_pipeline(dir, data));
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.output, "4 samples of 4 images"));
  CHECK(contains(run.output, images + "/loop-a.jpg: not listed: a loop of symbolic links"));
  CHECK(contains(run.output, images + "/again: not listed: the folder " + images + " again (a folder is listed once)"));
  check_no_internals(run.output);

  // The validation split reads the same folder through the same listing.
  auto val = run_bounded("val --weights " + weights() + " --data " + data + " --split val --imgsz 64 --device cpu --out " +
                         dir + "/val");
  INFO(val.output);
  CHECK(val.exit_code == 0);
  CHECK(contains(val.output, "4 samples of 4 images"));
  check_no_internals(val.output);

  auto predict = run_bounded(predict_args(images, dir + "/predict"));
  INFO(predict.output);
  CHECK(predict.exit_code == 0);
  CHECK(contains(predict.output, "loop-a.jpg: skipped: unreadable file (it is a loop of symbolic links)"));
  CHECK(count(predict.output, ": 96x64, ") == 4);
  check_no_internals(predict.output);
  CHECK(seconds_since(start) < 120);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: a data.yaml that is a loop of links, or whose path is /proc, is refused in one line") {
  const std::string dir = test::temp_dir("hostile-data-yaml");
  small_dataset(dir, 1);
  fs::create_symlink("b.yaml", dir + "/a.yaml");
  fs::create_symlink("a.yaml", dir + "/b.yaml");
  auto loop = run_bounded("run " + inspect_pipeline(dir, dir + "/a.yaml") + " --run-dir " + dir + "/run");
  INFO(loop.output);
  CHECK(loop.exit_code == 2);
  CHECK(contains(loop.output, dir + "/a.yaml is a loop of symbolic links"));
  CHECK_FALSE(contains(loop.output, "does not exist"));
  CHECK_FALSE(fs::exists(dir + "/run"));
  check_no_internals(loop.output);

  // /proc/self/cwd is the command's own folder: listing it would read the run's own files.
  test::write_file(dir + "/proc.yaml", "path: /proc\ntrain: self/cwd\nval: self/cwd\nnames: [thing]\n");
  auto proc = run_bounded("run " + inspect_pipeline(dir, dir + "/proc.yaml") + " --run-dir " + dir + "/run");
  INFO(proc.output);
  CHECK(proc.exit_code == 2);
  CHECK(contains(proc.output, "data.yaml '" + dir + "/proc.yaml': 'path' /proc is on a pseudo file system (proc), which holds no dataset"));
  CHECK_FALSE(fs::exists(dir + "/run"));
  check_no_internals(proc.output);

  // A split given as an absolute folder of /proc, the path left out.
  test::write_file(dir + "/sys.yaml", "train: /proc/self/cwd\nval: /proc/self/cwd\nnames: [thing]\n");
  auto sys = run_bounded("run " + inspect_pipeline(dir, dir + "/sys.yaml") + " --run-dir " + dir + "/run");
  INFO(sys.output);
  CHECK(sys.exit_code == 2);
  CHECK(contains(sys.output, "split 'train': '/proc/self/cwd' is on a pseudo file system (proc), which holds no files to read"));
  CHECK_FALSE(fs::exists(dir + "/run"));
  check_no_internals(sys.output);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: a data.yaml value of the wrong type is named with its file, key and line") {
  const std::string dir = test::temp_dir("hostile-yaml-types");
  small_dataset(dir, 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"names: 5\n", "'names' (line 3) must be a list or a map {id: name}, not '5'"},
      {"names: [thing]\nnc: abc\n", "'nc' (line 4) must be a whole number, not 'abc'"},
      {"names: [thing]\ntrain: [1, {a: b}]\n", "'train' entry 1 (line 4) must be a path, not a mapping"},
      {"names: {[a]: b}\n", "'names' key (line 3) must be a whole number, not a list"},
      {"names: [[a]]\n", "'names' entry 0 (line 3) must be a class name, not a list"},
      {"path: [a]\nnames: [thing]\n", "'path' (line 2) must be a folder, not a list"}};
  for (const auto& [yaml, message] : cases) {
    const bool path_given = yaml.rfind("path:", 0) == 0;
    test::write_file(dir + "/d.yaml", (path_given ? "" : "path: " + dir + "\n") + "val: images/train\n" + yaml +
                                          (yaml.find("train:") == std::string::npos ? "train: images/train\n" : ""));
    auto r = run_bounded("validate " + inspect_pipeline(dir, dir + "/d.yaml"));
    INFO(yaml, r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "data.yaml '" + dir + "/d.yaml': " + message));
    check_no_internals(r.output);
  }
  test::remove_tree(dir);
}

TEST_CASE("hostile files: 1x1 and 7x7 images are valid images and train") {
  const std::string dir = test::temp_dir("hostile-tiny-images");
  for (const auto& [name, side, ext] : std::vector<std::tuple<std::string, int, std::string>>{
           {"one", 1, ".png"}, {"seven", 7, ".png"}, {"one-jpeg", 1, ".jpg"}, {"seven-jpeg", 7, ".jpg"}}) {
    write_image(dir + "/images/train/" + name + ext, side, side, ext);
    test::write_file(dir + "/labels/train/" + name + ".txt", "0 0.5 0.5 0.8 0.8\n");
  }
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: images/train\nval: images/train\nnames: [thing]\n");
  auto r = test::train_coco128_cpu(dir + "/data.yaml", dir + "/run", "epochs=1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "4 samples of 4 images"));
  CHECK_FALSE(contains(r.output, "corrupt image"));
  CHECK(fs::exists(dir + "/run/weights/last.pt"));
  check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("hostile files: the first SIGTERM during a long dataset listing ends the command promptly") {
  const std::string dir = test::temp_dir("hostile-sigterm-listing");
  // Many small valid images: listing and checking them takes far longer than the command may
  // take to stop.
  cv::Mat img(8, 8, CV_8UC3, cv::Scalar(1, 2, 3));
  std::vector<unsigned char> png;
  REQUIRE(cv::imencode(".png", img, png));
  const std::string bytes(png.begin(), png.end());
  fs::create_directories(dir + "/images/train");
  for (int i = 0; i < 40000; ++i) std::ofstream(dir + "/images/train/" + std::to_string(i) + ".png", std::ios::binary) << bytes;
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: images/train\nval: images/train\nnames: [thing]\n");
  const std::string pipeline = inspect_pipeline(dir, dir + "/data.yaml");
  // The shell waits until the command handles SIGTERM (its mask of caught signals in /proc),
  // lets it list for a moment (0.1 s: on a fast disk the whole listing takes under half a
  // second), sends one SIGTERM and times the exit.
  const std::string script =
      test::cli() + " run " + pipeline + " --run-dir " + dir + "/run > " + dir + "/out.txt 2>&1 & pid=$!\n"
      "for i in $(seq 1 600); do\n"
      "  mask=$(awk '/^SigCgt/ {print $2}' /proc/$pid/status 2>/dev/null)\n"
      "  [ -n \"$mask\" ] && [ $(( 0x$mask & 0x4000 )) -ne 0 ] && break\n"
      "  sleep 0.05\n"
      "done\n"
      "sleep 0.1\n"
      "start=$(date +%s%N); kill -TERM $pid; wait $pid; rc=$?; end=$(date +%s%N)\n"
      "echo \"rc=$rc ms=$(( (end - start) / 1000000 ))\"\n";
  test::write_file(dir + "/signal.sh", script);
  auto r = test::run_shell("bash " + dir + "/signal.sh");
  const std::string out = test::read_file(dir + "/out.txt");
  INFO(r.output, out);
  CHECK(contains(r.output, "rc=130 "));
  const auto ms = std::stol(r.output.substr(r.output.find("ms=") + 3));
  CHECK(ms < 5000);
  CHECK(contains(out, "interrupted by SIGTERM while "));
  CHECK(count(out, "error: ") == 1);
  CHECK_FALSE(fs::exists(dir + "/run"));
  check_no_internals(out);
  test::remove_tree(dir);
}
