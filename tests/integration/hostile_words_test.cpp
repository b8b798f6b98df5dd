// Numbers and words as a hostile user writes them, through the CLI: numbers no double holds
// (1e400), NaN and infinity, integers beyond their type, a key given twice in a file or a word
// twice on the command line, comments in JSON, devices yoloflow does not run on, and a
// pipeline's plugin_path naming nothing. Each is refused before anything runs, with exit code 2
// and one line naming the key, word or JSON path; no library's internals reach the user and
// nothing is written.
#include <doctest/doctest.h>

#include <filesystem>
#include <iterator>
#include <string>

#include "support/paths.h"
#include "support/output_checks.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;

// No library's own words reach the user, and no number turned into JSON's null.
void check_no_internals(const std::string& output) {
  test::check_no_internals(output);
  CHECK_MESSAGE(!contains(output, "null"), "'null' in: " << output);
}

// A folder with the small training pipeline on coco128 (read in place, nothing copied).
struct Workspace {
  std::string dir;
  explicit Workspace(const std::string& tag, const std::string& top = "") : dir(test::temp_dir(tag)) {
    test::write_file(path("p.json"), pipeline(top));
  }
  ~Workspace() { test::remove_tree(dir); }
  std::string path(const std::string& name) const { return dir + "/" + name; }
  static std::string pipeline(const std::string& top) {
    test::TrainPipeline p;
    p.top = top;
    p.train = R"("optimizer": {"plugin": "sgd"})";  // lr0= is the optimizer's
    std::string text = p.json();
    const std::string data = test::coco128_dir() + "/data.yaml";
    for (auto at = text.find("\"data.yaml\""); at != std::string::npos; at = text.find("\"data.yaml\"", at)) {
      text.replace(at, 11, "\"" + data + "\"");
    }
    return text;
  }
  // `yoloflow train p.json WORDS --run-dir run`: refused with exit code 2 naming `expected`, and no
  // run folder made.
  std::string refused_train(const std::string& words, const std::string& expected) const {
    const auto r = test::run_cli("train " + path("p.json") + " " + words + " --run-dir " + path("run"));
    INFO(words << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, expected));
    CHECK(contains(r.output, "nothing was run"));
    check_no_internals(r.output);
    CHECK_FALSE(fs::exists(path("run")));
    CHECK_FALSE(fs::exists("runs/train"));
    return r.output;
  }
  // The same for the shipped recipe on coco128: `yoloflow train data=D.yaml WORDS`.
  std::string refused_builtin(const std::string& words, const std::string& expected) const {
    const auto r = test::run_cli("train data=" + test::coco128_dir() + "/data.yaml " + words + " --run-dir " + path("run"));
    INFO(words << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, expected));
    check_no_internals(r.output);
    CHECK_FALSE(fs::exists(path("run")));
    return r.output;
  }
};

// How many entries the folder holds (0 when it does not exist).
std::size_t entries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return 0;
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A command refused in exactly one line (`error: ...`) with exit code 2, naming `expected`.
void refused_in_one_line(const std::string& args, const std::string& expected) {
  const auto r = test::run_cli(args);
  INFO(args << ": " << r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, expected));
  CHECK(r.output.rfind("error: ", 0) == 0);
  CHECK(r.output.find('\n') == r.output.size() - 1);
  check_no_internals(r.output);
}

}  // namespace

TEST_CASE("hostile words: numbers no double holds, NaN and infinity are refused naming the word") {
  const Workspace w("hostile-finite");
  std::string out = w.refused_train("lr0=1e400", "stages.train.params.optimizer.params.lr0: 1e400 is a number too large");
  out = w.refused_train("lr0=-1e400", "-1e400 is a number too large for a double");
  out = w.refused_train("lr0=nan", "lr0: nan is not a finite number");
  out = w.refused_train("lr0=inf", "lr0: inf is not a finite number");
  out = w.refused_train("stages.source.params.fliplr=1e400", "stages.source.params.fliplr: 1e400 is a number too large");
  // Words that write a schedule (mosaic=) read their number themselves: the same check. The
  // shipped recipe (train data=...) has the mosaic stage.
  out = w.refused_builtin("mosaic=1e400", "mosaic=1e400: 1e400 is a number too large");
  // The same in a file: 1e400 would become null when the resolved pipeline is written.
  test::write_file(w.path("inf.json"), Workspace::pipeline(R"("_doc": "size", "max_in_flight": -1e400)"));
  auto r = test::run_cli("validate " + w.path("inf.json"));
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "inf.json: max_in_flight: -1e400 is a number too large for a double"));
  check_no_internals(r.output);
}

