// `yoloflow val` as a user runs it, and plain PyTorch state dicts wherever trained weights are
// taken (val, predict, the val sink): what is printed, what is written, and one clear
// line when the weights file is not what was expected.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string state_dict() { return test::fixtures_dir() + "/coco128-val-parity/coco128-yolo11n.pt"; }

// An error is one line: no library backtrace or assertion text around it.
void check_one_line_error(const test::CliResult& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(expected) != std::string::npos);
  CHECK(r.output.find("Exception raised from") == std::string::npos);
  CHECK(r.output.find("frame #") == std::string::npos);
  std::size_t error_lines = 0;
  for (std::size_t at = r.output.find("error: "); at != std::string::npos; at = r.output.find("error: ", at + 1)) {
    ++error_lines;
  }
  CHECK(error_lines == 1);
}

}  // namespace

TEST_CASE("val: a plain state dict with --model prints Ultralytics' table and writes metrics.json") {
  const std::string dir = test::temp_dir("val-cli");
  const std::string data = test::write_coco128_subset(dir, 8);
  // Run from a folder of its own: --out is the only place it writes.
  const std::string cwd = dir + "/cwd";
  std::filesystem::create_directories(cwd);
  const auto r = test::run_shell("cd " + cwd + " && " + test::cli() + " val --weights " + state_dict() +
                                 " --model yolo11n --data " + data + " --batch 4 --device cpu --out " + dir +
                                 "/out --save-json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(std::filesystem::is_empty(cwd));
  CHECK(r.output.find("yolo11n (state dict weights of " + state_dict() + ") on cpu") != std::string::npos);
  CHECK(r.output.find("rectangular batches of 4 at imgsz 640") != std::string::npos);
  CHECK(r.output.find("                   all          8") != std::string::npos);
  CHECK(r.output.find("                person") != std::string::npos);
  const json m = json::parse(test::read_file(dir + "/out/metrics.json"));
  for (const char* key : {"precision", "recall", "mAP50", "mAP50-95", "fitness", "per_class"}) CHECK(m.contains(key));
  CHECK(m.at("images") == 8);
  CHECK(m.at("imgsz") == 640);
  CHECK(m.at("rect") == true);
  // The weights were trained on these images: they find most of them.
  CHECK(m.at("mAP50").get<double>() > 0.5);
  REQUIRE(m.at("per_class").size() >= 1);
  const json& first = m.at("per_class")[0];
  CHECK(first.at("name") == "person");
  CHECK(first.at("images").get<int>() >= 1);
  CHECK(first.at("instances").get<int>() >= first.at("images").get<int>());
  // predictions.json: Ultralytics' save_json, the COCO results format, boxes [x, y, w, h] in the
  // original image's pixels.
  const json p = json::parse(test::read_file(dir + "/out/predictions.json"));
  REQUIRE(p.is_array());
  REQUIRE(!p.empty());
  std::set<std::string> files;
  for (const auto& d : p) {
    CAPTURE(d.dump());
    files.insert(d.at("file_name").get<std::string>());
    CHECK(d.at("image_id") == std::stoll(fs::path(d.at("file_name").get<std::string>()).stem().string()));
    CHECK(d.at("category_id").get<int>() >= 1);  // class + 1 off COCO's own val2017 list
    CHECK(d.at("category_id").get<int>() <= 80);
    const auto& b = d.at("bbox");
    REQUIRE(b.size() == 4);
    CHECK(b[0].get<double>() >= 0);
    CHECK(b[2].get<double>() >= 0);
    CHECK(b[0].get<double>() + b[2].get<double>() <= 640.001);
    CHECK(d.at("score").get<double>() >= 0.001);
  }
  CHECK(files.size() <= 8);
  // --square letterboxes every image to imgsz x imgsz.
  const auto sq = test::run_cli("val --weights " + state_dict() + " --model yolo11n --data " + data +
                                " --batch 4 --device cpu --square --out " + dir + "/square");
  INFO(sq.output);
  REQUIRE(sq.exit_code == 0);
  CHECK(json::parse(test::read_file(dir + "/square/metrics.json")).at("rect") == false);
}

TEST_CASE("val: wrong inputs get one line naming the option and the file") {
  const std::string dir = test::temp_dir("val-cli-errors");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string in_dir = "cd " + dir + " && ";  // where runs/val would appear
  SUBCASE("a plain state dict without --model") {
    check_one_line_error(test::run_cli("val --weights " + state_dict() + " --data " + data + " --device cpu", in_dir),
                         "--weights " + state_dict() + ": a plain state dict does not say which model it holds; "
                         "name it with --model (e.g. yolo11n)");
  }
  SUBCASE("a file that is neither a checkpoint nor a state dict") {
    test::write_file(dir + "/garbage.pt", "this is not a weights file at all");
    check_one_line_error(test::run_cli("val --weights " + dir + "/garbage.pt --model yolo11n --data " + data, in_dir),
                         "--weights " + dir + "/garbage.pt is not a PyTorch file: it starts with text (\"this is not a "
                         "weights file at all\")");
  }
  SUBCASE("a dataset with another class count") {
    test::write_file(dir + "/two.yaml", "path: " + dir + "\ntrain: subset.txt\nval: subset.txt\nnames: [a, b]\n");
    const auto r = test::run_cli("val --weights " + state_dict() + " --model yolo11n --data " + dir +
                                 "/two.yaml --device cpu", in_dir);
    check_one_line_error(r, "names 2 classes, but --weights " + state_dict() + " detects 80");
  }
  SUBCASE("--rect with --square") {
    check_one_line_error(test::run_cli("val --weights " + state_dict() + " --model yolo11n --data " + data +
                                       " --rect --square", in_dir),
                         "--rect and --square exclude each other");
  }
  SUBCASE("an unknown architecture") {
    check_one_line_error(test::run_cli("val --weights " + state_dict() + " --model yolo12n --data " + data, in_dir),
                         "unknown model 'yolo12n'");
  }
  // Nothing was written for a failed start.
  CHECK_FALSE(fs::exists(dir + "/runs"));
}

TEST_CASE("predict and the val sink take a plain state dict with its architecture") {
  const std::string dir = test::temp_dir("state-dict-weights");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const auto p = test::run_cli("predict --weights " + state_dict() + " --model yolo11n --source " + image +
                               " --device cpu --no-images --out " + dir + "/predict");
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  const json predictions = json::parse(test::read_file(dir + "/predict/predictions.json"));
  REQUIRE(predictions.size() == 1);
  CHECK(predictions[0].at("detections").size() >= 1);
  // Without the architecture: the one-line answer, naming predict's own option.
  check_one_line_error(test::run_cli("predict --weights " + state_dict() + " --source " + image),
                       "name it with --model (e.g. yolo11n)");

  const auto v = test::run_cli("run " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/val-coco128.json --run-dir " +
                               dir + "/validate device=cpu stages.source.params.data=" + data +
                               " stages.val.params.weights=" + state_dict() +
                               " stages.val.params.model=yolo11n");
  INFO(v.output);
  REQUIRE(v.exit_code == 0);
  const json m = json::parse(test::read_file(dir + "/validate/metrics.json"));
  CHECK(m.at("images") == 2);
  CHECK(m.at("mAP50").get<double>() > 0.3);
}
