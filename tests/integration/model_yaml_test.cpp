// Model yamls as an Ultralytics user gives them: Ultralytics' own yolo11.yaml and yolo11-seg.yaml
// (from its 8.4.56 package) copied and edited. What the yolo11 plugin builds is built from the
// file, edited scales included (parameter counts from Ultralytics 8.4.56's parse_model on the
// same files); anything else is refused naming its line, never replaced by a stock model.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Ultralytics' yolo11.yaml and yolo11-seg.yaml, unpacked once from its package.
const std::string& ultralytics_yamls() {
  static const std::string dir = [] {
    const std::string d = test::temp_dir("model-yaml-package");
    const auto r = test::run_shell("tar -C " + d + " -xJf " + test::shared_dir() +
                                   "/anchors/ultralytics-8.4.56.tar.xz ultralytics/cfg/models/11/yolo11.yaml "
                                   "ultralytics/cfg/models/11/yolo11-seg.yaml 2>&1");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    return d + "/ultralytics/cfg/models/11";
  }();
  return dir;
}

std::string edited(const std::string& from, const std::string& what, const std::string& with) {
  std::string text = test::read_file(ultralytics_yamls() + "/" + from);
  const auto at = text.find(what);
  REQUIRE(at != std::string::npos);
  return text.replace(at, what.size(), with);
}

}  // namespace

TEST_CASE("model yaml: Ultralytics' yaml copied is built as it says (scale from the name, else its first; Segment head)") {
  const std::string dir = test::temp_dir("model-yaml");
  std::filesystem::copy_file(ultralytics_yamls() + "/yolo11.yaml", dir + "/yolo11s.yaml");
  std::filesystem::copy_file(ultralytics_yamls() + "/yolo11-seg.yaml", dir + "/mymodel.yaml");
  const auto s = test::run_cli("info model=" + dir + "/yolo11s.yaml");
  CAPTURE(s.output);
  CHECK(s.exit_code == 0);
  CHECK(contains(s.output, "yolo11s summary: 24 layers, 9,458,752 parameters"));
  const auto seg = test::run_cli("info model=" + dir + "/mymodel.yaml");
  CAPTURE(seg.output);
  CHECK(seg.exit_code == 0);
  CHECK(contains(seg.output, "yolo11n-seg summary"));  // no scale in the name: its first, n
}

TEST_CASE("model yaml: edited scales, another module, a missing file or no YAML are refused in one line with the line") {
  const std::string dir = test::temp_dir("model-yaml-refused");
  test::write_file(dir + "/yolo11n.yaml", edited("yolo11.yaml", "n: [0.50, 0.25, 1024]", "n: [0.50, 0.25]"));
  test::write_file(dir + "/c2f.yaml", edited("yolo11.yaml", "- [-1, 2, C3k2, [512, True]]", "- [-1, 2, C2f, [512, True]]"));
  test::write_file(dir + "/pose.yaml", edited("yolo11.yaml", "Detect, [nc]]", "Pose, [nc, kpt_shape]]"));
  test::write_file(dir + "/broken.yaml", "nc: 80\nbackbone: [[-1, 1, Conv\n");
  // A width that would make layers of 8,192 channels and more: bounded, as every input is.
  test::write_file(dir + "/yolo11s.yaml", edited("yolo11.yaml", "s: [0.50, 0.50, 1024]", "s: [0.50, 8, 1024]"));
  struct Case {
    std::string file, says;
  };
  for (const Case& c :
       {Case{dir + "/yolo11n.yaml", "line 11: scale n is [0.5, 0.25], not [depth, width, max_channels]"},
        Case{dir + "/c2f.yaml", "line 26: layer 6 is [-1, 2, C2f, [512, True]] (module C2f), where YOLO11's is [-1, 2, C3k2, [512, True]]"},
        Case{dir + "/pose.yaml", "layer 23 is [[16, 19, 22], 1, Pose, [nc, kpt_shape]] (module Pose)"},
        Case{dir + "/broken.yaml", "is not YAML: line"},
        Case{dir + "/yolo11s.yaml", "line 12: scale s is [0.5, 8, 1024], not [depth, width, max_channels] (two multiples in (0, 4]"},
        Case{"/nonexistent/yolo11n.yaml", "model=/nonexistent/yolo11n.yaml: no such file"},
        Case{"mymodel.yaml", "model=mymodel.yaml: no such file"}}) {
    CAPTURE(c.file);
    const auto info = test::run_cli("info model=" + c.file);
    CAPTURE(info.output);
    CHECK(info.exit_code == 2);
    CHECK(contains(info.output, c.says));
    // train refuses it before anything is made: no run folder.
    const std::string run = dir + "/run-" + std::filesystem::path(c.file).stem().string();
    const auto train = test::run_cli("train data=" + test::shared_dir() + "/datasets/coco128/data.yaml model=" + c.file +
                                     " epochs=1 imgsz=64 --run-dir " + run);
    CAPTURE(train.output);
    CHECK(train.exit_code == 2);
    CHECK(contains(train.output, c.says));
    CHECK_FALSE(std::filesystem::exists(run));
  }
}

