// What yoloflow writes, and what it prints, whatever names it is given: a run or file name that
// would leave its folder, hold a NUL or a control character, or be empty is refused in one line
// before anything is made; class names and file names holding terminal escapes or newlines are
// printed escaped; a weights file is replaced only once the new one is whole (a kill, a full
// disk, a device as the target leave the old file as it was); and a start into an earlier
// run's folder that fails before its first step leaves that run byte for byte as it was.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "support/child_process.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/output_checks.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;
using test::tree;

// The one error line, and nothing of a library's internals.
void check_one_line(const test::CliResult& r, int exit_code, const std::string& expected) {
  INFO(r.output);
  CHECK(r.exit_code == exit_code);
  CHECK(contains(r.output, expected));
  for (const char* internal : {"terminate called", "Exception raised from", "frame #", "std::", "c10::",
                               "filesystem error", "basic_ios", "Aborted"}) {
    CHECK_FALSE(contains(r.output, internal));
  }
}

// The CLI in `dir` (where runs/ would be made), stopped after 60 s: a hang fails the test.
test::CliResult cli_in(const std::string& dir, const std::string& args, const std::string& env = "") {
  return test::run_shell("cd '" + dir + "' && " + env + "timeout 60 " + test::cli() + " " + args);
}

// A yolo11n state dict for 80 classes, as `yoloflow weights export` writes it.
std::string write_state_dict(const std::string& path) {
  auto model = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n", 80);
  core::write_weights(path, core::module_state(model->module()));
  return path;
}

// The disk_full preload (tests/disk_full): files whose path holds `match` take `bytes` bytes.
std::string disk_full_env(const std::string& match, long bytes, bool stall = false) {
  return "LD_PRELOAD=" + test::test_plugin_dir("disk_full") + "/libdisk_full.so YOLOFLOW_DISK_FULL_MATCH=" + match +
         " YOLOFLOW_DISK_FULL_BYTES=" + std::to_string(bytes) + (stall ? " YOLOFLOW_DISK_FULL_STALL=1 " : " ");
}

// Temporary files an atomic writer leaves when it is not cleaned up (".NAME.tmp.PID.N...").
int temporaries_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (contains(e.path().filename().string(), ".tmp.")) ++n;
  }
  return n;
}

// 8 images of coco128, copied with their labels into DIR/images/train and DIR/labels/train.
void copy_coco_images(const std::string& dir, int count) {
  fs::create_directories(dir + "/images/train");
  fs::create_directories(dir + "/labels/train");
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(test::coco128_dir() + "/images/train2017")) images.push_back(e.path());
  std::sort(images.begin(), images.end());
  int copied = 0;
  for (const auto& img : images) {
    const fs::path label = fs::path(test::coco128_dir()) / "labels/train2017" / (img.stem().string() + ".txt");
    if (!fs::exists(label)) continue;
    fs::copy_file(img, dir + "/images/train/" + img.filename().string());
    fs::copy_file(label, dir + "/labels/train/" + label.filename().string());
    if (++copied == count) break;
  }
}

std::string tiny_pipeline(int epochs, const std::string& train_extra, const std::string& letterbox_input = "source") {
  test::TrainPipeline p;
  p.epochs = epochs;
  p.seed = 1;
  p.top = R"("ordered": true, "device": "cpu", "data": "data.yaml")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, "log_every": 1)" +
            train_extra;
  std::string text = p.json();
  // The stages take the pipeline's one dataset.
  for (std::string::size_type at; (at = text.find("\"data\": \"data.yaml\", \"split\"")) != std::string::npos;) {
    text.replace(at, std::string("\"data\": \"data.yaml\", ").size(), "");
  }
  for (std::string::size_type at; (at = text.find("{\"data\": \"data.yaml\", \"scheduler\"")) != std::string::npos;) {
    text.replace(at + 1, std::string("\"data\": \"data.yaml\", ").size(), "");
  }
  if (letterbox_input != "source") {
    const std::string from = R"("letterbox": {"plugin": "letterbox", "input": "source"})";
    text.replace(text.find(from), from.size(),
                 R"("boom": {"plugin": "test_throwing_apply", "input": "source"},
    "letterbox": {"plugin": "letterbox", "input": "boom"})");
  }
  return text;
}

}  // namespace

