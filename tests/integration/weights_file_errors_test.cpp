// Whatever is given where weights are taken (val, predict, export, info, weights import and
// export, train weights= and model=, train --resume) is read safely and, when it is not good
// weights, refused in one line that says what it is: empty, truncated (where), text, damaged
// (a failed CRC), NaN weights, not a regular file (a device, a named pipe, a folder), or the
// weights of another architecture (counted, the first ones listed). Never a library's
// backtrace, stream or allocation error, and never a hang or a read past the file's size.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "training/model/zip_archive.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "training/checkpoint/checkpoint.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// One line, exit code 2, the expected words, nothing of a library's internals.
void check_one_line(const test::CliResult& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(expected) != std::string::npos);
  for (const char* internal : {"Exception raised from", "frame #", "bad_alloc", "basic_ios", "iostream",
                               "filesystem error", "PytorchStreamReader", "inline_container"}) {
    CHECK(r.output.find(internal) == std::string::npos);
  }
  std::size_t errors = 0;
  for (auto at = r.output.find("error: "); at != std::string::npos; at = r.output.find("error: ", at + 1)) ++errors;
  CHECK(errors == 1);
}

// A yolo11n state dict, as `yoloflow weights export` writes it (a torch.save layout).
std::string write_state_dict(const std::string& path, const std::string& arch = "yolo11n") {
  auto model = core::create_model(test::plugins_with("yolo11").registry(), arch, 80);
  core::write_weights(path, core::module_state(model->module()));
  return path;
}

// A run folder `yoloflow train --resume` takes: its resolved pipeline and weights/last.pt.
std::string write_run_folder(const std::string& dir, const std::string& data, const std::string& last_pt_bytes) {
  fs::create_directories(dir + "/run/weights");
  std::string pipeline = test::read_file(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json");
  const std::string key = "\"data\": \"";
  const auto at = pipeline.find(key);
  REQUIRE(at != std::string::npos);
  pipeline.replace(at + key.size(), pipeline.find('"', at + key.size()) - at - key.size(), data);
  test::write_file(dir + "/run/pipeline.json", pipeline);
  test::write_file(dir + "/run/weights/last.pt", last_pt_bytes);
  return dir + "/run";
}

core::Checkpoint small_checkpoint() {
  core::Checkpoint c;
  c.model = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}, {"model.0.bn.bias", torch::zeros({4})}};
  c.ema = {{"model.0.conv.weight", torch::randn({4, 3, 3, 3})}, {"model.0.bn.bias", torch::zeros({4})}};
  c.meta = {{"model", {{"plugin", "yolo11"}, {"params", {{"scale", "n"}}}}}};
  return c;
}

}  // namespace

