#pragma once
// The trainer as its run's driver (trainer.h says what it does). Its methods live by concern:
// trainer.cpp builds the run and owns its loop; trainer_batches.cpp trains an epoch's batches;
// trainer_epoch_end.cpp closes an epoch (validation, callbacks, checkpoint, results).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/graph/graph_runner.h"
#include "runtime/graph/run_control.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/run/run_driver.h"
#include "training/callbacks/train_callbacks.h"
#include "training/checkpoint/checkpoint.h"
#include "training/checkpoint/checkpoint_writer.h"
#include "training/components/batch_targets.h"
#include "training/compose/augment_placement.h"
#include "training/eval/val_plots.h"
#include "training/eval/validation_pipeline.h"
#include "training/parallel/data_parallel.h"
#include "training/step/frozen_layers.h"
#include "training/step/scheduled_loss.h"
#include "training/step/step_engine.h"
#include "training/step/step_profile.h"
#include "training/step/train_state.h"
#include "training/step/training_parts.h"
#include "training/trainer/epoch_report.h"
#include "training/trainer/optimizer_schedule.h"
#include "training/trainer/precision_plan.h"
#include "training/trainer/rect_training.h"
#include "training/trainer/time_budget.h"
#include "training/trainer/train_checkpoints.h"
#include "training/trainer/train_display.h"
#include "yoloflow/sink.h"
#include "yoloflow/training_view.h"

namespace yoloflow::core {

class Trainer final : public RunDriver, private TrainingView {
 public:
  Trainer(const Pipeline& pipeline, const Registry& registry, const RunOptions& options);

  std::string nothing_to_run() const override { return nothing_to_run_; }
  bool resumable() const override { return true; }
  RunOutcome run(std::ostream& out) override;
  GraphRunner& graph() override { return *runner_; }
  std::string summary() const override;

 private:
  using Clock = std::chrono::steady_clock;

  // The graph's consumer: each batch one training step, on the thread that runs the epoch.
  class StepSink final : public Sink {
   public:
    explicit StepSink(Trainer& trainer) : trainer_(trainer) {}
    void begin_epoch(int epoch) override { trainer_.begin_epoch(epoch); }
    void consume(Batch& batch) override { trainer_.train_batch(batch); }
    void end_epoch(int) override { trainer_.finish_accumulation(); }
    // A stop mid-epoch: the trainer's loop saves where it stopped.
    void interrupted(int) override {}
    PixelAllocator pixel_allocator() override;
    bool composes_pixel_plans() const override;

   private:
    Trainer& trainer_;
  };

  // trainer.cpp: building, in the order the parts need each other; the loop.
  void build(const Registry& registry);
  void build_outputs(const Registry& registry, const json& callbacks, const std::string& callbacks_path);
  void set_up_rect_and_capture();
  // The optimizer on the first epoch's batch size, before the first batch (a resume restores
  // its state with everything else).
  void set_up_optimizer();
  void write_labels_plot();
  // The scheduled values of `epoch` (the loss's gains, imgsz, the stage's schedules).
  void at_epoch(int epoch);
  // precision_schedule: the strategy of `epoch` made current (precision_plan.h).
  void use_precision(int epoch);
  // One epoch of the run: its batches, then its end (or, stopped, last.pt where it stopped).
  EpochStats run_epoch(int epoch);

  // trainer_batches.cpp: the epoch, batch by batch (StepSink).
  void begin_epoch(int epoch);
  void train_batch(Batch& batch);
  void finish_accumulation();
  void after_batch(const CallbackRequests& before);
  void set_batch(std::int64_t batch);
  void reset_loss_sum(const torch::Tensor& values);
  void act_mid_epoch(const CallbackRequests& r);
  // The time budget (time_budget.h): within an epoch, after each batch.
  void check_time_budget();
  void stop(const std::string& reason);
  double epoch_seconds() const { return std::chrono::duration<double>(Clock::now() - epoch_start_).count(); }
  DisplayedEpoch displayed() const { return {state_, ctx_.epochs, schedule_->batches_per_epoch(), epoch_seconds()}; }