TEST_CASE("model yaml: edited scales are built with their multiples, as Ultralytics' parse_model builds them") {
  const std::string dir = test::temp_dir("model-yaml-scales");
  struct Case {
    std::string file, from, row, with, says;
  };
  // Parameter counts: Ultralytics 8.4.56, DetectionModel / SegmentationModel of the same yaml
  // dict, nc 80. [1.25, ...]: 2 x 1.25 = 2.5 repeats round half to even, 2; C3k blocks forced by
  // the letter m whatever the multiples; a scale named t is no m, l or x.
  for (const Case& c : {
           Case{"yolo11s.yaml", "yolo11.yaml", "s: [0.50, 0.50, 1024]", "s: [0.75, 0.375, 768]",
                "yolo11s[0.75,0.375,768] summary: 24 layers, 5,210,152 parameters"},
           Case{"yolo11s-seg.yaml", "yolo11-seg.yaml", "s: [0.50, 0.50, 1024]", "s: [0.75, 0.375, 768]",
                "yolo11s-seg[0.75,0.375,768] summary: 24 layers, 5,613,608 parameters"},
           Case{"yolo11m.yaml", "yolo11.yaml", "m: [0.50, 1.00, 512]", "m: [0.33, 0.50, 1024]",
                "yolo11m[0.33,0.5,1024] summary: 24 layers, 9,544,800 parameters"},
           Case{"yolo11n.yaml", "yolo11.yaml", "n: [0.50, 0.25, 1024]", "n: [1.25, 0.25, 1024]",
                "yolo11n[1.25,0.25,1024] summary: 24 layers, 3,342,144 parameters"},
           Case{"tiny.yaml", "yolo11.yaml", "n: [0.50, 0.25, 1024]", "t: [0.50, 0.25, 1024]",
                "yolo11n summary: 24 layers, 2,624,080 parameters"},
       }) {
    CAPTURE(c.file);
    test::write_file(dir + "/" + c.file, edited(c.from, c.row, c.with));
    const auto info = test::run_cli("info model=" + dir + "/" + c.file);
    CAPTURE(info.output);
    CHECK(info.exit_code == 0);
    CHECK(contains(info.output, c.says));
  }
  // The file's nc counts in info, as in Ultralytics' (5 classes: its DetectionModel of the same dict).
  test::write_file(dir + "/yolo11n.yaml", edited("yolo11.yaml", "nc: 80", "nc: 5"));
  const auto five = test::run_cli("info model=" + dir + "/yolo11n.yaml");
  CAPTURE(five.output);
  CHECK(five.exit_code == 0);
  CHECK(contains(five.output, "yolo11n summary: 24 layers, 2,590,815 parameters"));
  // Too narrow for C2PSA's attention (64 channels at layer 10: no head): one line, where
  // Ultralytics divides by zero.
  test::write_file(dir + "/yolo11n.yaml", edited("yolo11.yaml", "n: [0.50, 0.25, 1024]", "n: [0.50, 0.0625, 1024]"));
  const auto narrow = test::run_cli("info model=" + dir + "/yolo11n.yaml");
  CAPTURE(narrow.output);
  CHECK(narrow.exit_code == 2);
  CHECK(contains(narrow.output, "gives layer 10 (C2PSA) 64 channels; its attention needs at least 128"));
  test::check_no_internals(narrow.output);
}

