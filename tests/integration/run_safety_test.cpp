// A user's run is never damaged, as a reliability tester would try it through the CLI: a
// refused start, resume or --exist-ok leaves the run folder byte for byte as it was; a resume
// works as the tool prints it (from another folder, with relative paths, with a plugin from
// --plugin-path, given RUN/weights/last.pt); a changed dataset reaches every stage and another
// class count is refused; one process per run folder; a checkpoint that cannot be written
// stops the run at that epoch with results.csv agreeing; temporary files of a killed writer
// are removed. Tiny settings (8 coco128 images at 64 px) keep it fast.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/run/results_csv.h"
#include "support/child_process.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/output_checks.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;
using test::tree;

// Every file below `dir` with its bytes: what "the folder is as it was" compares.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = test::read_file(e.path().string());
  }
  return files;
}

std::size_t count_of(const std::string& s, const std::string& part) {
  std::size_t n = 0;
  for (auto at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
  return n;
}

// 8 images, batch 2: 4 batches an epoch; the top-level `data` relative to the pipeline file.
std::string pipeline_text(int epochs, const std::string& train_extra = "") {
  test::TrainPipeline p;
  p.epochs = epochs;
  p.seed = 1;
  p.top = R"("ordered": true, "device": "cpu", "data": "data.yaml")";
  p.train = R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 4, "warmup_epochs": 0, "val_every": 0, "log_every": 1)" +
            train_extra;
  std::string text = p.json();
  // The stages take the pipeline's one dataset: no `data` of their own.
  for (std::string::size_type at; (at = text.find("\"data\": \"data.yaml\", \"split\"")) != std::string::npos;) {
    text.replace(at, std::string("\"data\": \"data.yaml\", ").size(), "");
  }
  for (std::string::size_type at; (at = text.find("{\"data\": \"data.yaml\", \"scheduler\"")) != std::string::npos;) {
    text.replace(at + 1, std::string("\"data\": \"data.yaml\", ").size(), "");
  }
  return text;
}

struct Tiny {
  std::string dir;
  std::string path(const std::string& name) const { return dir + "/" + name; }
};

Tiny make_tiny(const std::string& tag) {
  Tiny t{test::temp_dir(tag)};
  test::write_coco128_subset(t.dir, 8);
  test::write_file(t.path("tiny.json"), pipeline_text(2));
  return t;
}

// A run stopped after its first 5 batches (epoch 1 and one batch of epoch 2): resumable.
std::string interrupted_run(const Tiny& t, const std::string& name) {
  const std::string run = t.path(name);
  auto r = test::run_cli("train " + t.path("tiny.json") + " stages.train.params.max_steps=5 --run-dir " + run);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(contains(r.output, "continue with: yoloflow train --resume " + run));
  return run;
}

// coco128's subset with only 3 class names (labels of other classes are then out of range).
std::string three_class_data(const Tiny& t) {
  const std::string yaml = test::read_file(t.path("data.yaml"));
  std::string head = yaml.substr(0, yaml.find("names:"));
  test::write_file(t.path("three.yaml"), head + "names:\n  0: person\n  1: bicycle\n  2: car\n");
  return t.path("three.yaml");
}

}  // namespace

