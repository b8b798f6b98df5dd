#pragma once
// `yoloflow weights export --format ultralytics`: a yoloflow checkpoint turned into an Ultralytics
// checkpoint (the model object Ultralytics pickles, loaded by YOLO("model.pt")). Only Ultralytics
// itself can build that object, so the conversion runs scripts/yoloflow-to-ultralytics.py with
// the user's Python and its installed Ultralytics; this side checks the input first and turns the
// script's failures into the CLI's one-line errors and exit codes.
#include <string>
#include <vector>

namespace yoloflow::cli {

// Where yoloflow-to-ultralytics.py lies: <prefix>/share/yoloflow/ beside an installed
// <prefix>/bin/yoloflow, the binary's own folder, or scripts/ of the source tree a build folder
// lies in (build/bin/yoloflow -> scripts/). "" when none of them holds it; `looked_in` gets the
// places tried, for the message.
std::string find_ultralytics_script(std::vector<std::string>* looked_in = nullptr);

// The interpreter the script runs with: $YOLOFLOW_PYTHON, else `python3` from PATH.
std::string python_interpreter();

struct PythonRun {
  int exit_code = -1;       // the script's exit code; -1 when it was killed by a signal
  bool not_started = false;  // the interpreter could not be executed (missing, not executable)
  std::string start_error;   // why, when not_started
  std::string output;        // its stdout and stderr together
};

// Runs `python script args...` (no shell: each argument reaches the script as it is), its output
// captured, and waits for it. The child gets SIGTERM if yoloflow dies first.
PythonRun run_python(const std::string& python, const std::string& script, const std::vector<std::string>& args);

}  // namespace yoloflow::cli
