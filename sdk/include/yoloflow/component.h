#pragma once
// What every plugin component has in common: its kind, its schema, and the
// context the host hands it when it is configured.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "yoloflow/export.h"
#include "yoloflow/params.h"

namespace yoloflow {

// Plugin kinds. Each has its own registry and interface header:
//   Source        yoloflow/source.h        graph node: emits Samples (decoded images + labels)
//   Augmentation  yoloflow/augmentation.h  graph node: Sample -> Sample
//   Batcher       yoloflow/batcher.h       graph node: Samples -> Batch
//   Sink          yoloflow/sink.h          graph node: consumes Batches (training, throughput)
//   Model         yoloflow/model.h         component used by a sink (LibTorch)
//   Optimizer     yoloflow/optimizer.h     component used by a sink (LibTorch)
//   Precision     yoloflow/precision.h     component used by a sink (LibTorch)
//   Monitor       yoloflow/monitor.h       receives run, step and epoch events
//   Scheduler     yoloflow/scheduler.h     component used by the train sink: lr factor per epoch
//   Callback      yoloflow/callback.h      component used by the train sink: hooks into training
//   Loss          yoloflow/loss.h          component used by the train sink: what training minimises (LibTorch)
enum class Kind : int {
  Source = 0,
  Augmentation = 1,
  Batcher = 2,
  Sink = 3,
  Model = 4,
  Optimizer = 5,
  Precision = 6,
  Monitor = 7,
  Scheduler = 8,
  Callback = 9,
  Loss = 10,
  Evaluator = 11,
};
constexpr int kKindCount = 12;
YOLOFLOW_SDK_API const char* kind_name(Kind kind);          // "source", "augmentation", ...
YOLOFLOW_SDK_API bool kind_from_name(const std::string& name, Kind& out);
YOLOFLOW_SDK_API std::vector<std::string> kind_names();

class RunReporter;  // yoloflow/monitor.h

// What the host tells a component when it configures it (and again at each epoch whose
// scheduled values differ). Plain data, plus the one host object stages report through.
struct StageContext {
  std::string node;       // pipeline node name ("augment"), or the component's JSON path
  int imgsz = 640;        // training image size of this epoch
  int epoch = 0;          // 0-based
  int epochs = 1;
  std::uint64_t seed = 0;
  bool deterministic = false;
  int workers = 1;        // threads the graph runs plugin code on
  std::string run_dir;    // where outputs go ("" when the command writes none)
  std::string device;     // "cpu", "cuda", "cuda:0"
  std::int64_t samples_per_epoch = 0;  // samples the source delivers each epoch (0 = unknown)
  // Forwards progress to the pipeline's monitors; set by the host for every stage of a run
  // (null when a component is used outside a run, e.g. by `describe` or a unit test).
  RunReporter* reporter = nullptr;
  // Every numeric value the pipeline schedules per epoch, resolved for this epoch, named by
  // JSON path ("imgsz", "stages.batch.params.batch"). The sink is reconfigured when it changes.
  std::map<std::string, double> schedule;
};

// Base of every component. configure() is called once before the run and again whenever
// a scheduled parameter or the image size changes at an epoch boundary; it must be cheap
// to call again (rebuild lookup tables, not datasets).
class YOLOFLOW_SDK_API Component {
 public:
  virtual ~Component();
  virtual void configure(const Params& params, const StageContext& context);
};

}  // namespace yoloflow
