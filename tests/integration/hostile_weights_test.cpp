// Weights files whose tensors declare more than they hold, or hold another kind of number than
// the model takes. A tensor's sizes come from the file: a view of one stored float with stride
// 0 may declare 2^40 elements and stay inside its storage, and whatever copied it first would
// ask for 4 TiB. Every command that reads weights refuses such a tensor in one line naming the
// file and the tensor, in bounded memory and at once, writing nothing; an integer tensor where
// a float weight belongs (and a float where a counter belongs) is refused naming the key, the
// file and both dtypes.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "training/checkpoint/checkpoint.h"
#include "training/model/declared_tensor.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/output_checks.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;

// Every command runs with at most ~4 GB of address space: a tensor that is materialised fails
// there, loudly, instead of passing on a large machine.
const std::string kCappedMemory = "ulimit -v 4000000; ";

// Exit code 2, the expected words, one error line, nothing of a library's internals, quickly.
void check_refused(const test::CliResult& r, const std::string& expected, double seconds) {
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, expected));
  for (const char* internal : {"Exception raised from", "frame #", "can't allocate", "bad_alloc", "std::", "c10::",
                               "CPUAllocator", "Killed", "Segmentation"}) {
    CHECK_MESSAGE(!contains(r.output, internal), "'" << internal << "' in the output");
  }
  std::size_t errors = 0;
  for (auto at = r.output.find("error: "); at != std::string::npos; at = r.output.find("error: ", at + 1)) ++errors;
  CHECK(errors == 1);
  CHECK(seconds < 60);
}

// Runs the CLI under the memory cap and times it.
struct Timed {
  test::CliResult result;
  double seconds = 0;
};
Timed cli(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  Timed t;
  t.result = test::run_cli(args, kCappedMemory);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}
Timed train(const std::string& data, const std::string& run_dir, const std::string& overrides) {
  const auto start = std::chrono::steady_clock::now();
  Timed t;
  t.result = test::train_coco128_cpu(data, run_dir, "epochs=1 " + overrides, kCappedMemory);
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}
Timed resume(const std::string& run) {
  const auto start = std::chrono::steady_clock::now();
  Timed t;
  t.result = test::run_cli("train --resume " + run, kCappedMemory + "OMP_NUM_THREADS=1 ");
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

// DIR/run, a run folder `train --resume` takes: the CPU training pipeline on `data`, and
// `checkpoint` written as its weights/last.pt by the caller. Returns the checkpoint's path.
std::string resumable_run(const std::string& dir, const std::string& data) {
  fs::create_directories(dir + "/run/weights");
  test::write_file(dir + "/run/pipeline.json", test::read_file(test::coco128_cpu_pipeline(data)));
  return dir + "/run/weights/last.pt";
}

// Runs `script` (Python with torch) with the arguments; the test needs what it writes.
void python(const std::string& dir, const std::string& script, const std::string& args) {
  test::write_file(dir + "/edit.py", script);
  const auto r = test::run_shell(test::python() + " " + dir + "/edit.py " + args);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// A yolo11n state dict for 80 classes, as `yoloflow weights export` writes it.
std::string write_state_dict(const std::string& path) {
  auto model = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n", 80);
  core::write_weights(path, core::module_state(model->module()));
  return path;
}

// The model's state dict with one tensor replaced by a view of one stored zero that declares
// 2^40 elements (4 TiB of float32).
const char* kHugeView = R"(import sys, torch
sd = torch.load(sys.argv[1], weights_only=False)
sd[sys.argv[3]] = torch.zeros(1).expand(2 ** 40)
torch.save(sd, sys.argv[2])
)";

}  // namespace

