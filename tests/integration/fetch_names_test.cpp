// Names fetched as Ultralytics' users expect (model=yolo11n.pt, data=coco8.yaml), from a local
// HTTP server the test starts (YOLOFLOW_ASSETS_URL points there): a whole fetch checked by the
// safe reader, a cut transfer resumed with a range, wrong sizes, HTTP errors, a stalled server,
// redirects, hostile archives refused, a dataset unpacked to a data.yaml the project reads,
// and an offline machine told in one line, exit code 2, what to do instead.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/fetch/builtin_datasets.h"
#include "runtime/fetch/named_assets.h"
#include "runtime/fetch/sha256.h"
#include "runtime/fetch/zip_unpack.h"
#include "support/coco_subset.h"
#include "support/free_port.h"
#include "support/http_test_server.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "training/model/fetched_weights.h"
#include "training/trainer/model_word.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

// A released file's stand-in: Ultralytics' own yolo11n checkpoint (shared/fixtures).
std::string checkpoint_path() { return test::fixtures_dir() + "/ultralytics-checkpoints/yolo11n-coco80-best.pt"; }
std::string checkpoint_bytes() { return test::read_file(checkpoint_path()); }

test::HttpRoute serving(const std::string& body) {
  test::HttpRoute r;
  r.body = body;
  return r;
}

// Sets environment variables for one test and puts the old values back.
class EnvScope {
 public:
  void set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~EnvScope() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A server, a weights folder and a datasets folder of the test's own.
struct Fixture {
  test::HttpTestServer server;
  std::string dir, weights, datasets;
  EnvScope env;
  explicit Fixture(const std::string& tag) : dir(test::temp_dir(tag)), weights(dir + "/weights"), datasets(dir + "/datasets") {
    env.set("YOLOFLOW_ASSETS_URL", server.url());
    env.set("YOLOFLOW_WEIGHTS_DIR", weights);
    env.set("YOLOFLOW_DATASETS_DIR", datasets);
  }
  std::string cli_env() const {
    return "YOLOFLOW_ASSETS_URL=" + server.url() + " YOLOFLOW_WEIGHTS_DIR=" + weights +
           " YOLOFLOW_DATASETS_DIR=" + datasets + " ";
  }
};

std::vector<std::string> folder_entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string thrown(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

// Zip archives written by Python's zipfile: `spec` is the Python statements run with `z`
// open for writing at `path`.
void python_zip(const std::string& dir, const std::string& path, const std::string& spec) {
  test::write_file(dir + "/zip.py", "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED)\n" +
                                        spec + "\nz.close()\n");
  const auto r = test::run_shell(test::python() + " " + dir + "/zip.py " + path);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

// The error's line from a CLI's output (the lines starting "error:"), and how many there are.
std::vector<std::string> error_lines(const std::string& output) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("error:", 0) == 0) out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("fetch: model=yolo11n.pt is fetched into the weights folder, checked whole, then used from there") {
  Fixture f("fetch-weights");
  const std::string bytes = checkpoint_bytes();
  f.server.route("/v8.3.0/yolo11n.pt", serving(bytes));
  const auto words = core::expand_model_words({"model=yolo11n.pt"});
  const std::string kept = f.weights + "/yolo11n.pt";
  CHECK(words == std::vector<std::string>{"model=yolo11n", "weights=" + kept, "imgsz=320"});
  CHECK(test::read_file(kept) == bytes);
  CHECK(folder_entries(f.weights) == std::vector<std::string>{"yolo11n.pt"});
  CHECK(core::sha256_of_file(kept) == core::sha256_of_file(checkpoint_path()));
  // Found there the second time: no request.
  CHECK(core::locate_weights_file("yolo11n.pt") == kept);
  CHECK(f.server.requests().size() == 1);
  // A file of that name in the current folder comes first, as before.
  const auto cwd = fs::current_path();
  const auto here = test::temp_dir("fetch-cwd");
  fs::copy_file(checkpoint_path(), here + "/yolo11n.pt");
  fs::current_path(here);
  const std::string local = core::locate_weights_file("yolo11n.pt");
  fs::current_path(cwd);
  CHECK(local == "yolo11n.pt");
  // A path with a folder is that file: nothing fetched, refused as missing.
  CHECK(core::locate_weights_file("/nowhere/yolo11s.pt") == "/nowhere/yolo11s.pt");
  CHECK(core::locate_weights_file("yolo12n.pt") == "yolo12n.pt");
  CHECK(f.server.requests().size() == 1);
  CHECK(core::is_released_weights_name("yolo11x-seg.pt"));
  CHECK(!core::is_released_weights_name("yolo11n-pose.pt"));

  // Through the CLI: `yoloflow info model=yolo11x.pt` fetches it, names its size and SHA-256, reads it.
  f.server.route("/v8.3.0/yolo11x.pt", serving(bytes));
  const auto r = test::run_cli("info model=yolo11x.pt", f.cli_env());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("fetched yolo11x.pt: " + std::to_string(bytes.size()) + " bytes, SHA-256 " +
                      core::sha256_of_file(checkpoint_path()) + ", kept as " + f.weights + "/yolo11x.pt") !=
        std::string::npos);
  CHECK(r.output.find(f.weights + "/yolo11x.pt") != std::string::npos);
  CHECK(test::read_file(f.weights + "/yolo11x.pt") == bytes);
}

TEST_CASE("fetch: a cut transfer keeps NAME.part, and the next run resumes it with a range to the same bytes") {
  Fixture f("fetch-resume");
  const std::string bytes = checkpoint_bytes();
  test::HttpRoute r = serving(bytes);
  r.cut_after = 1000000;
  f.server.route("/v8.3.0/yolo11s.pt", r);
  const std::string first = thrown([] { core::locate_weights_file("yolo11s.pt"); });
  CHECK(first.find("cannot fetch " + f.server.url() + "/v8.3.0/yolo11s.pt: the connection was cut after 1000000 of " +
                   std::to_string(bytes.size()) + " bytes") != std::string::npos);
  CHECK(first.find("kept in " + f.weights + "/yolo11s.pt.part; running again resumes") != std::string::npos);
  CHECK(first.find("put it in " + f.weights) != std::string::npos);
  CHECK(folder_entries(f.weights) == std::vector<std::string>{"yolo11s.pt.part"});
  CHECK(fs::file_size(f.weights + "/yolo11s.pt.part") == 1000000);

  CHECK(core::locate_weights_file("yolo11s.pt") == f.weights + "/yolo11s.pt");
  const auto requests = f.server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].range.empty());
  CHECK(requests[1].range == "bytes=1000000-");
  CHECK(test::read_file(f.weights + "/yolo11s.pt") == bytes);
  CHECK(folder_entries(f.weights) == std::vector<std::string>{"yolo11s.pt"});
}

