// yolo_dataset, loaded as a real plugin library: coco128's known quirks reported exactly,
// a synthetic dataset with every kind of bad data, and load()'s pixels and boxes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/run_cli.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<DataSource> make_source(plugin_test::PluginSet& pm, const json& params,
                                        int imgsz = 640) {
  return plugin_test::make_component<DataSource>(pm, Kind::Source, "yolo_dataset", params, {imgsz, "source"});
}

// "path | problem category | action" for every issue, sorted, for exact comparison.
std::vector<std::string> issue_rows(const std::vector<DataIssue>& issues, std::size_t prefix_len) {
  std::vector<std::string> rows;
  for (const auto& i : issues) rows.push_back(i.path.substr(prefix_len) + " | " + i.problem + " | " + i.action);
  std::sort(rows.begin(), rows.end());
  return rows;
}

bool has_issue(const std::vector<DataIssue>& issues, const std::string& path_suffix,
               const std::string& problem_start, const std::string& action) {
  for (const auto& i : issues) {
    if (i.path.size() >= path_suffix.size() &&
        i.path.compare(i.path.size() - path_suffix.size(), path_suffix.size(), path_suffix) == 0 &&
        i.problem.compare(0, problem_start.size(), problem_start) == 0 && i.action == action) {
      return true;
    }
  }
  return false;
}

std::size_t count_lines(const std::string& path) {
  std::ifstream f(path);
  std::size_t n = 0;
  for (std::string line; std::getline(f, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) ++n;
  }
  return n;
}

// A real JPEG, encoded in memory.
std::vector<uchar> jpeg_bytes(int w, int h) {
  cv::Mat im(h, w, CV_8UC3, cv::Scalar(40, 120, 200));
  cv::rectangle(im, cv::Rect(w / 4, h / 4, w / 2, h / 2), cv::Scalar(0, 0, 255), cv::FILLED);
  std::vector<uchar> buf;
  cv::imencode(".jpg", im, buf);
  return buf;
}