TEST_CASE("weights file: empty, text, truncated and damaged files get one line saying which, from every command") {
  const auto dir = test::temp_dir("weights-errors");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const std::string good = write_state_dict(dir + "/good.pt");
  const std::string bytes = test::read_file(good);
  // Each command that takes weights, with `file`; `expected` follows the file's name.
  auto everywhere = [&](const std::string& file, const std::string& expected) {
    CAPTURE(file);
    check_one_line(test::run_cli("val --weights " + file + " --model yolo11n --data " + data), "--weights " + file + " " + expected);
    check_one_line(test::run_cli("predict --weights " + file + " --model yolo11n --source " + image + " --out " + dir + "/p"),
                   "--weights " + file + " " + expected);
#ifdef YOLOFLOW_WITH_ONNX
    check_one_line(test::run_cli("export --weights " + file + " --model yolo11n --out " + dir + "/x.onnx"),
                   "--weights " + file + " " + expected);
#endif
    check_one_line(test::run_cli("info --weights " + file + " --model yolo11n"), "--weights " + file + " " + expected);
    check_one_line(test::run_cli("weights import " + file + " --model yolo11n --out " + dir + "/w.pt"),
                   "weights file '" + file + "' " + expected);
    check_one_line(test::run_cli("weights export " + file + " --out " + dir + "/w.pt"), "weights file '" + file + "' " + expected);
    check_one_line(test::train_coco128_cpu(data, dir + "/run-w", "epochs=1 weights=" + file),
                   "train.params.weights: weights file '" + file + "' " + expected);
    check_one_line(test::train_coco128_cpu(data, dir + "/run-m", "epochs=1 model=" + file), "model=" + file + " " + expected);
    CHECK_FALSE(fs::exists(dir + "/w.pt"));
  };

  SUBCASE("empty") {
    test::write_file(dir + "/empty.pt", "");
    everywhere(dir + "/empty.pt", "is empty (0 bytes)");
  }
  SUBCASE("text") {
    test::write_file(dir + "/notes.pt", "these are not weights\nsecond line\n");
    everywhere(dir + "/notes.pt", "is not a PyTorch file: it starts with text (\"these are not weights\")");
  }
  SUBCASE("a Git LFS pointer") {
    test::write_file(dir + "/lfs.pt", "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 5613764\n");
    check_one_line(test::run_cli("val --weights " + dir + "/lfs.pt --model yolo11n --data " + data),
                   "is not a PyTorch file: it starts with text (\"version https://git-lfs.github.com/spec/v1\"); it is a "
                   "Git LFS pointer: fetch the file itself (git lfs pull)");
  }
  SUBCASE("truncated at several points") {
    const core::ZipArchive zip(bytes);
    const auto& pkl = *zip.find("archive/data.pkl");
    const auto& first = *zip.find("archive/data/0");
    const auto& last_entry = zip.entries().back();
    const std::uint64_t directory = last_entry.data_offset + last_entry.size;
    const std::vector<std::pair<std::uint64_t, std::string>> cuts = {
        {10, "in the header of entry 1"},
        // PyTorch streams its entries (sizes in a descriptor after the data), so where an entry
        // would end is not known before its data are whole.
        {pkl.data_offset + pkl.size / 2, "inside its entry 'archive/data.pkl'"},
        {first.data_offset + first.size / 2, "inside its entry 'archive/data/0'"},
        {directory + 30, "in its central directory (after " + std::to_string(zip.entries().size()) + " complete entries)"},
        {bytes.size() - 5, "in its central directory (after " + std::to_string(zip.entries().size()) + " complete entries)"},
    };
    for (const auto& [cut, where] : cuts) {
      const std::string file = dir + "/cut" + std::to_string(cut) + ".pt";
      test::write_file(file, bytes.substr(0, cut));
      const std::string expected = "is truncated: a zip archive cut at " + std::to_string(cut) + " bytes, " + where;
      check_one_line(test::run_cli("val --weights " + file + " --model yolo11n --data " + data), expected);
      CHECK_THROWS_WITH_AS(core::read_weights(file), doctest::Contains((expected).c_str()), InvalidInput);
    }
    // All of it through every command, for one of the cuts.
    everywhere(dir + "/cut" + std::to_string(cuts[2].first) + ".pt",
               "is truncated: a zip archive cut at " + std::to_string(cuts[2].first) + " bytes");
  }
  SUBCASE("a corrupted byte inside a stored tensor fails the entry's CRC") {
    const core::ZipArchive zip(bytes);
    const auto& entry = *zip.find("archive/data/5");
    std::string damaged = bytes;
    damaged[entry.data_offset + entry.size / 2] ^= 0x10;
    test::write_file(dir + "/crc.pt", damaged);
    everywhere(dir + "/crc.pt", "is damaged: entry 'archive/data/5' fails its checksum (CRC-32 ");
  }
  SUBCASE("a zip archive that is not a PyTorch file") {
    const auto r = test::run_shell("cd " + dir + " && printf 'hello' > a.txt && " + test::python() +
                                   " -c \"import zipfile; zipfile.ZipFile('other.zip', 'w').write('a.txt')\"");
    REQUIRE(r.exit_code == 0);
    everywhere(dir + "/other.zip", "is a zip archive but not a PyTorch file: it has no data.pkl (it holds 'a.txt')");
  }
}