TEST_CASE("fetch: a server that ignores the range, or cannot satisfy it, gives the whole file again") {
  Fixture f("fetch-range");
  const std::string bytes = checkpoint_bytes();
  test::HttpRoute r = serving(bytes);
  r.ignore_range = true;
  f.server.route("/v8.3.0/yolo11m.pt", r);
  test::write_file(f.weights + "/yolo11m.pt.part", bytes.substr(0, 5000));
  CHECK(core::locate_weights_file("yolo11m.pt") == f.weights + "/yolo11m.pt");
  CHECK(test::read_file(f.weights + "/yolo11m.pt") == bytes);
  // A part as long as the file: 416, then from byte 0.
  f.server.route("/v8.3.0/yolo11l.pt", serving(bytes));
  test::write_file(f.weights + "/yolo11l.pt.part", bytes + "extra");
  CHECK(core::locate_weights_file("yolo11l.pt") == f.weights + "/yolo11l.pt");
  CHECK(test::read_file(f.weights + "/yolo11l.pt") == bytes);
}

TEST_CASE("fetch: a wrong size is found: fewer bytes than declared, or a declared size that cuts the file") {
  Fixture f("fetch-size");
  const std::string bytes = checkpoint_bytes();
  test::HttpRoute more = serving(bytes.substr(0, 4000));
  more.declared_size = 9000;  // declares more than it sends, then closes
  f.server.route("/v8.3.0/yolo11n.pt", more);
  CHECK(thrown([] { core::locate_weights_file("yolo11n.pt"); }).find("the connection was cut after 4000 of 9000 bytes") !=
        std::string::npos);
  // Declares (and sends) less than the file: the transfer looks whole, the check refuses it
  // and nothing is kept, not even a part that a later run would only resume.
  test::HttpRoute less = serving(bytes);
  less.declared_size = static_cast<long>(bytes.size()) - 1000;
  f.server.route("/v8.3.0/yolo11s.pt", less);
  const std::string e = thrown([] { core::locate_weights_file("yolo11s.pt"); });
  CHECK(e.find("fetched " + f.server.url() + "/v8.3.0/yolo11s.pt but it is not usable, so it was removed: ") !=
        std::string::npos);
  CHECK(!fs::exists(f.weights + "/yolo11s.pt"));
  CHECK(!fs::exists(f.weights + "/yolo11s.pt.part"));
  // Not a checkpoint at all.
  f.server.route("/v8.3.0/yolo11m.pt", serving("<html>a captive portal's page</html>"));
  CHECK(thrown([] { core::locate_weights_file("yolo11m.pt"); }).find("not usable, so it was removed") != std::string::npos);
  CHECK(folder_entries(f.weights) == std::vector<std::string>{"yolo11n.pt.part"});
}

