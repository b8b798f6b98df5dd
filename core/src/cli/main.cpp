// yoloflow: train and run YOLO11 detectors. `yoloflow --help` lists the commands.
#include <string>
#include <vector>

#include "cli/command_line.h"

int main(int argc, char** argv) {
  return yoloflow::cli::run_command_line(std::vector<std::string>(argv + 1, argv + argc)).exit_code;
}