TEST_CASE("a refused start, resume or --exist-ok leaves the run folder byte for byte as it was") {
  const auto t = make_tiny("safety-refused");
  const std::string run = interrupted_run(t, "run");
  const auto before = snapshot(run);
  REQUIRE(before.count("pipeline.json") == 1);
  REQUIRE(before.count("weights/last.pt") == 1);

  // A new start into it with data whose training split has no images: refused when the
  // source opens it, after validation.
  fs::create_directories(t.path("empty/images/train"));
  test::write_file(t.path("empty/data.yaml"), "path: " + t.path("empty") + "\ntrain: images/train\nval: images/train\nnames:\n  0: a\n");
  auto empty = test::run_cli("train " + t.path("tiny.json") + " data=" + t.path("empty/data.yaml") + " --run-dir " + run +
                             " --exist-ok");
  INFO(empty.output);
  CHECK(empty.exit_code == 2);
  CHECK(snapshot(run) == before);

  // A resume that asks for another model than the checkpoint holds.
  auto other_model = test::run_cli("train --resume " + run + " model=yolo11s");
  INFO(other_model.output);
  CHECK(other_model.exit_code == 2);
  CHECK(contains(other_model.output, "a resumed run keeps its model"));
  CHECK(snapshot(run) == before);

  // A resume on data with another class count.
  auto other_classes = test::run_cli("train --resume " + run + " data=" + three_class_data(t));
  INFO(other_classes.output);
  CHECK(other_classes.exit_code == 2);
  CHECK(contains(other_classes.output, "for 80 classes, but this pipeline builds a yolo11n for 3 classes"));
  CHECK(snapshot(run) == before);

  // And after all of them the run continues as printed.
  auto rest = test::run_cli("train --resume " + run);
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  CHECK(core::load_checkpoint(run + "/weights/last.pt").epoch == 2);

  // A finished run asked to resume with other data: told how to extend it, nothing written.
  const auto finished = snapshot(run);
  auto again = test::run_cli("train --resume " + run + " data=" + t.path("data.yaml"));
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(contains(again.output, "finished all 2 epochs"));
  CHECK(snapshot(run) == finished);
  test::remove_tree(t.dir);
}

TEST_CASE("a run refused while it is being built leaves no numbered folder behind") {
  const auto t = make_tiny("safety-numbered");
  fs::create_directories(t.path("empty/images/train"));
  test::write_file(t.path("empty/data.yaml"), "path: " + t.path("empty") + "\ntrain: images/train\nval: images/train\nnames:\n  0: a\n");
  auto r = test::run_shell("cd " + t.dir + " && " + test::cli() + " train tiny.json data=empty/data.yaml");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "no usable images"));
  CHECK(fs::is_directory(t.path("runs/tiny")));
  CHECK(fs::is_empty(t.path("runs/tiny")));
  test::remove_tree(t.dir);
}

TEST_CASE("a run folder that holds other runs (the parent of numbered runs) is refused in one line; nothing changes") {
  const auto t = make_tiny("safety-parent");
  const std::string here = "cd " + t.dir + " && " + test::cli() + " ";
  // Two numbered runs, as `yoloflow train tiny.json` makes them: runs/tiny/1 and runs/tiny/2.
  for (int i = 0; i < 2; ++i) {
    const auto r = test::run_shell(here + "train tiny.json stages.train.params.max_steps=1");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  REQUIRE(fs::exists(t.path("runs/tiny/2/weights/last.pt")));
  const auto before = tree(t.dir);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const std::string absolute = t.path("runs/tiny");
  // The parent itself, by each way of naming the folder; --exist-ok does not let a run write
  // among the others either.
  for (const auto& [args, folder] : std::vector<std::pair<std::string, std::string>>{
           {"train tiny.json --run-dir runs/tiny", "runs/tiny"},
           {"train tiny.json --run-dir runs/tiny --exist-ok", "runs/tiny"},
           {"run tiny.json --run-dir runs/tiny", "runs/tiny"},
           {"train tiny.json project=" + t.path("runs") + " name=tiny exist_ok=True", absolute},
           {"predict --weights runs/tiny/1/weights/last.pt --source " + image + " --out runs/tiny", "runs/tiny"},
           {"val --weights runs/tiny/1/weights/last.pt --out runs/tiny", "runs/tiny"}}) {
    CAPTURE(args);
    const auto r = test::run_shell(here + args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "error: the run folder " + folder + " is not a run but holds other runs (" + folder +
                                 "/1, " + folder + "/2): this run's files would be written among them. Give it a "
                                 "folder of its own, e.g. " + folder + "/3, or leave the folder out"));
    CHECK(count_of(r.output, "error: ") == 1);
    CHECK(tree(t.dir) == before);
  }
  // The folder it names is taken, and a run's own folder is still a run folder (--exist-ok).
  auto ok = test::run_shell(here + "train tiny.json stages.train.params.max_steps=1 --run-dir runs/tiny/3");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(fs::exists(t.path("runs/tiny/3/weights/last.pt")));
  ok = test::run_shell(here + "train tiny.json stages.train.params.max_steps=1 --run-dir runs/tiny/1 --exist-ok");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  test::remove_tree(t.dir);
}