TEST_CASE("fetch: HTTP errors are named with their status, and nothing is left") {
  Fixture f("fetch-404");
  const std::string e = thrown([] { core::locate_weights_file("yolo11x-seg.pt"); });
  CHECK(e == "cannot fetch " + f.server.url() + "/v8.3.0/yolo11x-seg.pt: HTTP 404; download it by hand and put it " +
                 "in " + f.weights + " (or give its path: model=PATH)");
  CHECK(folder_entries(f.weights).empty());
}

TEST_CASE("fetch: redirects are followed, a loop of them is not") {
  Fixture f("fetch-redirect");
  const std::string bytes = checkpoint_bytes();
  test::HttpRoute hop;
  hop.status = 302;
  hop.location = f.server.url() + "/objects/yolo11n-seg.pt";
  f.server.route("/v8.3.0/yolo11n-seg.pt", hop);
  hop.location = "/objects/final";
  f.server.route("/objects/yolo11n-seg.pt", hop);
  f.server.route("/objects/final", serving(bytes));
  // The fixture is a detection checkpoint under a segmentation name: the check reads it, the name
  // is only where it is kept.
  CHECK(core::locate_weights_file("yolo11n-seg.pt") == f.weights + "/yolo11n-seg.pt");
  CHECK(test::read_file(f.weights + "/yolo11n-seg.pt") == bytes);
  CHECK(f.server.requests().size() == 3);

  test::HttpRoute loop;
  loop.status = 302;
  loop.location = "/v8.3.0/yolo11l-seg.pt";
  f.server.route("/v8.3.0/yolo11l-seg.pt", loop);
  CHECK(thrown([] { core::locate_weights_file("yolo11l-seg.pt"); }).find(": more than 5 redirects; ") != std::string::npos);
}