TEST_CASE("hostile writes: run names that leave their folder, hold NUL or control characters, or are empty are refused before anything is made") {
  const std::string dir = test::temp_dir("hostile-writes-names");
  test::write_coco128_subset(dir, 4);
  test::write_file(dir + "/p.json", tiny_pipeline(1, ""));
  const auto before = tree(dir);

  // name=../../x under project=P: runs/detect/P/../../x would be outside runs/detect/P.
  auto up = cli_in(dir, "train p.json project=proj name=../../x");
  check_one_line(up, kExitInvalid, "name= '../../x' leaves its folder through '..'");
  auto up_project = cli_in(dir, "train p.json project=../../outside");
  check_one_line(up_project, kExitInvalid, "project= '../../outside' leaves its folder");

  // A control character in a name (here ESC): shown escaped, refused.
  auto esc = cli_in(dir, "train p.json name=\"$(printf 'a\\033[31mb')\"");
  check_one_line(esc, kExitInvalid, "name= 'a\\x1b[31mb' holds a control character");
  CHECK_FALSE(contains(esc.output, "\x1b"));

  // `--run-dir ''` names no folder; it is not "no --run-dir".
  auto empty = cli_in(dir, "train p.json --run-dir ''");
  check_one_line(empty, kExitInvalid, "--run-dir is empty");
  auto empty_name = cli_in(dir, "train p.json name=");
  check_one_line(empty_name, kExitInvalid, "name= is empty");

  // A NUL cannot come through argv, but through a pipeline's "name" (JSON's \u0000): runs/a
  // would be taken for runs/a<NUL>b, and the numbered folder searched for forever.
  std::string with_nul = tiny_pipeline(1, "");
  with_nul.replace(with_nul.find("\"name\": \"tiny\""), std::string("\"name\": \"tiny\"").size(), "\"name\": \"a\\u0000b\"");
  test::write_file(dir + "/nul.json", with_nul);
  const auto before_nul = tree(dir);
  const auto t0 = std::chrono::steady_clock::now();
  auto nul = cli_in(dir, "train nul.json");
  INFO(nul.output);
  CHECK(nul.exit_code == kExitInvalid);
  CHECK(contains(nul.output, "NUL"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30));
  CHECK(tree(dir) == before_nul);

  // And the pipeline's "name" may not climb out of runs/ either.
  std::string climbing = tiny_pipeline(1, "");
  climbing.replace(climbing.find("\"name\": \"tiny\""), std::string("\"name\": \"tiny\"").size(), "\"name\": \"../../escaped\"");
  test::write_file(dir + "/climb.json", climbing);
  const auto before_climb = tree(dir);
  auto climb = cli_in(dir, "train climb.json");
  check_one_line(climb, kExitInvalid, "leaves its folder through '..'");
  CHECK(tree(dir) == before_climb);
  CHECK_FALSE(fs::exists(fs::path(dir).parent_path() / "escaped"));

  // Weights written to an empty name.
  auto out_empty = cli_in(dir, "weights export x.pt --out ''");
  check_one_line(out_empty, kExitInvalid, "--out is empty");
  fs::remove(dir + "/nul.json");
  fs::remove(dir + "/climb.json");
  CHECK(tree(dir) == before);
  test::remove_tree(dir);
}

