#pragma once
// Runs the built `yoloflow` CLI as a user would, capturing exit code and output.
#include <string>

namespace yoloflow::test {

struct CliResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// `args` is appended to the CLI path as is (shell syntax); `env` is prefixed (e.g. "A=b ").
CliResult run_cli(const std::string& args, const std::string& env = "");
// pipelines/train-coco128-cpu.json with its dataset named once, as `data_yaml` (the file's own
// "data" names coco128 beside the repository); returns the copy's path.
std::string coco128_cpu_pipeline(const std::string& data_yaml);
// `yoloflow train pipelines/train-coco128-cpu.json` into `run_dir` on the coco128 subset
// `data_yaml` (test::write_coco128_subset): CPU, imgsz 64, one worker and one OpenMP thread,
// batch 2, validation only after the last epoch; `overrides` follow ("epochs=2 ..."); `env`
// is prefixed to the command as run_cli's.
CliResult train_coco128_cpu(const std::string& data_yaml, const std::string& run_dir, const std::string& overrides,
                            const std::string& env = "");
// Any shell command (e.g. test::python() with a script), output with stderr.
CliResult run_shell(const std::string& command);
// Creates a fresh temporary folder for one test and returns its path.
std::string temp_dir(const std::string& tag);
// Writes `text` to `path`, creating folders.
void write_file(const std::string& path, const std::string& text);
std::string read_file(const std::string& path);
// Deletes a folder tree: core::remove_tree (runtime/util/remove_tree.h says why not
// std::filesystem::remove_all).
void remove_tree(const std::string& path);

}  // namespace yoloflow::test