TEST_CASE("fetch: a stalled server is left within the stall time; the part is kept for the next run") {
  Fixture f("fetch-stall");
  f.env.set("YOLOFLOW_FETCH_STALL_SECONDS", "1");
  test::HttpRoute slow = serving(checkpoint_bytes());
  slow.stall_after = 3000;
  f.server.route("/v8.3.0/yolo11n.pt", slow);
  const auto start = std::chrono::steady_clock::now();
  const std::string e = thrown([] { core::locate_weights_file("yolo11n.pt"); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(e.find("the transfer stalled (under 1024 bytes/s for 1 s) after 3000 bytes") != std::string::npos);
  CHECK(seconds < 10);
  CHECK(folder_entries(f.weights) == std::vector<std::string>{"yolo11n.pt.part"});
}

TEST_CASE("fetch: predict source=URL fetches the image once into the sources folder and predicts it") {
  Fixture f("fetch-source");
  const std::string sources = f.dir + "/sources";
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const std::string bytes = test::read_file(image);
  f.server.route("/images/bus.jpg?raw=1", serving(bytes));  // the query is the server's; the name is bus.jpg
  const std::string env = f.cli_env() + "YOLOFLOW_SOURCES_DIR=" + sources + " ";
  const std::string url = f.server.url() + "/images/bus.jpg?raw=1";
  const std::string out = f.dir + "/predicted";
  auto r = test::run_cli("predict model=" + checkpoint_path() + " source=" + url + " imgsz=160 --out " + out, env);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto entries = nlohmann::json::parse(test::read_file(out + "/predictions.json"));
  REQUIRE(entries.size() == 1);
  const std::string kept = entries[0]["file"].get<std::string>();
  CHECK(kept.rfind(sources + "/", 0) == 0);
  CHECK(fs::path(kept).filename() == "bus.jpg");
  CHECK(test::read_file(kept) == bytes);
  CHECK(entries[0]["width"] == 640);
  // The same URL again: read from the sources folder, no second request.
  r = test::run_cli("predict model=" + checkpoint_path() + " source=" + url + " imgsz=160 --no-images", env);
  CHECK(r.exit_code == 0);
  CHECK(f.server.requests().size() == 1);
  // A URL that names no image or video, and one nothing answers, are refused in one line.
  r = test::run_cli("predict model=" + checkpoint_path() + " source=" + f.server.url() + "/page", env);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("not an image or a video") != std::string::npos);
  const std::string nothing = "http://127.0.0.1:" + std::to_string(test::free_port()) + "/bus.jpg";
  r = test::run_cli("predict model=" + checkpoint_path() + " source=" + nothing, env);
  CHECK(r.exit_code == kExitInvalid);
  const auto lines = error_lines(r.output);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].rfind("error: cannot fetch " + nothing + ": cannot connect to", 0) == 0);
}

TEST_CASE("fetch: offline, train model=yolo11n.pt says in one line where to put the file, exit code 2") {
  Fixture f("fetch-offline");
  const std::string nothing = "http://127.0.0.1:" + std::to_string(test::free_port());
  const std::string data = test::write_coco128_subset(f.dir, 2);
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run_cli("train data=" + data + " model=yolo11n.pt epochs=1 device=cpu",
                         f.cli_env() + "YOLOFLOW_ASSETS_URL=" + nothing + " ");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(seconds < 30);
  const auto lines = error_lines(r.output);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "error: cannot fetch " + nothing + "/v8.3.0/yolo11n.pt: cannot connect to " + nothing.substr(7) +
                        " (no network, or nothing answers there); download it by hand and put it in " +
                        f.weights + " (or give its path: model=PATH)");
  CHECK(folder_entries(f.weights).empty());

  // A dataset the same way, with the folder to put its zip in.
  r = test::run_cli("train data=coco8.yaml model=yolo11n epochs=1 device=cpu",
                    f.cli_env() + "YOLOFLOW_ASSETS_URL=" + nothing + " ");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  const auto data_lines = error_lines(r.output);
  REQUIRE(data_lines.size() == 1);
  CHECK(data_lines[0] == "error: cannot fetch " + nothing + "/v0.0.0/coco8.zip: cannot connect to " +
                             nothing.substr(7) + " (no network, or nothing answers there); download it by hand and put "
                             "it in " + f.datasets + " (yoloflow unpacks it there)");
  CHECK(folder_entries(f.datasets).empty());
}