TEST_CASE("weights file: NaN or infinite weights are refused naming the file and the first bad tensor") {
  const auto dir = test::temp_dir("weights-nan");
  const std::string data = test::write_coco128_subset(dir, 2);
  auto model = core::create_model(test::plugins_with("yolo11").registry(), "yolo11n", 80);
  auto state = core::module_state(model->module());
  {
    torch::NoGradGuard no_grad;
    state[6].second.view(-1)[3] = std::numeric_limits<float>::quiet_NaN();
    state[20].second.view(-1)[0] = std::numeric_limits<float>::infinity();
  }
  core::write_weights(dir + "/nan.pt", state);
  const std::string expected = "tensor '" + state[6].first + "' holds NaN or infinite values (2 tensors do); weights "
                               "that diverged are refused";
  check_one_line(test::run_cli("val --weights " + dir + "/nan.pt --model yolo11n --data " + data),
                 "--weights " + dir + "/nan.pt: " + expected);
  check_one_line(test::run_cli("weights import " + dir + "/nan.pt --model yolo11n --out " + dir + "/w.pt"),
                 "weights file '" + dir + "/nan.pt': " + expected);
  check_one_line(test::train_coco128_cpu(data, dir + "/run", "epochs=1 weights=" + dir + "/nan.pt"),
                 "weights file '" + dir + "/nan.pt': " + expected);

  // A training checkpoint whose EMA diverged: refused by --resume, val and weights export.
  core::Checkpoint c = small_checkpoint();
  {
    torch::NoGradGuard no_grad;
    c.ema[0].second.view(-1)[7] = -std::numeric_limits<float>::infinity();
  }
  core::save_checkpoint(dir + "/ck.pt", c);
  CHECK_THROWS_WITH_AS(core::load_checkpoint(dir + "/ck.pt"),
                       doctest::Contains(("checkpoint '" + dir + "/ck.pt': tensor 'model.0.conv.weight' of its ema holds "
                                         "NaN or infinite values").c_str()),
                       InvalidInput);
  const std::string run = write_run_folder(dir, data, test::read_file(dir + "/ck.pt"));
  check_one_line(test::run_cli("train --resume " + run),
                 "checkpoint '" + run + "/weights/last.pt': tensor 'model.0.conv.weight' of its ema holds NaN");
  check_one_line(test::run_cli("val --weights " + dir + "/ck.pt --data " + data),
                 "--weights " + dir + "/ck.pt: tensor 'model.0.conv.weight' of its ema holds NaN");
  check_one_line(test::run_cli("weights export " + dir + "/ck.pt --out " + dir + "/w.pt"),
                 "weights file '" + dir + "/ck.pt': tensor 'model.0.conv.weight' of its ema holds NaN");
}

TEST_CASE("weights file: a device, a named pipe and a folder are refused by name before anything is read") {
  const auto dir = test::temp_dir("weights-special");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  REQUIRE(::mkfifo((dir + "/fifo.pt").c_str(), 0600) == 0);
  fs::create_directories(dir + "/folder.pt");
  // A hang would be a timeout (exit 124) here, not a refusal.
  const std::string t = "timeout 120 ";
  for (const auto& [file, kind] : std::vector<std::pair<std::string, std::string>>{
           {"/dev/zero", "a character device"}, {dir + "/fifo.pt", "a named pipe"}}) {
    CAPTURE(file);
    const std::string what = " is not a regular file (" + kind + ")";
    check_one_line(test::run_cli("val --weights " + file + " --model yolo11n --data " + data, t), "--weights " + file + what);
    check_one_line(test::run_cli("predict --weights " + file + " --model yolo11n --source " + image + " --out " + dir + "/p", t),
                   "--weights " + file + what);
    check_one_line(test::run_cli("info --weights " + file + " --model yolo11n", t), "--weights " + file + what);
    check_one_line(test::run_cli("weights import " + file + " --model yolo11n --out " + dir + "/w.pt", t),
                   "weights file '" + file + "'" + what);
    check_one_line(test::run_shell(t + "env OMP_NUM_THREADS=1 " + test::cli() + " train " + std::string(YOLOFLOW_SOURCE_DIR) +
                                   "/pipelines/train-coco128-cpu.json data=" + data +
                                   " epochs=1 imgsz=64 batch=2 workers=1 --run-dir " + dir + "/run weights=" + file),
                   "weights file '" + file + "'" + what);
    CHECK_THROWS_WITH_AS(core::read_weights(file), doctest::Contains(("weights file '" + file + "'" + what).c_str()), InvalidInput);
    CHECK_THROWS_WITH_AS(core::load_checkpoint(file), doctest::Contains(("checkpoint '" + file + "'" + what).c_str()), InvalidInput);
  }
  check_one_line(test::run_cli("weights import " + dir + "/folder.pt --model yolo11n --out " + dir + "/w.pt"),
                 "weights file '" + dir + "/folder.pt' is not a regular file (a folder)");
  check_one_line(test::run_cli("val --weights " + dir + "/folder.pt --data " + data),
                 "--weights " + dir + "/folder.pt: is a folder; give a checkpoint such as");
  check_one_line(test::run_cli("info --weights " + dir + "/nothing.pt --model yolo11n"), "--weights " + dir + "/nothing.pt: no such file");
  check_one_line(test::run_cli("weights import " + dir + "/nothing.pt --model yolo11n --out " + dir + "/w.pt"),
                 "weights file '" + dir + "/nothing.pt' does not exist");
}

