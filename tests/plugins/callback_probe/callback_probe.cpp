// A callback that counts what it saw (its state) and writes a line per epoch end to
// RUN/probe.txt, so tests can tell whether a resumed run got its state back; `throw_in` names
// a hook that throws, for the error a failing callback gives.
#include <fstream>
#include <stdexcept>
#include <string>

#include "yoloflow/callback.h"
#include "yoloflow/plugin.h"

namespace {

using namespace yoloflow;

class CallbackProbe final : public Callback {
 public:
  static Schema schema() {
    Schema s;
    s.add_string("throw_in", "").doc("Hook that throws (\"on_epoch_end\", ...); empty = none.");
    return s;
  }
  void configure(const Params& p, const StageContext&) override { throw_in_ = p.get_string("throw_in"); }
  void on_train_start(const TrainRun& run, TrainControl&) override {
    maybe_throw("on_train_start");
    run_dir_ = run.run_dir;
    resumed_ = run.resumed;
  }
  void on_batch_end(const TrainProgress&, TrainControl&) override {
    maybe_throw("on_batch_end");
    ++batches_;
  }
  void on_epoch_end(const EpochSummary&, const TrainProgress& progress, TrainControl&) override {
    maybe_throw("on_epoch_end");
    ++epochs_;
    std::ofstream(run_dir_ + "/probe.txt", std::ios::app)
        << "epoch " << progress.epoch + 1 << " epochs " << epochs_ << " batches " << batches_ << " resumed "
        << (resumed_ ? 1 : 0) << "\n";
  }
  json state() const override { return {{"epochs", epochs_}, {"batches", batches_}}; }
  void load_state(const json& state) override {
    epochs_ = state.at("epochs").get<int>();
    batches_ = state.at("batches").get<int>();
  }

 private:
  void maybe_throw(const char* hook) const {
    if (throw_in_ == hook) throw std::runtime_error(std::string("probe failure in ") + hook);
  }
  std::string throw_in_, run_dir_;
  bool resumed_ = false;
  int epochs_ = 0, batches_ = 0;
};

void register_components(Registrar& r) {
  r.add_callback<CallbackProbe>("callback_probe", CallbackProbe::schema(), "Counts batches and epochs (tests).");
}

}  // namespace

YOLOFLOW_PLUGIN("callback_probe", "1.0.0", register_components)