TEST_CASE("fetch: data=coco8.yaml is fetched as a zip, unpacked and its data.yaml written where the project reads it") {
  Fixture f("fetch-dataset");
  // coco8's layout with two of coco128's images and labels.
  const std::string images = test::coco128_dir() + "/images/train2017/";
  const std::string labels = test::coco128_dir() + "/labels/train2017/";
  const std::string zip = f.dir + "/coco8.zip";
  python_zip(f.dir, zip,
             "z.write('" + images + "000000000009.jpg', 'coco8/images/train/000000000009.jpg')\n"
             "z.write('" + labels + "000000000009.txt', 'coco8/labels/train/000000000009.txt')\n"
             "z.write('" + images + "000000000025.jpg', 'coco8/images/val/000000000025.jpg')\n"
             "z.write('" + labels + "000000000025.txt', 'coco8/labels/val/000000000025.txt')\n"
             "z.writestr('coco8/LICENSE', 'AGPL-3.0')");
  f.server.route("/v0.0.0/coco8.zip", serving(test::read_file(zip)));
  const std::string yaml = core::locate_dataset("coco8.yaml");
  CHECK(yaml == f.datasets + "/coco8.yaml");
  const DataYaml d = read_data_yaml(yaml);
  CHECK(d.names.size() == 80);
  CHECK(d.names.at(0) == "person");
  CHECK(d.names.at(79) == "toothbrush");
  CHECK(d.splits.at("train") == std::vector<std::string>{f.datasets + "/coco8/images/train"});
  CHECK(d.splits.at("val") == std::vector<std::string>{f.datasets + "/coco8/images/val"});
  CHECK(fs::file_size(f.datasets + "/coco8/images/train/000000000009.jpg") == fs::file_size(images + "000000000009.jpg"));
  CHECK(test::read_file(f.datasets + "/coco8/labels/val/000000000025.txt") == test::read_file(labels + "000000000025.txt"));
  // The archive is gone once unpacked; the second use asks nothing.
  CHECK(folder_entries(f.datasets) == std::vector<std::string>{"coco8", "coco8.yaml"});
  CHECK(core::expand_data_words({"epochs=1", "data=coco8.yaml"}) == std::vector<std::string>{"epochs=1", "data=" + yaml});
  CHECK(f.server.requests().size() == 1);
  // A zip put there by hand (offline) is unpacked the same way.
  python_zip(f.dir, f.datasets + "/coco128.zip",
             "z.write('" + images + "000000000009.jpg', 'coco128/images/train2017/000000000009.jpg')\n"
             "z.write('" + labels + "000000000009.txt', 'coco128/labels/train2017/000000000009.txt')");
  CHECK(read_data_yaml(core::locate_dataset("coco128.yaml")).splits.at("val") ==
        std::vector<std::string>{f.datasets + "/coco128/images/train2017"});
  CHECK(f.server.requests().size() == 1);

  // The CLI: `yoloflow val` reads it as it reads any data.yaml.
  auto r = test::run_cli("val model=" + checkpoint_path() + " data=coco8.yaml imgsz=64 batch=1 device=cpu --out " +
                             f.dir + "/val",
                         f.cli_env());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find(yaml) != std::string::npos);

  // A pipeline's "data" names it the same way: the copy in the datasets folder, nothing fetched
  // again; a name the server does not have is one problem at "data", nothing run.
  std::string pipeline = test::read_file(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json");
  const auto at = pipeline.find("\"data\": \"");
  REQUIRE(at != std::string::npos);
  const auto value = at + 9;
  pipeline.replace(value, pipeline.find('"', value) - value, "coco8.yaml");
  test::write_file(f.dir + "/named.json", pipeline);
  const auto checked = test::run_cli("validate " + f.dir + "/named.json", f.cli_env());
  INFO(checked.output);
  CHECK(checked.exit_code == 0);
  CHECK(f.server.requests().size() == 1);
  pipeline.replace(value, std::string("coco8.yaml").size(), "coco8-seg.yaml");
  test::write_file(f.dir + "/missing.json", pipeline);
  const auto missing = test::run_cli("validate " + f.dir + "/missing.json", f.cli_env());
  INFO(missing.output);
  CHECK(missing.exit_code == kExitInvalid);
  CHECK(missing.output.find("missing.json: data: ") != std::string::npos);
  CHECK(missing.output.find("coco8-seg.zip") != std::string::npos);
  CHECK(missing.output.find("1 problem; nothing was run") != std::string::npos);
  CHECK(!fs::exists(f.datasets + "/coco8-seg"));
}

