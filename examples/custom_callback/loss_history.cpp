// loss_history: a training callback written against yoloflow/callback.h alone. It records one
// results.csv column epoch by epoch, keeps the weights of the epoch where the column was lowest
// (lowest.pt), can stop the run once the value falls below a threshold, and writes the history
// as JSON when the run ends. The history is its state: a resumed run continues it.
#include <fstream>
#include <string>
#include <vector>

#include "yoloflow/callback.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"

namespace {

using namespace yoloflow;

class LossHistory final : public Callback {
 public:
  static Schema schema() {
    Schema s;
    s.add_string("column", "train/box_loss").doc("The results.csv column to record (e.g. \"val/box_loss\").");
    s.add_string("file", "loss_history.json").doc("Written in the run folder when the run ends.");
    s.add_float("stop_below", 0.0).min(0.0).fixed().doc("Stop the run once the value is below this (0 = never).");
    return s;
  }

  void configure(const Params& p, const StageContext&) override {
    column_ = p.get_string("column");
    file_ = p.get_string("file");
    stop_below_ = p.get_float("stop_below");
  }

  void on_train_start(const TrainRun& run, TrainControl&) override { run_dir_ = run.run_dir; }

  void on_epoch_end(const EpochSummary& epoch, const TrainProgress&, TrainControl& control) override {
    const auto it = epoch.values.find(column_);
    if (it == epoch.values.end()) return;  // e.g. a validation column in an epoch without validation
    const double value = it->second;
    bool lowest = true;
    for (double v : values_) lowest = lowest && value < v;
    values_.push_back(value);
    if (lowest) control.save_checkpoint("lowest.pt");
    if (stop_below_ > 0 && value < stop_below_) {
      control.request_stop("loss_history: " + column_ + " " + std::to_string(value) + " is below " +
                           std::to_string(stop_below_));
    }
  }

  void on_train_end(const TrainProgress&, TrainControl&) override {
    const std::string path = run_dir_ + "/" + file_;
    std::ofstream out(path);
    out << json{{"column", column_}, {"values", values_}}.dump(2) << "\n";
    if (!out) throw Error("cannot write " + path);
  }

  json state() const override { return {{"values", values_}}; }
  void load_state(const json& state) override { values_ = state.value("values", std::vector<double>{}); }

 private:
  std::string column_, file_, run_dir_;
  double stop_below_ = 0.0;
  std::vector<double> values_;  // one per epoch, this run's and those before a resume
};

void register_components(Registrar& r) {
  r.add_callback<LossHistory>("loss_history", LossHistory::schema(),
                              "Records a results.csv column per epoch, keeps the epoch where it was lowest as "
                              "lowest.pt, and may stop the run below a threshold.");
}

}  // namespace

YOLOFLOW_PLUGIN("example_loss_history", "1.0.0", register_components)