void write_bytes(const std::string& path, const std::vector<uchar>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("yolo_dataset reports coco128's quirks exactly: 2 background images, 2 orphan labels") {
  // 128 usable images: the two without label file are kept as backgrounds (as Ultralytics does).
  plugin_test::PluginSet pm;
  const std::string root = test::coco128_dir();
  auto src = make_source(pm, {{"data", root + "/data.yaml"}, {"split", "train"}});
  CHECK(src->size() == 128);
  const auto info = src->info();
  CHECK(info.images == 128);
  REQUIRE(info.names.size() == 80);
  CHECK(info.names[0] == "person");
  CHECK(info.names[79] == "toothbrush");
  CHECK(fs::equivalent(info.root, root));
  // Every line of every label file that has an image (929 boxes: Ultralytics' count).
  std::size_t lines = 0;
  for (const auto& f : fs::directory_iterator(root + "/labels/train2017")) {
    const auto stem = f.path().stem().string();
    if (fs::exists(root + "/images/train2017/" + stem + ".jpg")) lines += count_lines(f.path().string());
  }
  CHECK(lines == 929);
  CHECK(info.boxes == 929);

  const auto rows = issue_rows(src->issues(), fs::path(info.root).string().size());
  const std::vector<std::string> expected = {
      "/images/train2017/000000000250.jpg | no label file (looked for " + info.root +
          "/labels/train2017/000000000250.txt) | kept as background image",
      "/images/train2017/000000000508.jpg | no label file (looked for " + info.root +
          "/labels/train2017/000000000508.txt) | kept as background image",
      "/labels/train2017/000000000656.txt | label file without image | ignored",
      "/labels/train2017/000000000659.txt | label file without image | ignored",
  };
  CHECK(rows == expected);
}

TEST_CASE("yolo_dataset reads coco128's val split without issues") {
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", test::coco128_dir() + "/data.yaml"}, {"split", "val"}});
  CHECK(src->size() == 128);
  CHECK(src->issues().empty());
  CHECK(src->info().boxes == 898);
}

TEST_CASE("yolo_dataset load() resizes the long side to imgsz and maps boxes to its pixels") {
  plugin_test::PluginSet pm;
  const std::string root = test::coco128_dir();
  auto src = make_source(pm, {{"data", root + "/data.yaml"}}, 320);
  // Sorted order: index 1 is 000000000025.jpg, 640x426, two giraffes.
  const Sample s = src->load(1);
  CHECK(fs::path(s.path).filename() == "000000000025.jpg");
  CHECK(s.index == 1);
  CHECK(s.image.cols == 320);
  CHECK(s.image.rows == 213);  // ceil(426 * 0.5)
  CHECK(s.image.type() == CV_8UC3);
  CHECK(s.image.isContinuous());
  CHECK(s.geometry.original_width == 640);
  CHECK(s.geometry.original_height == 426);
  CHECK(s.geometry.ratio_x == doctest::Approx(0.5));
  CHECK(s.geometry.ratio_y == doctest::Approx(213.0 / 426.0));
  REQUIRE(s.boxes.size() == 2);
  // Label line 1: 23 0.770336 0.489695 0.335891 0.697559
  CHECK(s.boxes[0].cls == 23);
  CHECK(s.boxes[0].x1 == doctest::Approx((0.770336 - 0.335891 / 2) * 320).epsilon(1e-5));
  CHECK(s.boxes[0].x2 == doctest::Approx((0.770336 + 0.335891 / 2) * 320).epsilon(1e-5));
  CHECK(s.boxes[0].y1 == doctest::Approx((0.489695 - 0.697559 / 2) * 213).epsilon(1e-5));
  CHECK(s.boxes[0].y2 == doctest::Approx((0.489695 + 0.697559 / 2) * 213).epsilon(1e-5));
  // The pixels are the file's, shrunk with linear interpolation as Ultralytics 8.4 shrinks them
  // (its validation numbers depend on it); 'area' on request.
  cv::Mat original = cv::imread(s.path, cv::IMREAD_COLOR), expected;
  cv::resize(original, expected, cv::Size(320, 213), 0, 0, cv::INTER_LINEAR);
  CHECK(cv::norm(expected, s.image, cv::NORM_INF) == 0);
  const Sample area = make_source(pm, {{"data", root + "/data.yaml"}, {"shrink_interpolation", "area"}}, 320)->load(1);
  cv::resize(original, expected, cv::Size(320, 213), 0, 0, cv::INTER_AREA);
  CHECK(cv::norm(expected, area.image, cv::NORM_INF) == 0);

  // Enlarging: imgsz 1280 doubles a 640-wide image.
  auto big = make_source(pm, {{"data", root + "/data.yaml"}}, 1280);
  const Sample b = big->load(1);
  CHECK(b.image.cols == 1280);
  CHECK(b.image.rows == 852);
  CHECK(b.boxes[1].x2 == doctest::Approx((0.185977 + 0.206297 / 2) * 1280).epsilon(1e-5));
}

TEST_CASE("yolo_dataset load() is safe to call from several threads") {
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", test::coco128_dir() + "/data.yaml"}, {"split", "val"}}, 160);
  std::vector<std::size_t> boxes(16, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < 16; i += 4) boxes[i] = src->load(i).boxes.size();
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < 16; ++i) CHECK(boxes[i] == src->load(i).boxes.size());
}