TEST_CASE("hostile words: \"imgsz\": 1e400 in a pipeline file is refused at its JSON path, never a json.exception") {
  const Workspace w("hostile-imgsz");
  std::string text = Workspace::pipeline("");
  text.replace(text.find("\"imgsz\": 64"), 11, "\"imgsz\": 1e400");
  test::write_file(w.path("big.json"), text);
  for (const char* verb : {"train", "run"}) {
    const auto r = test::run_cli(std::string(verb) + " " + w.path("big.json") + " --run-dir " + w.path("run"));
    INFO(verb << ": " << r.output);
    CHECK(contains(r.output, "big.json: imgsz: 1e400 is a number too large for a double"));
    CHECK(r.exit_code == 2);
    check_no_internals(r.output);
    CHECK_FALSE(fs::exists(w.path("run")));
  }
  const auto v = test::run_cli("validate " + w.path("big.json"));
  CHECK(v.exit_code == 2);
  CHECK(contains(v.output, "big.json: imgsz: 1e400 is a number too large for a double"));
}

TEST_CASE("hostile words: integers beyond their parameter's range or type are out of range") {
  const Workspace w("hostile-integers");
  w.refused_train("batch=99999999999999999999", "stages.batch.params.batch: 1e+20 is out of range");
  w.refused_train("imgsz=1e12", "imgsz: 1e+12 is out of range");
  w.refused_train("epochs=-1", "epochs: -1 is out of range");
  w.refused_train("seed=99999999999999999999", "seed: 1e+20 is out of range");
  w.refused_train("seed=18446744073709551615", "seed: 1.84467e+19 is out of range");
  w.refused_builtin("close_mosaic=1e12", "close_mosaic=1e12: expected a whole number of epochs from 0 to 100000");
  // A count the words expand into a list: bounded, whatever the number.
  w.refused_train("freeze=99999999999", "freeze=99999999999: expected a number of layers to freeze from the first, at most");
}

TEST_CASE("hostile words: a key given twice in a pipeline file is refused naming both lines") {
  const Workspace w("hostile-duplicate-key");
  std::string text = Workspace::pipeline("");
  text.replace(text.find("\"epochs\": 1"), 11, "\"epochs\": 1,\n  \"epochs\": 3");
  test::write_file(w.path("twice.json"), text);
  for (const char* verb : {"validate", "train"}) {
    const auto r = test::run_cli(std::string(verb) + " " + w.path("twice.json") +
                                 (std::string(verb) == "train" ? " --run-dir " + w.path("run") : std::string()));
    INFO(verb << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, "twice.json: epochs: duplicate key 'epochs', on lines 2 and 3"));
    check_no_internals(r.output);
    CHECK_FALSE(fs::exists(w.path("run")));
  }
  // A sweep file too: the same reader.
  test::write_file(w.path("s.json"), "{\"base\": \"p.json\",\n \"runs\": [{\"name\": \"a\", \"name\": \"b\"}]}\n");
  refused_in_one_line("sweep " + w.path("s.json") + " --dry-run", "s.json: runs[0].name: duplicate key 'name', twice on line 2");
}

TEST_CASE("hostile words: a word given twice on the command line is refused naming both") {
  const Workspace w("hostile-duplicate-word");
  w.refused_train("epochs=3 epochs=5", "epochs: 'epochs' is given twice on the command line: epochs=3, then epochs=5");
  const auto r = test::run_cli("validate " + w.path("p.json") + " imgsz=64 imgsz=96");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(contains(r.output, "'imgsz' is given twice on the command line: imgsz=64, then imgsz=96"));
  // The commands that turn words into options say it the same way.
  refused_in_one_line("val model=a.pt conf=0.1 conf=0.2", "'conf' is given twice on the command line: conf=0.1, then conf=0.2");
  refused_in_one_line("predict model=a.pt imgsz=64 imgsz=96", "'imgsz' is given twice");
}

