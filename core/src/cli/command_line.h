#pragma once
// One `yoloflow` command line run in this process: what the program's main() does, callable by
// another program that hosts yoloflow (the Python module) as many times as it likes.
#include <string>
#include <vector>

namespace yoloflow::cli {

struct CommandLineResult {
  int exit_code = 0;  // yoloflow::ExitCode
  // Why it failed, as it told stderr: its "error: ..." lines (without "error: "), or when it
  // printed none its last plain lines (a pipeline's problems and their count); empty when the
  // command succeeded.
  std::string error;
};

// `args`: the command line after the program's name (["train", "data=coco8.yaml", ...]).
// `plugin_paths` are searched as --plugin-path's are (a host outside the build folder names the
// plugins' folder: the default folders are found next to the running program). Every error is
// printed as the program prints it and also returned; nothing is thrown. `output`: when given,
// what the command writes to std::cout goes there instead (its first 8 MiB; errors and log
// lines still reach stderr).
CommandLineResult run_command_line(const std::vector<std::string>& args,
                                   const std::vector<std::string>& plugin_paths = {}, std::string* output = nullptr);

}  // namespace yoloflow::cli