TEST_CASE("yolo_dataset survives every kind of bad data and names each problem") {
  const std::string dir = test::temp_dir("yolo-bad");
  const std::string img = dir + "/images/train/", lbl = dir + "/labels/train/";
  fs::create_directories(img);
  fs::create_directories(lbl);
  // Names as a map, nc agreeing; val is a .txt list with a missing entry.
  test::write_file(dir + "/data.yaml",
                   "train: images/train\nval: val.txt\nnc: 3\nnames:\n  0: cat\n  1: dog\n  2: bird\n");
  cv::Mat good(80, 100, CV_8UC3, cv::Scalar(10, 20, 30));
  REQUIRE(cv::imwrite(img + "good1.jpg", good));
  test::write_file(lbl + "good1.txt", "0 0.5 0.5 0.2 0.2\n1 0.25 0.25 0.1 0.1\n");
  REQUIRE(cv::imwrite(img + "good2.png", good));
  test::write_file(lbl + "good2.txt",
                   "2 0.5 0.5 0.4 0.4\n"          // 1 good
                   "1 0.5 0.5 0.2\n"              // 2 wrong field count
                   "1 0.5 zero 0.2 0.2\n"         // 3 non-numeric
                   "-1 0.5 0.5 0.2 0.2\n"         // 4 negative class
                   "3 0.5 0.5 0.2 0.2\n"          // 5 class out of range (nc 3)
                   "1.5 0.5 0.5 0.2 0.2\n"        // 6 fractional class
                   "0 0.98 0.5 0.1 0.2\n"         // 7 partly outside: clipped
                   "0 1.5 0.5 0.2 0.2\n"          // 8 entirely outside: dropped
                   "0 0.5 0.5 0 0.2\n"            // 9 zero width: dropped
                   "2 0.5 0.5 0.4 0.4\n"          // 10 duplicate of line 1
                   "\n"                            // 11 blank: ignored
                   "1 0.1 0.1 0.3 0.1 0.3 0.4\n"  // 12 polygon -> box
                   "0 1.00000048 0.5 0.1 0.1\n"); // 13 partly outside (x2 1.05): clipped
  REQUIRE(cv::imwrite(img + "background.jpg", good));                  // no label file
  REQUIRE(cv::imwrite(img + "empty_label.jpg", good));
  test::write_file(lbl + "empty_label.txt", "");                         // explicit background
  auto jpg = jpeg_bytes(64, 48);
  write_bytes(img + "truncated.jpg", std::vector<uchar>(jpg.begin(), jpg.begin() + jpg.size() / 2));
  test::write_file(lbl + "truncated.txt", "0 0.5 0.5 0.2 0.2\n");
  test::write_file(img + "text.jpg", "this is a text file, not a JPEG\n");
  std::vector<uchar> garbage = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00};
  for (int i = 0; i < 200; ++i) garbage.push_back(static_cast<uchar>(i * 7));
  garbage.push_back(0xFF);
  garbage.push_back(0xD9);
  write_bytes(img + "corrupt.jpg", garbage);
  test::write_file(img + "empty.jpg", "");
  test::write_file(lbl + "orphan.txt", "0 0.5 0.5 0.1 0.1\n");
  test::write_file(img + "notes.md", "not an image extension: ignored\n");

  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "train"}}, 100);
  // good1, good2, background, empty_label.
  CHECK(src->size() == 4);
  const auto info = src->info();
  CHECK(info.names == std::vector<std::string>{"cat", "dog", "bird"});
  const auto issues = src->issues();
  std::string listed;
  for (const auto& i : issues) listed += i.path + ": " + i.problem + " -> " + i.action + "\n";
  INFO(listed);
  CHECK(has_issue(issues, "images/train/truncated.jpg", "truncated image", "skipped image"));
  CHECK(has_issue(issues, "images/train/text.jpg", "not an image", "skipped image"));
  CHECK(has_issue(issues, "images/train/corrupt.jpg", "corrupt image", "skipped image"));
  CHECK(has_issue(issues, "images/train/empty.jpg", "empty file", "skipped image"));
  CHECK(has_issue(issues, "images/train/background.jpg", "no label file", "kept as background image"));
  CHECK(has_issue(issues, "labels/train/orphan.txt", "label file without image", "ignored"));
  CHECK(has_issue(issues, "good2.txt", "bad label line 2: expected 5 values", "dropped line"));
  CHECK(has_issue(issues, "good2.txt", "bad label line 3: 'zero' is not a number", "dropped line"));
  CHECK(has_issue(issues, "good2.txt", "bad label line 4: class -1 out of range", "dropped line"));
  CHECK(has_issue(issues, "good2.txt", "bad label line 5: class 3 out of range", "dropped line"));
  CHECK(has_issue(issues, "good2.txt", "bad label line 6: class '1.5' is not an integer", "dropped line"));
  CHECK(has_issue(issues, "good2.txt", "box partly outside image on line 7", "clipped box"));
  CHECK(has_issue(issues, "good2.txt", "box outside image on line 8", "dropped box"));
  CHECK(has_issue(issues, "good2.txt", "degenerate box on line 9", "dropped box"));
  CHECK(has_issue(issues, "good2.txt", "duplicate box on line 10 (same as line 1)", "removed duplicate"));
  CHECK(has_issue(issues, "good2.txt", "box partly outside image on line 13", "clipped box"));
  // Nothing else: 6 image/file problems + 10 label problems; empty_label.txt is a quiet background.
  // Line 12 is an outline: the file's box lines (1, 7, 13) are named, as Ultralytics would read
  // them as outlines once one line of the file is one.
  CHECK(has_issue(issues, "good2.txt", "box line in a polygon file on line 13", "kept box without outline"));
  CHECK(issues.size() == 19);
  // truncated.txt pairs with an (unusable) image: not an orphan.
  CHECK_FALSE(has_issue(issues, "truncated.txt", "label file without image", "ignored"));
  // good1 (2) + good2 (line 1, 7 clipped, 12 polygon, 13 clipped) boxes.
  CHECK(info.boxes == 6);

  // Sorted order: background, empty_label, good1, good2.
  const Sample g2 = src->load(3);
  CHECK(fs::path(g2.path).filename() == "good2.png");
  REQUIRE(g2.boxes.size() == 4);
  // Line 7 clipped to the right edge: x 0.93..1.0 of 100 px.
  CHECK(g2.boxes[1].x1 == doctest::Approx(93.0));
  CHECK(g2.boxes[1].x2 == doctest::Approx(100.0));
  // Line 12: polygon (0.1,0.1) (0.3,0.1) (0.3,0.4) -> box 10..30 x 8..32 (80 px high).
  CHECK(g2.boxes[2].cls == 1);
  CHECK(g2.boxes[2].x1 == doctest::Approx(10.0));
  CHECK(g2.boxes[2].x2 == doctest::Approx(30.0));
  CHECK(g2.boxes[2].y1 == doctest::Approx(8.0));
  CHECK(g2.boxes[2].y2 == doctest::Approx(32.0));
  CHECK(src->load(0).boxes.empty());

  // The val list names a missing image: an issue, the rest still loads.
  fs::create_directories(dir + "/images/val");
  REQUIRE(cv::imwrite(dir + "/images/val/v1.jpg", good));
  test::write_file(dir + "/labels/val/v1.txt", "1 0.5 0.5 0.5 0.5\n");
  test::write_file(dir + "/val.txt", "images/val/v1.jpg\n./images/val/missing.jpg\n");
  auto val = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "val"}});
  CHECK(val->size() == 1);
  const auto vi = val->issues();
  REQUIRE(vi.size() == 1);
  CHECK(vi[0].path == dir + "/images/val/missing.jpg");
  CHECK(vi[0].problem.rfind("image missing (listed in " + dir + "/val.txt)", 0) == 0);
  CHECK(vi[0].action == "skipped");
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yolo_dataset splits listed in .txt files may share one folder without orphan reports") {
  const std::string dir = test::temp_dir("yolo-lists");
  test::write_file(dir + "/data.yaml", "train: train.txt\nval: [val.txt]\nnames: [a, b]\n");
  fs::create_directories(dir + "/images");
  cv::Mat im(40, 60, CV_8UC3, cv::Scalar(5, 5, 5));
  for (const char* name : {"t1", "t2", "v1"}) {
    REQUIRE(cv::imwrite(dir + "/images/" + name + ".jpg", im));
    test::write_file(dir + "/labels/" + std::string(name) + ".txt", "1 0.5 0.5 0.5 0.5\n");
  }
  test::write_file(dir + "/labels/gone.txt", "0 0.5 0.5 0.5 0.5\n");
  test::write_file(dir + "/train.txt", "./images/t1.jpg\n" + dir + "/images/t2.jpg\n");
  test::write_file(dir + "/val.txt", "images/v1.jpg\n");
  plugin_test::PluginSet pm;
  auto train = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "train"}});
  CHECK(train->size() == 2);
  auto val = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "val"}});
  CHECK(val->size() == 1);
  CHECK(val->info().boxes == 1);
  // v1.txt belongs to val, t1/t2.txt to train: only gone.txt has no image at all.
  for (auto* src : {train.get(), val.get()}) {
    const auto issues = src->issues();
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].path == dir + "/labels/gone.txt");
    CHECK(issues[0].problem == "label file without image");
  }
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yolo_dataset reads Roboflow's exports: `train: ../train/images` beside a train/ folder") {
  const std::string dir = test::temp_dir("yolo-roboflow");
  // As Roboflow writes it: the paths climb one folder too many for this layout.
  test::write_file(dir + "/data.yaml", "train: ../train/images\nval: ../valid/images\nnames: [a, b]\n");
  cv::Mat im(40, 60, CV_8UC3, cv::Scalar(5, 5, 5));
  for (const char* split : {"train", "valid"}) {
    fs::create_directories(dir + "/" + split + "/images");
    REQUIRE(cv::imwrite(dir + "/" + split + "/images/x.jpg", im));
    test::write_file(dir + "/" + split + "/labels/x.txt", "1 0.5 0.5 0.5 0.5\n");
  }
  plugin_test::PluginSet pm;
  auto train = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "train"}});
  CHECK(train->size() == 1);
  CHECK(train->info().boxes == 1);
  auto val = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "val"}});
  CHECK(val->size() == 1);
  CHECK(val->load(0).path == dir + "/valid/images/x.jpg");
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yolo_dataset: an empty split lists its problems; no label file at all is a warning") {
  const std::string dir = test::temp_dir("yolo-empty");
  test::write_file(dir + "/data.yaml", "train: images\nval: images\nnames: [a]\n");
  fs::create_directories(dir + "/images");
  test::write_file(dir + "/images/broken.jpg", "not a jpeg");
  test::write_file(dir + "/images/empty.png", "");
  plugin_test::PluginSet pm;
  try {
    make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "train"}});
    FAIL("an empty split was accepted");
  } catch (const InvalidInput& e) {
    const std::string msg = e.what();
    CHECK(msg.find("has no usable images (2 image files found, 2 problems):") != std::string::npos);
    CHECK(msg.find(dir + "/images/broken.jpg: ") != std::string::npos);
    CHECK(msg.find(dir + "/images/empty.png: empty file") != std::string::npos);
  }
  // Images without any label file: the run is told it would train on no boxes.
  const std::string bare = test::temp_dir("yolo-bare");
  test::write_file(bare + "/data.yaml", "train: images\nval: images\nnames: [a]\n");
  fs::create_directories(bare + "/images");
  REQUIRE(cv::imwrite(bare + "/images/x.jpg", cv::Mat(40, 60, CV_8UC3, cv::Scalar(5, 5, 5))));
  test::write_file(bare + "/p.json", R"({"imgsz": 64, "data": "data.yaml", "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 1}},
    "sink": {"plugin": "throughput", "input": "batch"}}})");
  const auto r = test::run_cli("run " + bare + "/p.json");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("warning] yolo_dataset 'source': train split of") != std::string::npos);
  CHECK(r.output.find("yolo_dataset 'source': no image of the train split has a label file") != std::string::npos);
  yoloflow::test::remove_tree(dir);
  yoloflow::test::remove_tree(bare);
}