TEST_CASE("fetch: archives with entries outside the folder, symbolic links or absurd sizes are refused, nothing unpacked") {
  const auto dir = test::temp_dir("fetch-zip-hostile");
  const std::string out = dir + "/out";
  auto refused = [&](const std::string& name, const std::string& spec, const std::string& expected) {
    const std::string zip = dir + "/" + name + ".zip";
    python_zip(dir, zip, spec);
    const std::string e = thrown([&] { core::unzip_to_folder(zip, out); });
    CHECK(e.find(expected) != std::string::npos);
    CHECK(!fs::exists(out));
    for (const auto& entry : folder_entries(dir)) CHECK(entry.find(".unpacking-") == std::string::npos);
    CHECK(!fs::exists(dir + "/evil.txt"));
  };
  refused("dotdot", "z.writestr('coco8/ok.txt', 'ok')\nz.writestr('coco8/../../evil.txt', 'x')",
          "entry 'coco8/../../evil.txt' would land outside the folder ('..'); refused");
  refused("absolute", "z.writestr('/tmp/evil.txt', 'x')", "entry '/tmp/evil.txt' has an absolute or unusual path; refused");
  refused("symlink",
          "i = zipfile.ZipInfo('coco8/link')\ni.create_system = 3\ni.external_attr = 0o120777 << 16\n"
          "z.writestr(i, '/etc/passwd')",
          "entry 'coco8/link' is a symbolic link; refused");
  refused("bomb", "z.writestr('coco8/zeros.bin', bytes(64 << 20))", "(a decompression bomb?); refused");
  core::ZipLimits small;
  small.max_entry_bytes = 1000;
  const std::string big = dir + "/big.zip";
  python_zip(dir, big, "z.writestr('a.bin', bytes(2000))");
  CHECK(thrown([&] { core::unzip_to_folder(big, out, small); }).find("declares 2000 bytes unpacked, more than allowed") !=
        std::string::npos);
  // Not an archive at all (a cut download).
  test::write_file(dir + "/cut.zip", "PK\x03\x04 not the rest");
  CHECK(thrown([&] { core::check_zip(dir + "/cut.zip"); }).find("not a zip archive") != std::string::npos);
  // A good one, stored and deflated entries both.
  const std::string good = dir + "/good.zip";
  python_zip(dir, good,
             "z.writestr('d/a.txt', 'hello ' * 1000)\n"
             "z.writestr(zipfile.ZipInfo('d/sub/'), '')\n"
             "z.writestr('d/b.txt', 'stored', compress_type=zipfile.ZIP_STORED)");
  const auto s = core::unzip_to_folder(good, out);
  CHECK(s.files == 2);
  CHECK(test::read_file(out + "/d/a.txt").size() == 6000);
  CHECK(test::read_file(out + "/d/b.txt") == "stored");
  CHECK(fs::is_directory(out + "/d/sub"));
}

TEST_CASE("fetch: a hostile dataset archive from the server is refused in one line, exit code 2") {
  Fixture f("fetch-dataset-hostile");
  const std::string zip = f.dir + "/coco8-seg.zip";
  python_zip(f.dir, zip, "z.writestr('coco8-seg/images/train/a.jpg', 'x')\nz.writestr('../../evil.txt', 'x')");
  f.server.route("/v0.0.0/coco8-seg.zip", serving(test::read_file(zip)));
  const auto r = test::run_cli("train data=coco8-seg.yaml model=yolo11n-seg epochs=1 device=cpu", f.cli_env());
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  const auto lines = error_lines(r.output);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("fetched " + f.server.url() + "/v0.0.0/coco8-seg.zip but it is not usable, so it was removed: ") !=
        std::string::npos);
  CHECK(lines[0].find("entry '../../evil.txt' would land outside the folder ('..'); refused") != std::string::npos);
  CHECK(folder_entries(f.datasets).empty());
  CHECK(!fs::exists(f.dir + "/evil.txt"));
}

TEST_CASE("fetch: the SHA-256 logged for a kept file is FIPS 180-4's") {
  const auto dir = test::temp_dir("fetch-sha256");
  test::write_file(dir + "/empty", "");
  test::write_file(dir + "/abc", "abc");
  test::write_file(dir + "/two-blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq");
  CHECK(core::sha256_of_file(dir + "/empty") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(core::sha256_of_file(dir + "/abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(core::sha256_of_file(dir + "/two-blocks") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // A file larger than the reader's buffer, against the system's sha256sum.
  const auto r = test::run_shell("sha256sum " + checkpoint_path());
  REQUIRE(r.exit_code == 0);
  CHECK(core::sha256_of_file(checkpoint_path()) == r.output.substr(0, 64));
}