TEST_CASE("yolo11: a class count equal to a layer's channel count leaves that layer unscaled, as in Ultralytics") {
  // Ultralytics' parse_model scales a layer's channels only when they differ from nc: with 64
  // classes the first conv keeps 64 channels. Counts from Ultralytics 8.4.56 at the same nc.
  struct Case {
    std::string model;
    int nc;
    std::string says;
  };
  for (const Case& c : {Case{"yolo11n", 64, "2,617,536 parameters"}, Case{"yolo11s", 128, "9,499,984 parameters"},
                        Case{"yolo11n-seg", 64, "2,870,304 parameters"}}) {
    CAPTURE(c.model);
    const auto info = test::run_cli("info --model " + c.model + " --nc " + std::to_string(c.nc));
    CAPTURE(info.output);
    CHECK(info.exit_code == 0);
    CHECK(contains(info.output, c.says));
  }
}

TEST_CASE("model yaml: a run trained from edited scales keeps them: its weights are validated and fine-tuned as that model") {
  const std::string dir = test::temp_dir("model-yaml-run");
  test::write_file(dir + "/yolo11n.yaml", edited("yolo11.yaml", "n: [0.50, 0.25, 1024]", "n: [0.50, 0.1875, 1024]"));
  const std::string data = test::shared_dir() + "/datasets/coco128/data.yaml";
  const auto train = test::run_cli("train model=" + dir + "/yolo11n.yaml data=" + data + " --run-dir " + dir +
                                       "/run imgsz=64 epochs=1 fraction=0.0625 workers=1 batch=8",
                                   "OMP_NUM_THREADS=1 ");
  CAPTURE(train.output);
  REQUIRE(train.exit_code == 0);
  CHECK(contains(train.output, "yolo11n[0.5,0.1875,1024]"));
  const std::string best = dir + "/run/weights/best.pt";
  const auto info = test::run_cli("info model=" + best);
  CAPTURE(info.output);
  CHECK(info.exit_code == 0);
  CHECK(contains(info.output, "yolo11n[0.5,0.1875,1024] summary"));
  const auto val = test::run_cli("val model=" + best + " data=" + data + " imgsz=64 project=" + dir + " name=val",
                                 "OMP_NUM_THREADS=1 ");
  CAPTURE(val.output);
  CHECK(val.exit_code == 0);
  // Fine-tuned from its own weights: the same multiples, every tensor taken.
  const auto tune = test::run_cli("train model=" + best + " data=" + data + " --run-dir " + dir +
                                      "/tune imgsz=64 epochs=1 fraction=0.0625 workers=1 batch=8",
                                  "OMP_NUM_THREADS=1 ");
  CAPTURE(tune.output);
  CHECK(tune.exit_code == 0);
  CHECK(contains(tune.output, "yolo11n[0.5,0.1875,1024]"));
  const auto at = tune.output.find("weights: ");
  REQUIRE(at != std::string::npos);
  int loaded = 0, total = -1;
  CHECK(std::sscanf(tune.output.c_str() + at, "weights: %d/%d", &loaded, &total) == 2);
  CHECK(loaded > 0);
  CHECK(loaded == total);
  test::remove_tree(dir);
}