TEST_CASE("yolo_dataset load() of an image corrupted after the scan throws naming the file") {
  const std::string dir = test::temp_dir("yolo-late");
  test::write_file(dir + "/data.yaml", "path: ds\ntrain: images\nnames: [thing]\n");
  cv::Mat im(32, 48, CV_8UC3, cv::Scalar(1, 2, 3));
  fs::create_directories(dir + "/ds/images");
  REQUIRE(cv::imwrite(dir + "/ds/images/a.jpg", im));
  test::write_file(dir + "/ds/labels/a.txt", "0 0.5 0.5 0.5 0.5\n");
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", dir + "/data.yaml"}});
  REQUIRE(src->size() == 1);
  CHECK(src->load(0).boxes.size() == 1);
  test::write_file(dir + "/ds/images/a.jpg", "overwritten with text");
  try {
    src->load(0);
    FAIL("load() of a corrupt image must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(dir + "/ds/images/a.jpg") != std::string::npos);
  }
  const auto issues = src->issues();
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].problem.rfind("cannot decode image", 0) == 0);
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yolo_dataset refuses unusable data.yaml files with the file named") {
  const std::string dir = test::temp_dir("yolo-yaml");
  plugin_test::PluginSet pm;
  auto expect_error = [&](const std::string& yaml, const std::string& message, const std::string& split = "train") {
    test::write_file(dir + "/data.yaml", yaml);
    try {
      make_source(pm, {{"data", dir + "/data.yaml"}, {"split", split}});
      FAIL("expected an error for: " << yaml);
    } catch (const InvalidInput& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find(dir + "/data.yaml") != std::string::npos, what);
      CHECK_MESSAGE(what.find(message) != std::string::npos, what);
    }
  };
  fs::create_directories(dir + "/images");
  expect_error("train: images\nnc: 2\nnames: [a, b, c]\n", "'nc' is 2 but 'names' lists 3 classes");
  expect_error("train: images\nnames:\n  0: a\n  2: c\n", "missing id 1");
  expect_error("train: images\n", "no class names");
  expect_error("train: nowhere\nnames: [a]\n", "nowhere' does not exist");
  expect_error("train: images\nnames: [a]\n", "has no 'test' split", "test");
  expect_error("train: images\nnames: [a]\n", "no usable images");
  expect_error("train: [images\nnames: [a]\n", "not valid YAML");
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("labels read from files land on their painted pixels after load() and letterbox") {
  // Lossless PNGs with filled rectangles exactly where their label lines say.
  const std::string dir = test::temp_dir("yolo-painted");
  test::write_file(dir + "/data.yaml", "train: images\nnames: [red, green, blue]\n");
  fs::create_directories(dir + "/images");
  const cv::Scalar colours[] = {{0, 0, 255}, {0, 255, 0}, {255, 0, 0}};
  struct Image {
    int w, h;
    std::vector<cv::Rect> rects;
  };
  const std::vector<Image> images = {{500, 300, {{20, 30, 100, 80}, {300, 100, 150, 160}, {200, 240, 60, 50}}},
                                     {240, 400, {{10, 10, 200, 100}, {50, 250, 100, 120}}}};
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto& im = images[i];
    cv::Mat m(im.h, im.w, CV_8UC3, cv::Scalar(0, 0, 0));
    std::string labels;
    for (std::size_t k = 0; k < im.rects.size(); ++k) {
      const auto& r = im.rects[k];
      cv::rectangle(m, r, colours[k], cv::FILLED);
      labels += std::to_string(k) + " " + std::to_string((r.x + r.width / 2.0) / im.w) + " " +
                std::to_string((r.y + r.height / 2.0) / im.h) + " " + std::to_string(double(r.width) / im.w) +
                " " + std::to_string(double(r.height) / im.h) + "\n";
    }
    REQUIRE(cv::imwrite(dir + "/images/p" + std::to_string(i) + ".png", m));
    test::write_file(dir + "/labels/p" + std::to_string(i) + ".txt", labels);
  }
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", dir + "/data.yaml"}}, 320);
  REQUIRE(src->size() == 2);
  auto letterbox = plugin_test::make_component<Augmentation>(pm, Kind::Augmentation, "letterbox", json::object(), {320});
  class NoLoader final : public SampleLoader {
   public:
    std::size_t size() const override { return 0; }
    Sample load(std::size_t) override { throw Error("unused"); }
  } loader;
  for (std::size_t i = 0; i < src->size(); ++i) {
    Sample s = src->load(i);
    Rng rng(0);
    AugmentContext actx{rng, loader, 320, 0};
    letterbox->apply(s, actx);
    REQUIRE(s.image.size() == cv::Size(320, 320));
    REQUIRE(s.boxes.size() == images[i].rects.size());
    for (const auto& b : s.boxes) {
      CAPTURE(i);
      CAPTURE(b.cls);
      cv::Mat mask;
      const cv::Scalar c = colours[b.cls];
      // At least half the colour: blended edge pixels count where the true edge is.
      cv::inRange(s.image, c - cv::Scalar(127, 127, 127), c + cv::Scalar(127, 127, 127), mask);
      const cv::Rect r = cv::boundingRect(mask);
      CHECK(std::abs(b.x1 - r.x) <= 1.0);
      CHECK(std::abs(b.y1 - r.y) <= 1.0);
      CHECK(std::abs(b.x2 - (r.x + r.width)) <= 1.0);
      CHECK(std::abs(b.y2 - (r.y + r.height)) <= 1.0);
      // And back to the file's pixels through Geometry.
      const auto& orig = images[i].rects[static_cast<std::size_t>(b.cls)];
      CHECK((b.x1 - s.geometry.pad_x) / s.geometry.ratio_x == doctest::Approx(orig.x).epsilon(0.002));
      CHECK((b.y2 - s.geometry.pad_y) / s.geometry.ratio_y ==
            doctest::Approx(orig.y + orig.height).epsilon(0.002));
    }
  }
  yoloflow::test::remove_tree(dir);
}

