// epoch_jsonl: a monitor that appends one JSON object per finished epoch to a file (every
// value the run reported: losses, metrics, learning rates, memory, speed; and the epoch
// summary), so scripts and dashboards follow a run without parsing results.csv or the log.
// It also ends a run cleanly when a stop file appears (`touch RUN/STOP`): the run stops at
// the end of the current epoch, after the train sink saved last.pt, so
// `yoloflow train --resume RUN` continues it later.
//
// Example pipeline entry:
//   "monitors": [{"plugin": "epoch_jsonl", "params": {"file": "epochs.jsonl", "stop_file": "STOP"}}]
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "yoloflow/error.h"
#include "yoloflow/monitor.h"
#include "yoloflow/plugin.h"

namespace {

namespace fs = std::filesystem;

// Relative paths live in the run folder; absolute ones are used as they are.
std::string in_run_dir(const std::string& path, const std::string& run_dir) {
  if (path.empty() || fs::path(path).is_absolute() || run_dir.empty()) return path;
  return (fs::path(run_dir) / path).string();
}

class EpochJsonl final : public yoloflow::Monitor {
 public:
  static yoloflow::Schema schema() {
    yoloflow::Schema s;
    s.add_string("file", "epochs.jsonl").fixed().doc(
        "File the epochs are appended to, one JSON object a line; relative to the run folder (the working "
        "directory when the run has none).");
    s.add_string("stop_file", "STOP").fixed().doc(
        "When this file exists at an epoch end, the run stops there (resumable); relative to the run "
        "folder; empty = never.");
    return s;
  }

  void configure(const yoloflow::Params& params, const yoloflow::StageContext& context) override {
    file_ = params.get_string("file");
    stop_file_ = params.get_string("stop_file");
    reporter_ = context.reporter;
    run_dir_ = context.run_dir;
  }

  void on_run_start(const yoloflow::RunEvent& event) override {
    if (!event.run_dir.empty()) run_dir_ = event.run_dir;
    path_ = in_run_dir(file_, run_dir_);
    if (const fs::path parent = fs::path(path_).parent_path(); !parent.empty()) fs::create_directories(parent);
    // Appending: a resumed run continues the same file.
    out_.open(path_, std::ios::app);
    if (!out_) throw yoloflow::Error("epoch_jsonl: cannot open " + path_ + " for appending");
  }

  void on_epoch(const yoloflow::EpochEvent& event) override {
    yoloflow::json line;
    line["epoch"] = event.epoch + 1;  // 1-based, like results.csv
    line["epochs"] = event.epochs;
    line["seconds"] = event.seconds;
    line["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    yoloflow::json values = yoloflow::json::object();
    // JSON has no NaN or infinity: such values (a diverged loss) are written as null.
    for (const auto& [name, value] : event.values) values[name] = std::isfinite(value) ? yoloflow::json(value) : yoloflow::json();
    line["values"] = std::move(values);
    if (!event.summary.empty()) line["summary"] = event.summary;
    out_ << line.dump() << '\n';
    out_.flush();  // a reader tailing the file sees each epoch as it ends
    if (!out_) throw yoloflow::Error("epoch_jsonl: cannot write to " + path_);

    const std::string stop = in_run_dir(stop_file_, run_dir_);
    std::error_code ec;
    if (!stop.empty() && fs::exists(stop, ec) && reporter_ != nullptr && event.epoch + 1 < event.epochs) {
      stopped_ = true;
      reporter_->request_stop("stop file " + stop + " found after epoch " + std::to_string(event.epoch + 1));
    }
  }

  std::string epoch_summary() override { return stopped_ ? "epoch_jsonl: stop file found, stopping" : ""; }

  void on_run_end(const yoloflow::RunEvent&) override { out_.close(); }

 private:
  std::string file_, stop_file_, run_dir_, path_;
  yoloflow::RunReporter* reporter_ = nullptr;
  std::ofstream out_;
  bool stopped_ = false;
};

void register_components(yoloflow::Registrar& registrar) {
  registrar.add_monitor<EpochJsonl>(
      "epoch_jsonl", EpochJsonl::schema(),
      "Appends one JSON line per epoch (all reported values and the summary) and stops the run at an epoch end "
      "when a stop file appears.");
}

}  // namespace

YOLOFLOW_PLUGIN("example_epoch_jsonl", "1.0.0", register_components)