TEST_CASE("train --resume works as printed: from another folder, with relative paths, a plugin and last.pt") {
  const auto t = make_tiny("safety-resume-paths");
  // The pipeline's data is relative to its own folder, and the run is started from that folder
  // with a plugin from --plugin-path (a callback) and resumed from elsewhere without it.
  test::write_file(t.path("tiny.json"), pipeline_text(2, R"(, "max_steps": 5, "callbacks": [{"plugin": "callback_probe"}])"));
  const std::string plugin = test::test_plugin_dir("callback_probe");
  auto first = test::run_shell("cd " + t.dir + " && " + test::cli() + " --plugin-path " + plugin +
                               " train tiny.json --run-dir run");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto doc = nlohmann::json::parse(test::read_file(t.path("run/pipeline.json")));
  CHECK(doc["data"] == t.path("data.yaml"));
  REQUIRE(doc["plugin_path"].is_array());
  CHECK(doc["plugin_path"][0] == fs::absolute(plugin).lexically_normal().string());

  // From the file system's root, naming the checkpoint as Ultralytics' resume= does.
  auto rest = test::run_shell("cd / && " + test::cli() + " train --resume " + t.path("run/weights/last.pt") +
                              " stages.train.params.max_steps=0");
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  CHECK(contains(rest.output, "resuming from " + t.path("run/weights/last.pt")));
  CHECK(core::load_checkpoint(t.path("run/weights/last.pt")).epoch == 2);

  auto outside = test::run_cli("train --resume " + t.path("tiny.json"));
  CHECK(outside.exit_code == 2);
  CHECK(contains(outside.output, "a checkpoint to resume is RUN/weights/last.pt"));
  test::remove_tree(t.dir);
}

TEST_CASE("train resume model=RUN/weights/last.pt resumes, the words in any order; resume alone changes nothing") {
  const auto t = make_tiny("safety-resume-word");
  const std::string run = interrupted_run(t, "run");
  const auto before = tree(t.dir);
  // Without a checkpoint Ultralytics guesses the latest run; yoloflow says what to write.
  for (const std::string words : {"resume", "resume=True", "detect train resume"}) {
    CAPTURE(words);
    const auto refused = test::run_cli(words.rfind("detect", 0) == 0 ? words : "train " + words);
    CHECK(refused.exit_code == 2);
    CHECK(contains(refused.output, "resume: name the run to continue: resume model=RUN_DIR/weights/last.pt"));
    CHECK(tree(t.dir) == before);
  }
  // LAST stands for the checkpoint; Ultralytics takes the words in any order.
  for (std::string words : {"train resume model=LAST", "detect train resume=True model=LAST", "train model=LAST resume=True",
                            "train model=LAST resume"}) {
    CAPTURE(words);
    words.replace(words.find("LAST"), 4, run + "/weights/last.pt");
    const auto r = test::run_cli(words + " stages.train.params.max_steps=1");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "resuming from " + run + "/weights/last.pt"));
  }
  test::remove_tree(t.dir);
}