TEST_CASE("yolo_dataset: an image listed N times in a .txt list is N samples (a repeated epoch), cached once") {
  plugin_test::PluginSet pm;
  const auto dir = test::temp_dir("yolo-repeats");
  std::vector<std::string> images;
  for (const auto& e : fs::directory_iterator(test::coco128_dir() + "/images/train2017")) images.push_back(e.path().string());
  std::sort(images.begin(), images.end());
  std::string list;
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 4; ++i) list += images[i] + "\n";
  }
  test::write_file(dir + "/list.txt", list);
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: list.txt\nnames:\n  0: a\n" +
                                           [] { std::string s; for (int c = 1; c < 80; ++c) s += "  " + std::to_string(c) + ": c" + std::to_string(c) + "\n"; return s; }());
  auto src = make_source(pm, {{"data", dir + "/data.yaml"}, {"cache", "ram"}}, 160);
  REQUIRE(src->size() == 12);
  // Sorted: the three copies of an image are neighbours, and load the same pixels and boxes.
  const Sample a = src->load(0), b = src->load(1), c = src->load(2), d = src->load(3);
  CHECK(a.path == b.path);
  CHECK(b.path == c.path);
  CHECK(c.path != d.path);
  CHECK(a.index == 0);
  CHECK(c.index == 2);
  CHECK(cv::norm(a.image, c.image, cv::NORM_INF) == 0);
  CHECK(a.boxes.size() == c.boxes.size());
  test::remove_tree(dir);
}

