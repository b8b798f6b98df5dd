#pragma once
// Callback plugins: code the train sink runs at fixed points of a training run, in the manner
// of Lightning's callbacks or mmengine's hooks, with state that goes into the run's
// checkpoints. The built-in ones keep the recipe's checkpoint cadence (`periodic_checkpoints`),
// stop early (`early_stopping`) and draw the first batches (`train_batch_images`).
//
// Pipeline JSON, inside the train sink's params, run in the order listed:
//   "callbacks": [
//     {"plugin": "early_stopping", "params": {"patience": 50}},
//     {"plugin": "periodic_checkpoints", "params": {"save_period": 10}}
//   ]
//
// The trainer owns the run's loop and calls the hooks, in this order:
//   on_train_start                 once per process, before the first batch (a resumed run calls
//                                  it again, after load_state and load_tensors)
//   on_batch_start, on_batch_end   around each batch's training step
//   on_optimizer_step              after every optimizer step (also the one an epoch's end makes
//                                  for a partial accumulation), with the model (training_view.h)
//   on_validation_start, _end      around each validation, with the model: what the model holds
//                                  between them is what is scored (an average of the weights)
//   on_epoch_end                   after the epoch's validation, before its checkpoints and its
//                                  results.csv row are written (so they hold the state it leaves)
//   save_tensors, state            whenever a checkpoint is written
//   on_train_end                   once per process, when the run ends or is stopped
// Hooks run on the training thread (the run waits for them) and, in a data-parallel run, in
// the main process only. An exception from a hook ends the run with an error naming the
// callback, its library and its place in the pipeline. The hooks that take a TrainingView or
// CheckpointTensors need LibTorch: include yoloflow/training_view.h, which says what a hook may
// do to the model and the optimizer.
//
// State: state() is called whenever a checkpoint is written (last.pt at each epoch end,
// mid-epoch saves, an interruption) and stored in it under the callback's name (the plugin
// name; "name#2" for its second entry in the list). `yoloflow train --resume` calls
// load_state() with what the checkpoint holds, before on_train_start, so that a resumed run
// continues where the stopped one was (like Lightning's state_dict / load_state_dict).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "yoloflow/component.h"
#include "yoloflow/params.h"
#include "yoloflow/sample.h"

namespace yoloflow {

class TrainingView;       // yoloflow/training_view.h
class CheckpointTensors;  // yoloflow/training_view.h

// The run, as on_train_start sees it.
struct TrainRun {
  std::string run_dir;              // the run's folder; checkpoints are in run_dir + "/weights"
  std::vector<std::string> names;   // class names of the dataset
  int epochs = 1;
  bool resumed = false;             // continuing from a checkpoint (load_state was called)
};

// Where the run stands when a hook is called.
// Batches of each epoch whose pixels reach on_batch_start on the host even when the training
// device composed them (pictures of the first batches).
inline constexpr std::int64_t kPicturedBatches = 3;

struct TrainProgress {
  int epoch = 0;                    // 0-based: the epoch in progress, or just finished
  int epochs = 1;
  std::int64_t step = 0;            // batches of `epoch` trained (on_batch_start: before this one)
  std::int64_t steps_in_epoch = 1;  // batches an epoch has
  std::int64_t global_step = 0;     // optimizer steps so far
  // on_batch_end: this batch ended with an optimizer step, so no gradients wait for the next
  // one and a checkpoint written now needs none of them.
  bool optimizer_stepped = false;
};

// What on_epoch_end is told about the finished epoch.
struct EpochSummary {
  bool validated = false;        // validation ran after this epoch (the train sink's val_every)
  double fitness = -1.0;         // the validation's fitness (mAP50-95, as best.pt uses it); -1 when not validated
  int epochs_per_validation = 1; // epochs between validations (val_every, at least 1)
  bool last = false;             // the run's last epoch
  std::map<std::string, double> values;  // the epoch's results.csv row ("metrics/mAP50-95(B)", ...)
};

// What a hook may ask of the run. Valid only during the call it is passed to.
class TrainControl {
 public:
  // Writes a resumable checkpoint of the run as it stands to `file`, a file name in the run's
  // weights folder ("epoch10.pt"; "last.pt" rewrites the one `--resume` reads). At an epoch
  // end it is written together with last.pt; mid-epoch (on_batch_end) right away, in the main
  // process, in the background when the train sink's save_async is on.
  virtual void save_checkpoint(const std::string& file) = 0;
  // Ends the run after this hook: an epoch end still writes its checkpoints; mid-epoch the
  // run stops after this batch, saving last.pt. `reason` is printed.
  virtual void request_stop(const std::string& reason) = 0;

 protected:
  ~TrainControl() = default;
};

class YOLOFLOW_SDK_API Callback : public Component {
 public:
  ~Callback() override;
  virtual void on_train_start(const TrainRun& run, TrainControl& control);
  // `batch` as the model receives it (uint8 HWC pixels, normalised targets; sample.h). A batch
  // composed on the training device (Batch::planned) has its pixels copied back into
  // Batch::pixels for the first kPicturedBatches batches of each epoch only; later ones have none.
  virtual void on_batch_start(const Batch& batch, const TrainProgress& progress, TrainControl& control);
  virtual void on_batch_end(const TrainProgress& progress, TrainControl& control);
  virtual void on_optimizer_step(TrainingView& training);
  virtual void on_validation_start(TrainingView& training);
  virtual void on_validation_end(TrainingView& training);
  virtual void on_epoch_end(const EpochSummary& epoch, const TrainProgress& progress, TrainControl& control);
  virtual void on_train_end(const TrainProgress& progress, TrainControl& control);
  // The state to carry in checkpoints (null: none); load_state gets it back on resume.
  virtual json state() const;
  virtual void load_state(const json& state);
  // Tensors to carry in checkpoints (nothing by default); load_tensors gets them back on
  // resume, before on_train_start.
  virtual void save_tensors(CheckpointTensors& out) const;
  virtual void load_tensors(const CheckpointTensors& in);
};

}  // namespace yoloflow
