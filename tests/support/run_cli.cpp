#include "support/run_cli.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "support/paths.h"
#include "runtime/util/remove_tree.h"

namespace yoloflow::test {

CliResult run_cli(const std::string& args, const std::string& env) {
  return run_shell(env + cli() + " " + args);
}

CliResult run_shell(const std::string& command) {
  const std::string cmd = command + " 2>&1";
  CliResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + cmd);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

namespace {

// Every folder temp_dir made, removed when the test binary exits: one full run writes about
// 1 GB of runs, checkpoints and caches, which used to pile up in /tmp run after run until the
// disk was full. YOLOFLOW_KEEP_TEST_DIRS=1 keeps them for debugging a failure.
class TempDirRegistry {
 public:
  void add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_.push_back(path);
  }
  ~TempDirRegistry() {
    const char* keep = std::getenv("YOLOFLOW_KEEP_TEST_DIRS");
    if (keep && std::string(keep) == "1") return;
    // Only the process that made them: a forked child that exits normally must not delete
    // the folders its parent test is still reading.
    if (::getpid() != owner_) return;
    for (const auto& p : paths_) remove_tree(p);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> paths_;
  pid_t owner_ = ::getpid();
};

TempDirRegistry& temp_dirs() {
  static TempDirRegistry registry;
  return registry;
}

}  // namespace

std::string temp_dir(const std::string& tag) {
  std::random_device rd;
  auto p = std::filesystem::temp_directory_path() /
           ("yoloflow-test-" + tag + "-" + std::to_string(rd()));
  remove_tree(p.string());
  std::filesystem::create_directories(p);
  temp_dirs().add(p.string());
  return p.string();
}

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + path);
}

void remove_tree(const std::string& path) { core::remove_tree(path); }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string coco128_cpu_pipeline(const std::string& data_yaml) {
  std::string pipeline = read_file(std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json");
  const std::string key = "\"data\": \"";
  const auto at = pipeline.find(key);
  if (at == std::string::npos) throw std::runtime_error("pipelines/train-coco128-cpu.json names no \"data\"");
  pipeline.replace(at + key.size(), pipeline.find('"', at + key.size()) - at - key.size(), data_yaml);
  // One folder per dataset, in the build folder: the tests' own folders stay as they compare them.
  const std::string path = build_dir() + "/test-pipelines/" + std::to_string(std::hash<std::string>{}(data_yaml)) +
                           "/train-coco128-cpu.json";
  write_file(path, pipeline);
  return path;
}

CliResult train_coco128_cpu(const std::string& data_yaml, const std::string& run_dir, const std::string& overrides,
                            const std::string& env) {
  return run_cli("train " + coco128_cpu_pipeline(data_yaml) + " --run-dir " + run_dir +
                     " device=cpu imgsz=64 workers=1 stages.batch.params.batch=2 stages.train.params.val_every=0 " +
                     overrides,
                 env + "OMP_NUM_THREADS=1 ");
}

}  // namespace yoloflow::test