TEST_CASE("yolo_dataset fraction, classes and single_cls read the split as Ultralytics' dataset does") {
  plugin_test::PluginSet pm;
  const auto dir = test::temp_dir("yolo-selection");
  std::vector<std::string> images;
  for (const auto& e : fs::directory_iterator(test::coco128_dir() + "/images/train2017")) images.push_back(e.path().string());
  std::sort(images.begin(), images.end());
  // 000000000009 (classes 45, 49, 50) listed twice, 000000000025 (two of class 23), 000000000030.
  test::write_file(dir + "/list.txt", images[0] + "\n" + images[0] + "\n" + images[1] + "\n" + images[2] + "\n");
  std::string names;
  for (int c = 0; c < 80; ++c) names += "  " + std::to_string(c) + ": c" + std::to_string(c) + "\n";
  test::write_file(dir + "/data.yaml", "path: " + dir + "\ntrain: list.txt\nval: list.txt\nnames:\n" + names);
  const std::string data = dir + "/data.yaml";
  auto paths = [](DataSource& s) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size(); ++i) out.push_back(fs::path(s.load(i).path).filename().string());
    return out;
  };
  // The first round(n x fraction) of the sorted listing, a repeated image counted each time.
  auto half = make_source(pm, {{"data", data}, {"fraction", 0.5}}, 160);
  CHECK(paths(*half) == std::vector<std::string>{"000000000009.jpg", "000000000009.jpg"});
  auto most = make_source(pm, {{"data", data}, {"fraction", 0.75}}, 160);
  CHECK(paths(*most) == std::vector<std::string>{"000000000009.jpg", "000000000009.jpg", "000000000025.jpg"});
  // Only the train split is cut.
  auto val = make_source(pm, {{"data", data}, {"split", "val"}, {"fraction", 0.5}}, 160);
  CHECK(val->size() == 4);
  CHECK_THROWS_WITH_AS(make_source(pm, {{"data", data}, {"fraction", 0.1}}, 160), doctest::Contains("is no image"),
                       InvalidInput);

  // classes: other boxes dropped, ids kept; an image left without boxes stays, as background.
  auto giraffes = make_source(pm, {{"data", data}, {"classes", {23, 49}}}, 160);
  REQUIRE(giraffes->size() == 4);
  const Sample first = giraffes->load(0), second = giraffes->load(2), third = giraffes->load(3);
  CHECK(first.boxes.size() == 4);  // the four of class 49
  for (const auto& b : first.boxes) CHECK(b.cls == 49);
  CHECK(second.boxes.size() == 2);
  for (const auto& b : second.boxes) CHECK(b.cls == 23);
  CHECK(third.boxes.empty());
  CHECK(giraffes->info().names.size() == 80);
  CHECK_THROWS_WITH_AS(make_source(pm, {{"data", data}, {"classes", {80}}}, 160),
                       doctest::Contains("class 80 is not one of data.yaml"), InvalidInput);

  // single_cls: every box class 0, one class named 'item'.
  auto one = make_source(pm, {{"data", data}, {"single_cls", true}}, 160);
  CHECK(one->info().names == std::vector<std::string>{"item"});
  const Sample s = one->load(0);
  CHECK(s.boxes.size() == 8);
  for (const auto& b : s.boxes) CHECK(b.cls == 0);
  test::remove_tree(dir);
}