TEST_CASE("hostile words: comments in JSON are malformed JSON with their line and column") {
  const Workspace w("hostile-comments");
  std::string text = Workspace::pipeline("");
  test::write_file(w.path("line.json"), "{\n  // the run\n" + text.substr(2));
  test::write_file(w.path("block.json"), "{\n  \"name\": \"tiny\", /* the run */\n" + text.substr(2));
  for (const auto& [file, where] : {std::pair<std::string, std::string>{"line.json", "line 2, column 3"},
                                    std::pair<std::string, std::string>{"block.json", "line 2, column 19"}}) {
    const auto r = test::run_cli("train " + w.path(file) + " --run-dir " + w.path("run"));
    INFO(file << ": " << r.output);
    CHECK(r.exit_code == 2);
    CHECK(contains(r.output, file + ": malformed JSON at " + where));
    CHECK(contains(r.output, "comments are not JSON"));
    check_no_internals(r.output);
    CHECK_FALSE(fs::exists(w.path("run")));
  }
}

TEST_CASE("hostile words: a device yoloflow does not run on is refused up front on every command") {
  const Workspace w("hostile-device");
  // val and predict number their output folders in runs/: none is added.
  const std::size_t val_runs = entries("runs/val"), predict_runs = entries("runs/predict");
  const std::string accepted = "is not a device yoloflow runs on; the devices are cpu, cuda, cuda:N";
  w.refused_train("device=mps", "device=mps " + accepted);
  w.refused_train("device=tpu", "device=tpu " + accepted);
  w.refused_train("device=cuda:x", "device=cuda:x " + accepted);
  w.refused_train("device=-5", "device=-5 " + accepted);
  w.refused_train("device=", "device=\"\" " + accepted);
  // In the file, its JSON path.
  test::write_file(w.path("mps.json"), Workspace::pipeline(R"("device": "mps")"));
  const auto v = test::run_cli("validate " + w.path("mps.json"));
  CHECK(v.exit_code == 2);
  CHECK(contains(v.output, "mps.json: device: mps " + accepted));
  // Every command, before it reads its weights (a.pt does not exist: the device is refused first).
  refused_in_one_line("train " + w.path("p.json") + " --device mps --run-dir " + w.path("run"), "--device mps " + accepted);
  refused_in_one_line("val model=a.pt data=d.yaml device=mps", "device=mps " + accepted);
  refused_in_one_line("val --weights a.pt --device mps", "--device mps " + accepted);
  refused_in_one_line("predict model=a.pt source=x.jpg device=mps", "device=mps " + accepted);
  refused_in_one_line("predict --weights a.pt --source x.jpg --device cuda:x", "--device cuda:x " + accepted);
  refused_in_one_line("export model=a.pt format=onnx device=mps", "device=mps " + accepted);
  refused_in_one_line("info model=a.pt device=mps", "device=mps " + accepted);
  refused_in_one_line("sweep s.json --devices mps", "--devices: 'mps' is not a CUDA device");
  CHECK_FALSE(fs::exists(w.path("run")));
  CHECK(entries("runs/val") == val_runs);
  CHECK(entries("runs/predict") == predict_runs);
}

TEST_CASE("hostile words: validate reports a plugin_path that names nothing, as train refuses it") {
  const Workspace w("hostile-plugin-path", R"("plugin_path": ["no-such-plugins"])");
  const auto v = test::run_cli("validate " + w.path("p.json"));
  INFO(v.output);
  CHECK(v.exit_code == 2);
  CHECK(contains(v.output, "p.json: plugin_path[0]: no-such-plugins does not exist (looked for " + w.path("no-such-plugins")));
  CHECK(contains(v.output, "p.json: 1 problem; nothing was run"));
  const auto t = w.refused_train("", "p.json: plugin_path[0]: no-such-plugins does not exist");
  // A plugin_path that exists is loaded by validate as train loads it.
  fs::create_directories(w.path("plugins"));
  test::write_file(w.path("ok.json"), Workspace::pipeline(R"("plugin_path": ["plugins"])"));
  const auto ok = test::run_cli("validate " + w.path("ok.json"));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("hostile words: exit codes: refused input is 2 on every command") {
  refused_in_one_line("val model=a.pt conf=1e400", "conf=1e400: 1e400 is a number too large for a double");
  refused_in_one_line("predict model=a.pt source=x.jpg iou=-1e400", "iou=-1e400: -1e400 is a number too large");
}