TEST_CASE("hostile writes: class names with terminal escapes and file names with newlines are printed escaped") {
  const std::string dir = test::temp_dir("hostile-writes-printed");
  copy_coco_images(dir, 8);
  // A file whose name holds a newline, which is no image: reported by name.
  test::write_file(dir + "/images/train/bad\nname.jpg", "not an image");
  // Every class named with colour escapes: those in the images are in validation's table.
  std::string yaml = "path: " + dir + "\ntrain: images/train\nval: images/train\nnames:\n";
  for (int c = 0; c < 80; ++c) yaml += "  " + std::to_string(c) + ": \"\\e[31mclass" + std::to_string(c) + "\\e[0m\"\n";
  test::write_file(dir + "/data.yaml", yaml);
  test::write_file(dir + "/p.json", tiny_pipeline(1, ""));

  auto r = test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/run");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // The file name on one line, its newline spelled out (the source's summary, the run's).
  CHECK_FALSE(contains(r.output, "bad\nname"));
  CHECK(contains(r.output, "bad\\nname.jpg: not an image"));
  CHECK_FALSE(contains(r.output, "\x1b"));

  // Validation's table lists classes by name: escaped, one row each.
  auto val = cli_in(dir, "val model=run/weights/last.pt data=data.yaml imgsz=64 batch=2 device=cpu");
  INFO(val.output);
  CHECK(val.exit_code == 0);
  CHECK_FALSE(contains(val.output, "\x1b"));
  CHECK(contains(val.output, "\\x1b[31mclass"));
  CHECK(contains(val.output, "\\x1b[0m    "));
  CHECK_FALSE(contains(val.output, "bad\nname"));
  test::remove_tree(dir);
}

TEST_CASE("hostile writes: weights export to a device, a folder or a full disk leaves the target as it was") {
  const std::string dir = test::temp_dir("hostile-writes-export");
  const std::string weights = write_state_dict(dir + "/weights.pt");

  // /dev/full is a device: refused before anything is written (never renamed over).
  auto full = test::run_cli("weights export " + weights + " --out /dev/full");
  check_one_line(full, kExitInvalid, "cannot write '/dev/full': it is a character device, not a regular file");
  struct stat st {};
  REQUIRE(::stat("/dev/full", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));

  // A folder as the target.
  fs::create_directories(dir + "/folder.pt");
  auto folder = test::run_cli("weights export " + weights + " --out " + dir + "/folder.pt");
  check_one_line(folder, kExitInvalid, "it is a folder, not a regular file");
  CHECK(fs::is_directory(dir + "/folder.pt"));

  // A FIFO as the target: no reader, so writing into it would hang.
  REQUIRE(::mkfifo((dir + "/fifo.pt").c_str(), 0644) == 0);
  auto fifo = test::run_shell("timeout 60 " + test::cli() + " weights export " + weights + " --out " + dir + "/fifo.pt");
  check_one_line(fifo, kExitInvalid, "it is a named pipe, not a regular file");

  // A disk that fills up after 100 kB of the new file: one line, exit 1, the old file intact,
  // no temporary file left, and no abort while the archive writer unwinds.
  test::write_file(dir + "/old.pt", "the earlier file");
  auto enospc = test::run_cli("weights export " + weights + " --out " + dir + "/old.pt", disk_full_env("old.pt", 100000));
  check_one_line(enospc, kExitFailure, "cannot write '" + dir + "/old.pt': No space left on device");
  CHECK(test::read_file(dir + "/old.pt") == "the earlier file");
  CHECK(temporaries_in(dir) == 0);

  // The same on a disk with room: the file is replaced and reads back.
  auto fine = test::run_cli("weights export " + weights + " --out " + dir + "/old.pt");
  INFO(fine.output);
  CHECK(fine.exit_code == 0);
  CHECK(core::read_weights(dir + "/old.pt").size() == core::read_weights(weights).size());
  test::remove_tree(dir);
}

