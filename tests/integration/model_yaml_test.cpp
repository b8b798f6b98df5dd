// Model yamls as an Ultralytics user gives them: Ultralytics' own yolo11.yaml and yolo11-seg.yaml
// (from its 8.4.56 package) copied and edited. What the yolo11 plugin builds is built from the
// file; anything else is refused naming its line, never replaced by a stock model.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

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
  test::write_file(dir + "/yolo11n.yaml", edited("yolo11.yaml", "n: [0.50, 0.25, 1024]", "n: [0.33, 0.25, 1024]"));
  test::write_file(dir + "/c2f.yaml", edited("yolo11.yaml", "- [-1, 2, C3k2, [512, True]]", "- [-1, 2, C2f, [512, True]]"));
  test::write_file(dir + "/pose.yaml", edited("yolo11.yaml", "Detect, [nc]]", "Pose, [nc, kpt_shape]]"));
  test::write_file(dir + "/broken.yaml", "nc: 80\nbackbone: [[-1, 1, Conv\n");
  struct Case {
    std::string file, says;
  };
  for (const Case& c :
       {Case{dir + "/yolo11n.yaml", "line 11: scale n is [0.33, 0.25, 1024]; the yolo11 model plugin builds YOLO11's scales only"},
        Case{dir + "/c2f.yaml", "line 26: layer 6 is [-1, 2, C2f, [512, True]] (module C2f), where YOLO11's is [-1, 2, C3k2, [512, True]]"},
        Case{dir + "/pose.yaml", "layer 23 is [[16, 19, 22], 1, Pose, [nc, kpt_shape]] (module Pose)"},
        Case{dir + "/broken.yaml", "is not YAML: line"},
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