TEST_CASE("data= on resume reaches every stage that reads the dataset, the validation source too") {
  const auto t = make_tiny("safety-resume-data");
  const std::string run = interrupted_run(t, "run");
  // The same classes, other images: what progressive data changes look like.
  const std::string other = test::write_coco128_subset(t.path("other"), 6);
  auto r = test::run_cli("train --resume " + run + " data=" + other);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto doc = nlohmann::json::parse(test::read_file(run + "/pipeline.json"));
  CHECK(doc["data"] == other);
  CHECK(doc["stages"]["source"]["params"]["data"] == other);
  CHECK(doc["stages"]["train"]["params"]["data"] == other);
  CHECK(doc["stages"]["train"]["params"]["val_source"]["params"]["data"] == other);
  test::remove_tree(t.dir);
}

TEST_CASE("one process per run folder: a second is refused while the first runs, and a killed one leaves no lock") {
  const auto t = make_tiny("safety-lock");
  const std::string run = interrupted_run(t, "run");
  {
    // Resumed with many epochs and no step limit (the interrupted run's 5 steps would end it
    // within a second), so that it is still training while the second one starts.
    test::ChildProcess first({"train", "--resume", run, "epochs=500", "stages.train.params.max_steps=0"});
    REQUIRE(first.wait_for_output("resuming from", 120000));
    auto second = test::run_cli("train --resume " + run);
    INFO(second.output);
    CHECK(second.exit_code == 2);
    CHECK(contains(second.output, "is in use by another yoloflow process"));
    first.signal(SIGKILL);
    first.wait(30000);
  }
  auto after = test::run_cli("train --resume " + run + " epochs=3");
  INFO(after.output);
  CHECK(after.exit_code == 0);
  CHECK_FALSE(contains(after.output, "in use by another"));
  test::remove_tree(t.dir);
}

TEST_CASE("a checkpoint that cannot be written stops the run at that epoch, and results.csv agrees with last.pt") {
  const auto t = make_tiny("safety-disk-full");
  test::write_file(t.path("three.json"), pipeline_text(3));
  const std::string run = t.path("run");
  // The first last.pt is written; the second (epoch 2's) meets a full disk.
  const std::string env = "LD_PRELOAD=" + test::test_plugin_dir("disk_full") +
                          "/libdisk_full.so YOLOFLOW_DISK_FULL_MATCH=.last.pt.tmp. YOLOFLOW_DISK_FULL_AFTER=1 ";
  auto r = test::run_cli("train " + t.path("three.json") + " --run-dir " + run, env);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.output, "the checkpoint of epoch 2 could not be written"));
  CHECK(contains(r.output, "No space left on device"));
  CHECK_FALSE(contains(r.output, "epoch 3/3 done"));
  CHECK(core::load_checkpoint(run + "/weights/last.pt").epoch == 1);
  core::ResultsCsv results(run + "/results.csv");
  results.load();
  CHECK(results.rows().size() == 1);

  // A writer killed between writing and renaming leaves a temporary file; resuming removes it.
  test::write_file(run + "/weights/.last.pt.tmp.99999.0", "half a checkpoint");
  auto rest = test::run_cli("train --resume " + run);
  INFO(rest.output);
  CHECK(rest.exit_code == 0);
  CHECK(contains(rest.output, "removed 1 temporary file"));
  CHECK_FALSE(fs::exists(run + "/weights/.last.pt.tmp.99999.0"));
  results.load();
  CHECK(results.rows().size() == 3);
  test::remove_tree(t.dir);
}

TEST_CASE("integer settings are checked in 64 bits against their ranges before anything runs") {
  const auto t = make_tiny("safety-integers");
  for (const char* word : {"epochs=1e12", "epochs=4294967297", "epochs=0", "imgsz=100000"}) {
    auto r = test::run_cli("train " + t.path("tiny.json") + " " + word + " --run-dir " + t.path("run"));
    INFO(word << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "out of range"));
    CHECK(contains(r.output, "nothing was run"));
    CHECK_FALSE(fs::exists(t.path("run")));
  }
  test::remove_tree(t.dir);
}