TEST_CASE("hostile weights: a view declaring 2^40 elements is refused by every command that reads weights") {
  const auto dir = test::temp_dir("hostile-view");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const std::string good = write_state_dict(dir + "/good.pt");
  const std::string huge = dir + "/huge.pt";
  python(dir, kHugeView, good + " " + huge + " model.0.conv.weight");
  const std::string declares = "tensor 'model.0.conv.weight' declares 1099511627776 elements of float32 (4398046511104 "
                               "bytes) over a storage of 1 element: more than the 1 GiB one tensor may hold";

  for (const std::string& command :
       {"info --weights " + huge + " --model yolo11n", "val --weights " + huge + " --model yolo11n --data " + data,
        "predict --weights " + huge + " --model yolo11n --source " + image + " --out " + dir + "/pred"
#ifdef YOLOFLOW_WITH_ONNX
        , "export --weights " + huge + " --model yolo11n --out " + dir + "/x.onnx"
#endif
       }) {
    CAPTURE(command);
    const Timed t = cli(command);
    check_refused(t.result, "--weights " + huge + ": " + declares, t.seconds);
  }
  for (const std::string& command : {"weights import " + huge + " --model yolo11n --out " + dir + "/w.pt",
                                     "weights export " + huge + " --out " + dir + "/w.pt"}) {
    CAPTURE(command);
    const Timed t = cli(command);
    check_refused(t.result, "weights file '" + huge + "': " + declares, t.seconds);
  }
  const Timed t = train(data, dir + "/run", "weights=" + huge);
  check_refused(t.result, "weights file '" + huge + "': " + declares, t.seconds);
  CHECK_FALSE(fs::exists(dir + "/pred"));
  CHECK_FALSE(fs::exists(dir + "/x.onnx"));
  CHECK_FALSE(fs::exists(dir + "/w.pt"));
  CHECK_FALSE(fs::exists(dir + "/run/weights"));
  // The same file with the tensor as it was is read: the refusal is the view's, not the file's.
  const auto ok = cli("weights import " + good + " --model yolo11n --out " + dir + "/w.pt");
  INFO(ok.result.output);
  CHECK(ok.result.exit_code == 0);
}

TEST_CASE("hostile weights: a checkpoint of yoloflow train with a 2^40-element view is refused on predict and --resume") {
  const auto dir = test::temp_dir("hostile-checkpoint");
  const std::string data = test::write_coco128_subset(dir, 2);
  core::Checkpoint c;
  c.model = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}};
  c.ema = c.model;
  c.meta = {{"model", {{"plugin", "yolo11"}, {"params", {{"scale", "n"}}}}}, {"architecture", "yolo11n"}, {"nc", 80}};
  core::save_checkpoint(dir + "/plain.pt", c);
  const std::string last = resumable_run(dir, data);
  python(dir, R"(import sys, torch
ck = torch.load(sys.argv[1], weights_only=False)
ck['ema']['model.0.conv.weight'] = torch.zeros(1).expand(2 ** 40)
torch.save(ck, sys.argv[2])
)", dir + "/plain.pt " + last);
  const std::string declares = "tensor 'ema.model.0.conv.weight' declares 1099511627776 elements of float32";

  const Timed p = cli("predict --weights " + last + " --source " + test::coco128_dir() + "/images/train2017/000000000009.jpg --out " +
                      dir + "/pred");
  check_refused(p.result, "--weights " + last + ": " + declares, p.seconds);
  CHECK_FALSE(fs::exists(dir + "/pred"));

  const std::string bytes = test::read_file(last);
  const Timed r = resume(dir + "/run");
  check_refused(r.result, "checkpoint '" + last + "': " + declares, r.seconds);
  CHECK(test::read_file(last) == bytes);
  CHECK_FALSE(fs::exists(dir + "/run/results.csv"));
}

