// Out-of-line members of the SDK interfaces: their vtables and type information live in
// the SDK library, once, whichever plugin uses them.
#include <algorithm>
#include <cstring>

#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/callback.h"
#include "yoloflow/component.h"
#include "yoloflow/monitor.h"
#include "yoloflow/plugin.h"
#include "yoloflow/scheduler.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

namespace yoloflow {

namespace {
const char* const kKindNames[kKindCount] = {"source",  "augmentation", "batcher",  "sink",
                                            "model",   "optimizer",    "precision", "monitor",
                                            "scheduler", "callback", "loss", "evaluator"};
}

const char* kind_name(Kind kind) {
  const int i = static_cast<int>(kind);
  return (i >= 0 && i < kKindCount) ? kKindNames[i] : "unknown";
}

bool kind_from_name(const std::string& name, Kind& out) {
  for (int i = 0; i < kKindCount; ++i) {
    if (name == kKindNames[i]) {
      out = static_cast<Kind>(i);
      return true;
    }
  }
  return false;
}

std::vector<std::string> kind_names() { return {kKindNames, kKindNames + kKindCount}; }

Component::~Component() = default;
void Component::configure(const Params&, const StageContext&) {}

Registrar::~Registrar() = default;
DataSource::~DataSource() = default;
void DataSource::share_pixels(bool) {}
bool DataSource::labels(std::size_t, SampleLabels&) const { return false; }
SampleLoader::~SampleLoader() = default;
Augmentation::~Augmentation() = default;
Batcher::~Batcher() = default;

Sink::~Sink() = default;
void Sink::begin_epoch(int) {}
void Sink::end_epoch(int) {}
void Sink::interrupted(int) {}
std::string Sink::summary() const { return {}; }
PixelAllocator Sink::pixel_allocator() { return {}; }
bool Sink::composes_pixel_plans() const { return false; }
bool Batcher::collates_pixel_plans() const { return false; }
const char* Augmentation::plan_support() const { return "it works on the pixels itself"; }

Monitor::~Monitor() = default;
void Monitor::on_run_start(const RunEvent&) {}
void Monitor::on_step(const StepEvent&) {}
void Monitor::on_epoch(const EpochEvent&) {}
void Monitor::on_run_end(const RunEvent&) {}
std::string Monitor::epoch_summary() { return {}; }

Scheduler::~Scheduler() = default;

Callback::~Callback() = default;
void Callback::on_train_start(const TrainRun&, TrainControl&) {}
void Callback::on_batch_start(const Batch&, const TrainProgress&, TrainControl&) {}
void Callback::on_batch_end(const TrainProgress&, TrainControl&) {}
void Callback::on_optimizer_step(TrainingView&) {}
void Callback::on_validation_start(TrainingView&) {}
void Callback::on_validation_end(TrainingView&) {}
void Callback::on_epoch_end(const EpochSummary&, const TrainProgress&, TrainControl&) {}
void Callback::on_train_end(const TrainProgress&, TrainControl&) {}
json Callback::state() const { return json(); }
void Callback::load_state(const json&) {}
void Callback::save_tensors(CheckpointTensors&) const {}
void Callback::load_tensors(const CheckpointTensors&) {}

}  // namespace yoloflow