TEST_CASE("yolo_dataset decode_reduced: a large JPEG decodes at 1/4 and gives a full decode's size, boxes and near pixels") {
  const auto dir = test::temp_dir("yolo-reduced");
  // A 1600x1200 photo-like image (smooth gradients, shapes with edges) with one box.
  cv::Mat im(1200, 1600, CV_8UC3);
  for (int y = 0; y < im.rows; ++y) {
    for (int x = 0; x < im.cols; ++x) {
      im.at<cv::Vec3b>(y, x) = cv::Vec3b(static_cast<uchar>(x * 255 / 1599), static_cast<uchar>(y * 255 / 1199),
                                         static_cast<uchar>((x + y) % 256));
    }
  }
  cv::rectangle(im, cv::Rect(400, 300, 800, 600), cv::Scalar(0, 0, 255), cv::FILLED);
  cv::circle(im, cv::Point(800, 600), 200, cv::Scalar(255, 255, 255), cv::FILLED);
  std::vector<uchar> jpeg;
  cv::imencode(".jpg", im, jpeg, {cv::IMWRITE_JPEG_QUALITY, 95});
  write_bytes(dir + "/images/train/big.jpg", jpeg);
  fs::create_directories(dir + "/labels/train");
  { std::ofstream(dir + "/labels/train/big.txt") << "3 0.5 0.5 0.5 0.5\n"; }
  { std::ofstream(dir + "/data.yaml") << "path: " << dir << "\ntrain: images/train\nval: images/train\nnames: {0: a, 1: b, 2: c, 3: d}\n"; }

  plugin_test::PluginSet pm;
  const Sample full = make_source(pm, {{"data", dir + "/data.yaml"}}, 320)->load(0);
  const Sample reduced = make_source(pm, {{"data", dir + "/data.yaml"}, {"decode_reduced", true}}, 320)->load(0);
  // 1600x1200 -> 320x240; 1/4 (400x300) is the smallest decode still at least that size.
  CHECK(reduced.image.cols == 320);
  CHECK(reduced.image.rows == 240);
  CHECK(reduced.image.size() == full.image.size());
  CHECK(reduced.geometry.original_width == 1600);
  CHECK(reduced.geometry.original_height == 1200);
  CHECK(reduced.geometry.ratio_x == doctest::Approx(full.geometry.ratio_x));
  REQUIRE(reduced.boxes.size() == 1);
  CHECK(reduced.boxes[0].x1 == doctest::Approx(full.boxes[0].x1));
  CHECK(reduced.boxes[0].y2 == doctest::Approx(full.boxes[0].y2));
  // Not the same pixels (libjpeg averages in its scaled inverse DCT), but close to them.
  cv::Mat diff;
  cv::absdiff(reduced.image, full.image, diff);
  const double mean_diff = cv::mean(diff.reshape(1))[0];
  MESSAGE("mean absolute difference to a full decode: " << mean_diff << " levels");
  CHECK(mean_diff < 3.0);
  CHECK(cv::norm(reduced.image, full.image, cv::NORM_INF) > 0);  // it did decode reduced
  // At imgsz 1280 the image is not shrunk enough for any reduction: a full decode, equal pixels.
  const Sample same = make_source(pm, {{"data", dir + "/data.yaml"}, {"decode_reduced", true}}, 1280)->load(0);
  const Sample same_full = make_source(pm, {{"data", dir + "/data.yaml"}}, 1280)->load(0);
  CHECK(cv::norm(same.image, same_full.image, cv::NORM_INF) == 0);
  // Validation decodes in full whatever the setting: its pixels are a full decode's.
  const Sample val = make_source(pm, {{"data", dir + "/data.yaml"}, {"split", "val"}, {"decode_reduced", true}}, 320)->load(0);
  CHECK(cv::norm(val.image, full.image, cv::NORM_INF) == 0);
}