TEST_CASE("hostile weights: an Ultralytics checkpoint whose model.stride declares 2^40 elements is refused") {
  const auto dir = test::temp_dir("hostile-ultralytics");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string best = test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-best.pt";
  const std::string file = dir + "/yolo11n.pt";
  // The pickled tree is edited without Ultralytics (tests/support/edit_pickled_checkpoint.py's
  // stand-in classes): the stride tensor's rebuild arguments become size (2^40,), stride (0,).
  python(dir, std::string("import sys\nsys.path.insert(0, '") + YOLOFLOW_SOURCE_DIR + R"(/tests/support')
import io, zipfile, edit_pickled_checkpoint as e
zin = zipfile.ZipFile(sys.argv[1])
pkl = next(n for n in zin.namelist() if n.endswith('/data.pkl'))
root = e.Reader(io.BytesIO(zin.read(pkl))).load()
stride = root['model']._state['stride']
args = list(stride._args)
args[2], args[3] = (2 ** 40,), (0,)
stride._args = tuple(args)
out = io.BytesIO()
e.Writer(out, protocol=2).dump(root)
with zipfile.ZipFile(sys.argv[2], 'w', zipfile.ZIP_STORED) as zout:
    for info in zin.infolist():
        zout.writestr(info.filename, out.getvalue() if info.filename == pkl else zin.read(info.filename))
)", best + " " + file);
  const std::string declares = "tensor 'model.stride' declares 1099511627776 elements of float32 (4398046511104 bytes) "
                               "over a storage of 3 elements";
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  for (const std::string& command : {"info --weights " + file, "val --weights " + file + " --data " + data,
                                     "predict --weights " + file + " --source " + image + " --out " + dir + "/pred"
#ifdef YOLOFLOW_WITH_ONNX
                                     , "export --weights " + file + " --out " + dir + "/x.onnx"
#endif
       }) {
    CAPTURE(command);
    const Timed t = cli(command);
    check_refused(t.result, "--weights " + file + ": " + declares, t.seconds);
  }
  const Timed imported = cli("weights import " + file + " --out " + dir + "/w.pt");
  check_refused(imported.result, "weights file '" + file + "': " + declares, imported.seconds);
  const Timed trained = train(data, dir + "/run", "model=" + file);
  check_refused(trained.result, declares, trained.seconds);
  CHECK_FALSE(fs::exists(dir + "/w.pt"));
  CHECK_FALSE(fs::exists(dir + "/pred"));
}

TEST_CASE("hostile weights: views repeating one stored value are refused once they declare more than the file plus 1 GiB") {
  const auto dir = test::temp_dir("hostile-repeat");
  // 20 views of 2^27 float32 (512 MiB each, within one tensor's budget) over one stored zero:
  // `weights export` would otherwise write 10 GiB.
  python(dir, R"(import sys, torch
one = torch.zeros(1)
torch.save({'t%d' % k: one.expand(2 ** 27) for k in range(20)}, sys.argv[1])
)", dir + "/repeat.pt");
  const Timed t = cli("weights export " + dir + "/repeat.pt --out " + dir + "/w.pt");
  check_refused(t.result, "weights file '" + dir + "/repeat.pt': tensor 't2' brings what its tensors declare to 1610612736 bytes",
                t.seconds);
  CHECK(contains(t.result.output, "plus 1 GiB: its views repeat the values it stores that often"));
  CHECK_FALSE(fs::exists(dir + "/w.pt"));
}

TEST_CASE("hostile weights: an integer tensor where a float weight belongs, and a float counter, are refused by dtype") {
  const auto dir = test::temp_dir("hostile-dtype");
  const std::string good = write_state_dict(dir + "/good.pt");
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  python(dir, R"(import sys, torch
sd = torch.load(sys.argv[1], weights_only=False)
sd['model.0.conv.weight'] = sd['model.0.conv.weight'].long()
torch.save(sd, sys.argv[2])
sd = torch.load(sys.argv[1], weights_only=False)
sd['model.0.bn.num_batches_tracked'] = sd['model.0.bn.num_batches_tracked'].float()
torch.save(sd, sys.argv[3])
)", good + " " + dir + "/int.pt " + dir + "/counter.pt");

  const Timed p = cli("predict --weights " + dir + "/int.pt --model yolo11n --source " + image + " --out " + dir + "/pred");
  check_refused(p.result,
                "weights '" + dir + "/int.pt': tensor 'model.0.conv.weight' holds int64 values where the model's float32 "
                "tensor takes floating-point ones",
                p.seconds);
  const Timed i = cli("weights import " + dir + "/counter.pt --model yolo11n --out " + dir + "/w.pt");
  check_refused(i.result,
                "weights '" + dir + "/counter.pt': tensor 'model.0.bn.num_batches_tracked' holds float32 values where the "
                "model's int64 tensor takes integer ones",
                i.seconds);
  CHECK_FALSE(fs::exists(dir + "/pred"));
  CHECK_FALSE(fs::exists(dir + "/w.pt"));

  // Precision is not kind: float16 weights (as Ultralytics releases them) are taken.
  python(dir, R"(import sys, torch
sd = torch.load(sys.argv[1], weights_only=False)
torch.save({k: v.half() if v.is_floating_point() else v for k, v in sd.items()}, sys.argv[2])
)", good + " " + dir + "/half.pt");
  const Timed h = cli("weights import " + dir + "/half.pt --model yolo11n --out " + dir + "/w.pt");
  INFO(h.result.output);
  CHECK(h.result.exit_code == 0);
}