TEST_CASE("hostile writes: weights import --out over an existing file, killed mid-write, leaves the old file whole") {
  const std::string dir = test::temp_dir("hostile-writes-import");
  const std::string source = write_state_dict(dir + "/source.pt");
  const std::string target = write_state_dict(dir + "/target.pt");
  const std::string old_bytes = test::read_file(target);

  // The write stalls after 1 MB of the new file; the process is killed there.
  test::ChildOptions options;
  options.env["LD_PRELOAD"] = test::test_plugin_dir("disk_full") + "/libdisk_full.so";
  options.env["YOLOFLOW_DISK_FULL_MATCH"] = "target.pt";
  options.env["YOLOFLOW_DISK_FULL_BYTES"] = "1000000";
  options.env["YOLOFLOW_DISK_FULL_STALL"] = "1";
  test::ChildProcess child({"weights", "import", source, "--model", "yolo11n", "--out", target}, options);
  // Mid-write: a temporary file beside the target holds the first megabyte.
  bool mid_write = false;
  for (int i = 0; i < 600 && !mid_write; ++i) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (contains(e.path().filename().string(), ".tmp.") && fs::file_size(e.path()) >= 1000000) mid_write = true;
    }
    if (!mid_write) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(mid_write);
  child.signal(SIGKILL);
  CHECK(child.wait(30000) == 128 + SIGKILL);
  CHECK(test::read_file(target) == old_bytes);
  CHECK(core::read_weights(target).size() == core::read_weights(source).size());
  test::remove_tree(dir);
}

TEST_CASE("hostile writes: an --exist-ok start that fails before its first step leaves the earlier run as it was, resumable") {
  const std::string dir = test::temp_dir("hostile-writes-exist-ok");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/p.json", tiny_pipeline(2, ", \"val_every\": 0"));
  const std::string run = dir + "/run";
  // An earlier run stopped after 5 batches: resumable.
  auto first = test::run_cli("train " + dir + "/p.json stages.train.params.max_steps=5 --run-dir " + run);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  REQUIRE(contains(first.output, "continue with: yoloflow train --resume " + run));
  const auto before = tree(run);
  REQUIRE(before.count("pipeline.json") == 1);
  REQUIRE(before.count("weights/last.pt") == 1);

  // A new start into it whose augmentation throws at sample 3: the first optimizer step needs
  // samples 0-3 (batch 2, nominal batch 4), so it fails before that step, after the run
  // started writing its files.
  test::write_file(dir + "/boom.json", tiny_pipeline(2, ", \"val_every\": 0", "boom"));
  auto boom = test::run_cli("train " + dir + "/boom.json --exist-ok --run-dir " + run + " --plugin-path " +
                            test::test_plugin_dir("throwing"));
  INFO(boom.output);
  CHECK(boom.exit_code != 0);
  CHECK(contains(boom.output, "apply failed on purpose at sample 3"));
  CHECK(tree(run) == before);

  // A start killed before its first step (here while it writes its pipeline.json, after the
  // earlier run's files were kept aside) is undone by the next command that uses the folder.
  {
    test::ChildOptions options;
    options.env["LD_PRELOAD"] = test::test_plugin_dir("disk_full") + "/libdisk_full.so";
    options.env["YOLOFLOW_DISK_FULL_MATCH"] = ".pipeline.json.tmp.";
    options.env["YOLOFLOW_DISK_FULL_BYTES"] = "10";
    options.env["YOLOFLOW_DISK_FULL_STALL"] = "1";
    test::ChildProcess child({"train", dir + "/boom.json", "--exist-ok", "--run-dir", run, "--plugin-path",
                              test::test_plugin_dir("throwing")},
                             options);
    bool writing = false;
    for (int i = 0; i < 600 && !writing; ++i) {
      for (const auto& e : fs::directory_iterator(run)) {
        if (contains(e.path().filename().string(), ".pipeline.json.tmp.") && fs::file_size(e.path()) >= 10) writing = true;
      }
      if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    REQUIRE(writing);
    child.signal(SIGKILL);
    CHECK(child.wait(30000) == 128 + SIGKILL);
  }
  REQUIRE(fs::is_directory(run + "/.earlier-run"));

  // And the earlier run continues from where it stopped.
  auto resumed = test::run_cli("train --resume " + run);
  INFO(resumed.output);
  CHECK(resumed.exit_code == 0);
  CHECK(contains(resumed.output, "put back the earlier run in " + run));
  CHECK(contains(resumed.output, "epoch 2/2 done"));
  CHECK_FALSE(fs::exists(run + "/.earlier-run"));
  test::remove_tree(dir);
}