TEST_CASE("weights file: --resume from a truncated, empty or text last.pt says so in one line") {
  const auto dir = test::temp_dir("resume-errors");
  const std::string data = test::write_coco128_subset(dir, 2);
  core::save_checkpoint(dir + "/ck.pt", small_checkpoint());
  const std::string bytes = test::read_file(dir + "/ck.pt");
  // The checkpoint as written reads back: what is refused below is the damage alone.
  CHECK(core::load_checkpoint(dir + "/ck.pt").ema.size() == 2);
  for (const auto& [content, expected] : std::vector<std::pair<std::string, std::string>>{
           {"", "is empty (0 bytes)"},
           {bytes.substr(0, bytes.size() / 2), "is truncated: a zip archive cut at " + std::to_string(bytes.size() / 2) + " bytes"},
           {bytes.substr(0, bytes.size() - 3), "is truncated: a zip archive cut at " + std::to_string(bytes.size() - 3) + " bytes"},
           {"epoch: 3\n", "is not a PyTorch file: it starts with text (\"epoch: 3\")"}}) {
    const auto sub = test::temp_dir("resume-case");
    const std::string run = write_run_folder(sub, data, content);
    check_one_line(test::run_cli("train --resume " + run), "checkpoint '" + run + "/weights/last.pt' " + expected);
  }
}

TEST_CASE("weights file: weights of another architecture are counted and the list is cut after the first ones") {
  const auto dir = test::temp_dir("weights-arch");
  const std::string data = test::write_coco128_subset(dir, 2);
  write_state_dict(dir + "/s.pt", "yolo11s");
  const auto r = test::run_cli("val --weights " + dir + "/s.pt --model yolo11n --data " + data);
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("weights '" + dir + "/s.pt' do not fit the model (0 missing, 0 unexpected, ") != std::string::npos);
  CHECK(r.output.find("  wrong shape: model.0.conv.weight: file [32, 3, 3, 3] vs model [16, 3, 3, 3]") != std::string::npos);
  CHECK(r.output.find(" more wrong shape") != std::string::npos);
  const auto lines = std::count(r.output.begin(), r.output.end(), '\n');
  CHECK(lines < 20);
}

TEST_CASE("weights file: the zip reader checks sizes and offsets against the bytes it holds") {
  // The end record of an archive whose central directory claims more than the file holds.
  std::string eocd = std::string("PK\x05\x06", 4) + std::string(6, '\0') + std::string("\xff\xff", 2) +
                     std::string("\xff\xff\xff\x7f", 4) + std::string(4, '\0') + std::string(2, '\0');
  CHECK_THROWS_WITH_AS(core::ZipArchive{eocd}, doctest::Contains("is damaged: its central directory"), core::ZipError);
  // An entry count beyond what its directory can hold is refused before anything is reserved.
  std::string many = std::string("PK\x05\x06", 4) + std::string(6, '\0') + std::string("\xff\xff", 2) +
                     std::string(4, '\0') + std::string(4, '\0') + std::string(2, '\0');
  CHECK_THROWS_WITH_AS(core::ZipArchive{many}, doctest::Contains("counts 65535 entries"), core::ZipError);
  CHECK(core::crc32_of("123456789") == 0xcbf43926u);  // the check value of CRC-32/ISO-HDLC
}