TEST_CASE("hostile weights: a resumed checkpoint with an int64 weight is refused before the model changes") {
  const auto dir = test::temp_dir("hostile-resume-dtype");
  const std::string data = test::write_coco128_subset(dir, 2);
  auto model = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n", 80);
  core::Checkpoint c;
  for (const auto& kv : model->module().named_parameters()) c.model.emplace_back(kv.key(), kv.value());
  for (const auto& kv : model->module().named_buffers()) c.model.emplace_back(kv.key(), kv.value());
  c.model.front().second = c.model.front().second.to(torch::kLong);
  c.meta = {{"architecture", "yolo11n"}, {"nc", 80}, {"batch", 2}};
  const std::string last = resumable_run(dir, data);
  core::save_checkpoint(last, c);
  const Timed r = resume(dir + "/run");
  check_refused(r.result, last + ": tensor 'model.model.0.conv.weight' holds int64 values where the model's float32 tensor "
                "takes floating-point ones", r.seconds);
  CHECK_FALSE(fs::exists(dir + "/run/results.csv"));
}

TEST_CASE("hostile weights: declared views are checked before anything is allocated") {
  std::uint64_t elements = 0;
  auto check = [&](core::DeclaredView v, std::int64_t storage, std::size_t element = 4) {
    return core::check_declared_view(v, storage, element, "float32", elements);
  };
  CHECK(check({{4, 3}, {3, 1}, 0}, 12) == "");
  CHECK(elements == 12);
  // Overlapping views are views: a stride-0 row within the budget is taken.
  CHECK(check({{1000, 3}, {0, 1}, 0}, 3) == "");
  CHECK(elements == 3000);
  CHECK(check({{4, 3}, {3, 1}, 1}, 12) == "reaches element 12 of its storage, which holds 12");
  CHECK(check({{4, -3}, {3, 1}, 0}, 12) == "has a negative size (-3) in dimension 1");
  CHECK(check({{4, 3}, {3, -1}, 0}, 12) == "has a negative stride (-1) in dimension 1");
  CHECK(check({{4, 3}, {3, 1}, -1}, 12) == "has a negative storage offset (-1)");
  CHECK(check({{4, 3}, {3}, 0}, 12) == "has 2 sizes but 1 strides");
  CHECK(check({std::vector<std::int64_t>(65, 1), std::vector<std::int64_t>(65, 1), 0}, 1) ==
        "has 65 dimensions; a tensor may have at most 64");
  // The budget is on what the view declares, whatever its storage holds: exactly 1 GiB passes.
  CHECK(check({{std::int64_t{1} << 28}, {0}, 0}, 1) == "");
  CHECK(check({{(std::int64_t{1} << 28) + 1}, {0}, 0}, 1) ==
        "declares 268435457 elements of float32 (1073741828 bytes) over a storage of 1 element: more than the 1 GiB "
        "one tensor may hold");
  CHECK(check({{std::int64_t{1} << 29}, {0}, 0}, 1, 2) == "");  // float16: twice the elements
  // Products and reaches that overflow 64 bits are refused, not wrapped.
  CHECK(check({{std::int64_t{1} << 62, 4}, {0, 0}, 0}, 1).rfind("declares more than 9223372036854775807 elements", 0) == 0);
  CHECK(check({{2, 2}, {std::int64_t{1} << 61, std::int64_t{1} << 61}, 0}, 1) ==
        "reaches element 4611686018427387904 of its storage, which holds 1");
  CHECK(check({{3, 2}, {std::int64_t{1} << 62, std::int64_t{1} << 62}, 0}, 1).rfind("reaches beyond element", 0) == 0);
  // An empty view reaches nothing, but starts where it says.
  CHECK(check({{0, 5}, {5, 1}, 12}, 12) == "");
  CHECK(check({{0, 5}, {5, 1}, 13}, 12) == "starts at element 13 of its storage, which holds 12");
  CHECK(core::bytes_text(std::uint64_t{1} << 30) == "1 GiB");
  CHECK(core::bytes_text(std::uint64_t{3} << 39) == "1.5 TiB");
}