TEST_CASE("yolo_dataset labels(): each sample's classes and boxes without its image, as load() gives them") {
  plugin_test::PluginSet pm;
  auto src = make_source(pm, {{"data", test::coco128_dir() + "/data.yaml"}, {"classes", {0, 2}}});
  REQUIRE(src->size() > 0);
  std::size_t boxes = 0;
  for (std::size_t i = 0; i < src->size(); ++i) {
    CAPTURE(i);
    SampleLabels labels;
    REQUIRE(src->labels(i, labels));
    REQUIRE(labels.classes.size() == labels.boxes.size());
    boxes += labels.boxes.size();
    if (i >= 16) continue;  // decoded: the first 16
    const Sample s = src->load(i);
    REQUIRE(s.boxes.size() == labels.boxes.size());
    const double w = s.image.cols, h = s.image.rows;
    for (std::size_t k = 0; k < s.boxes.size(); ++k) {
      CHECK(labels.classes[k] == s.boxes[k].cls);  // after the classes filter: 0 and 2 only
      CHECK((labels.classes[k] == 0 || labels.classes[k] == 2));
      CHECK(labels.boxes[k][0] == doctest::Approx((s.boxes[k].x1 + s.boxes[k].x2) / 2 / w).epsilon(1e-4));
      CHECK(labels.boxes[k][1] == doctest::Approx((s.boxes[k].y1 + s.boxes[k].y2) / 2 / h).epsilon(1e-4));
      CHECK(labels.boxes[k][2] == doctest::Approx((s.boxes[k].x2 - s.boxes[k].x1) / w).epsilon(1e-4));
      CHECK(labels.boxes[k][3] == doctest::Approx((s.boxes[k].y2 - s.boxes[k].y1) / h).epsilon(1e-4));
    }
  }
  CHECK(boxes == src->info().boxes);
  SampleLabels none;
  CHECK_FALSE(src->labels(src->size(), none));  // past the end
}