  // trainer_epoch_end.cpp: after the epoch's batches: validation, callbacks, checkpoint,
  // results (rank 0).
  void end_of_epoch(int epoch);
  ValidationResult validate();
  // The time budget's plan after each epoch.
  void plan_epochs(int epoch);
  void end_training();
  // Writes the run's state to `files` in the weights folder (rank 0); `after` runs once they
  // are on disk.
  void save(const std::vector<std::string>& files, bool mid_epoch, double fitness, std::function<void()> after = nullptr);
  TrainingParts parts() { return {*model_, *optimizer_, *precision_, callbacks_, frozen_.layers()}; }

  // TrainingView: what a callback's tensor hooks see.
  torch::nn::Module& model() override { return model_->module(); }
  const std::vector<ParamGroup>& param_groups() const override;
  TrainProgress progress() const override;

  const Pipeline& pipeline_;
  RunOptions options_;
  const StageSpec& stage_;
  // The run's steering (stop, an epoch ended early, the planned epochs): decided here, obeyed by
  // the graph runner. The planned epochs are what schedules counted from the end follow
  // (close_mosaic's "-10"), as Ultralytics closes mosaic relative to the epochs it estimates.
  RunControl control_;
  std::string nothing_to_run_;
  std::unique_ptr<Checkpoint> resume_;  // a resumed run's checkpoint, until it is restored
  std::string resume_path_;
  int first_epoch_ = 0;
  std::uint64_t first_sequence_ = 0;
  bool resumed_ = false;         // the run continues a checkpoint
  bool continue_epoch_ = false;  // the first epoch continues where the resumed run stopped
  double resumed_epoch_seconds_ = 0.0;

  Params p_;
  StageContext ctx_;  // the stage's, at the current epoch
  torch::Device device_{torch::kCPU};
  StepSink step_sink_{*this};
  std::unique_ptr<GraphRunner> runner_;
  std::unique_ptr<TrainingPartsBuilder> builder_;
  std::unique_ptr<Model> model_;
  FrozenLayers frozen_;  // the `freeze` layers
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<PrecisionStrategy> precision_;
  PrecisionPlan precision_plan_;
  json precision_spec_;        // precision_'s
  std::string precision_key_;  // precision_spec_ in a captured graph's key, made once per switch
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<OptimizerSchedule> schedule_;
  std::unique_ptr<ScheduledLoss> loss_;
  std::unique_ptr<BatchTargets> targets_;
  std::unique_ptr<dist::DataParallel> dp_;
  std::unique_ptr<ValidationPipeline> validation_;
  std::unique_ptr<EpochReport> report_;  // rank 0 only
  // The plots of the run's last validation (plots=true, rank 0): fed by every validation,
  // written when the run ends.
  std::unique_ptr<ValPlots> val_plots_;
  std::unique_ptr<StepProfile> profile_;  // rank 0 only
  std::unique_ptr<StepEngine> engine_;
  std::unique_ptr<AugmentPlacement> placement_;  // where the augmented pixels are made (augment_on)
  std::size_t eager_steps_before_ = 0, replays_before_ = 0;  // the captured step's counts when the epoch began
  TrainCallbacks callbacks_;  // rank 0 only
  TrainState state_;
  std::unique_ptr<CheckpointWriter> checkpoints_;
  RectEpochs rect_;  // train_rect
  std::vector<std::string> names_;
  json model_spec_;  // {"plugin", "params"} as built, nc resolved
  std::string run_dir_;
  ShownValidation last_metrics_;
  bool validated_ = false;  // last_metrics_ holds a validation of this process
  Clock::time_point epoch_start_ = Clock::now(), last_batch_end_ = Clock::now();
  std::int64_t steps_this_process_ = 0;
  TrainDisplay display_;
  bool first_batch_of_epoch_ = true;
  bool stopping_ = false;      // a stop was asked for: the batches still arriving are left
  bool ended_ = false;         // on_train_end was called
  std::string pending_stop_;   // data parallel: a callback's stop, taken at the epoch's end
  TimeBudget budget_;          // `time`; off at 0
  bool epoch_cut_ = false;     // the time budget ended this epoch early: it is the run's last
  double last_end_seconds_ = 0.0;  // the previous epoch's end (validation, checkpoint)
};

}  // namespace yoloflow::core
