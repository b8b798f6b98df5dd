// The end of the trainer's epoch: validation, the callbacks' epoch end, the checkpoint and the
// results row once it is on disk, the epoch line; and the end of the run (trainer_driver.h).
#include <algorithm>

#include "training/components/named_losses.h"
#include "training/trainer/fitness_tracker.h"
#include "training/trainer/trainer_driver.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

ValidationResult Trainer::validate() {
  ValidationResult v;
  // The callbacks put the weights to score in the model (an average), and take them out again
  // whatever happens.
  callbacks_.validation_start(*this);
  try {
    engine_->between_steps(
        [&] { v = validation_->run(*model_, precision_.get(), loss_->get(), device_, nullptr, val_plots_.get()); });
  } catch (...) {
    callbacks_.validation_end(*this);
    throw;
  }
  callbacks_.validation_end(*this);
  return v;
}

void Trainer::end_of_epoch(int epoch) {
  plan_epochs(epoch);  // first: validation, the checkpoint and results know the run's new end
  const double seconds = epoch_seconds();
  state_.total_seconds += seconds;
  placement_->epoch_ended(epoch, seconds);
  const auto loss = ((dp_ ? dp_->mean(state_.loss_sum) : state_.loss_sum) / std::max<std::int64_t>(state_.step, 1))
                        .to(torch::kCPU, torch::kDouble)
                        .contiguous();
  if (!dist::is_main_process()) {  // rank 0 validates and writes; the others wait for its verdict
    if (dp_->rank0_decides(false)) control_.request_stop("rank 0 stopped the run");
    return;
  }
  EpochFacts facts{epoch, seconds,
                   named_losses(state_.loss_names, std::vector<double>(loss.data_ptr<double>(), loss.data_ptr<double>() + loss.numel())),
                   ctx_.imgsz, schedule_->target_accumulate(), ctx_.schedule};
  ResultsRow row = EpochReport::training_row(facts, state_, optimizer_->groups(), profile_.get());
  // What the run trains with at this epoch's end, so that results.csv shows where a resume or
  // precision_schedule changed course: the workers, the autocast's bits (32: none), the CUDA
  // device (-1: the CPU).
  row["workers"] = static_cast<double>(runner_->workers());
  row["precision_bits"] = precision_->compute_dtype() == at::kFloat ? 32.0 : 16.0;
  row["cuda_device"] = device_.is_cuda() ? static_cast<double>(std::max<int>(device_.index(), 0)) : -1.0;
  EpochSummary summary;
  summary.last = epoch + 1 == ctx_.epochs;
  summary.epochs_per_validation = std::max(static_cast<int>(p_.get_int("val_every")), 1);
  double val_seconds = -1.0;
  if (summary.last || (p_.get_int("val_every") > 0 && (epoch + 1) % p_.get_int("val_every") == 0)) {
    const auto val_start = Clock::now();
    const ValidationResult v = validate();
    val_seconds = std::chrono::duration<double>(Clock::now() - val_start).count();
    EpochReport::add_validation(row, v);
    summary.validated = true;
    summary.fitness = v.evaluation.fitness;
    last_metrics_ = {v.evaluation, v.table, names_};
    validated_ = true;
  }
  EpochReport::add_memory(row, device_);  // after validation: an epoch's peak includes it
  // The step's and validation's memory are reserved now: what is left can keep images.
  placement_->kept_images_epoch_end(runner_->source().size(), ctx_.imgsz);
  const auto results_start = Clock::now();
  summary.values = row;
  CallbackRequests requests;
  callbacks_.epoch_end(summary, progress(), requests);
  if (requests.stop_reason.empty()) requests.stop_reason = pending_stop_;
  const bool budget_ends_run = budget_.on() && summary.last && requests.stop_reason.empty();
  if (budget_ends_run) requests.stop_reason = budget_.stop_reason();
  const auto save_start = Clock::now();
  std::vector<std::string> files{"last.pt"};
  if (is_new_best(state_, summary.fitness)) files.push_back("best.pt");
  for (const auto& f : requests.checkpoints) files.push_back(f);
  // results.csv gets the epoch's row once its checkpoint is on disk, so the results never
  // list an epoch that last.pt does not hold.
  save(files, /*mid_epoch=*/false, summary.fitness, [report = report_.get(), row] { report->write(row); });
  const bool stopping = !requests.stop_reason.empty();
  // Ultralytics' plots of the final validation: the run ends here, planned or stopped.
  if (val_plots_ && validated_ && (summary.last || stopping)) {
    const auto plots = write_val_plots(*val_plots_, run_dir_, "train");
    if (!plots.empty()) YF_LOG_INFO("train: " << plots.size() << " validation plots written to " << run_dir_);
  }
  if (summary.last || stopping) checkpoints_->wait();
  const double save_seconds = std::chrono::duration<double>(Clock::now() - save_start).count();
  if (ctx_.reporter != nullptr) {
    ctx_.reporter->epoch_values(row);
    // How this epoch's steps ran, when the step is captured: monitors tell the epoch of the
    // warm-up and capture from a steady one.
    if (const CapturedStep* c = engine_->captured(); c != nullptr && !c->failed()) {
      ctx_.reporter->epoch_values({{"step/eager", static_cast<double>(c->eager_steps() - eager_steps_before_)},
                                   {"step/replayed", static_cast<double>(c->replays() - replays_before_)}});
    }
  }
  if (stopping) control_.request_stop(requests.stop_reason);
  if (budget_ends_run) {
    const std::int64_t of = schedule_->batches_per_epoch();
    const std::string cut = epoch_cut_ && state_.step < of
                                ? " (cut short after batch " + std::to_string(state_.step) + " of " + std::to_string(of) + ")"
                                : "";
    YF_LOG_INFO(requests.stop_reason << ": the run ends with epoch " << epoch + 1 << cut << "; saved " << run_dir_
                                     << "/weights/last.pt");
  }
  YF_LOG_INFO(epoch_line(epoch, ctx_.epochs, seconds, row, state_.loss_names, summary.validated ? &last_metrics_ : nullptr,
                         val_seconds, std::chrono::duration<double>(save_start - results_start).count(), save_seconds));
  if (dp_) dp_->rank0_decides(stopping);
}

// After each epoch's batches the budget plans the run again (rank 0's plan on every rank): the
// scheduler, progress lines, results and checkpoints follow the new count.
void Trainer::plan_epochs(int epoch) {
  if (!budget_.on()) return;
  int planned = control_.epochs();
  if (dist::is_main_process()) {
    planned = epoch_cut_ ? epoch + 1 : budget_.plan(epoch, first_epoch_, planned, last_end_seconds_);
  }
  if (dp_) planned = static_cast<int>(dp_->rank0_value(planned));
  control_.plan_epochs(planned);  // the loop's end, and the graph's schedules counted from the end
  ctx_.epochs = planned;          // this epoch's context was made before the plan
  schedule_->set_epochs(planned);
}

void Trainer::end_training() {
  if (ended_) return;
  ended_ = true;
  CallbackRequests requests;  // the run is over: nothing more to act on
  callbacks_.train_end(progress(), requests);
}

void Trainer::save(const std::vector<std::string>& files, bool mid_epoch, double fitness, std::function<void()> after) {
  if (!dist::is_main_process()) return;  // data parallel: rank 0 writes
  json meta = {{"names", names_}, {"imgsz", ctx_.imgsz}, {"epochs", ctx_.epochs}, {"fitness", fitness},
               {"seed", ctx_.seed}, {"model", model_spec_}};  // the model: what `yoloflow predict` rebuilds
  meta["pipeline"] = pipeline_.document;  // what the run folder's pipeline.json holds
  // best.pt holds what is deployed (Ultralytics' best.pt: float16 EMA, nothing for a resume);
  // last.pt and the epoch files everything a resume needs.
  std::vector<std::string> full, deployable;
  for (const auto& f : files) (f == "best.pt" ? deployable : full).push_back(f);
  checkpoints_->save(make_train_checkpoint(state_, parts(), mid_epoch, epoch_seconds(), std::move(meta)),
                     weight_paths(run_dir_, full),
                     mid_epoch ? "the checkpoint of epoch " + std::to_string(state_.epoch + 1) + " (mid-epoch)"
                               : "the checkpoint of epoch " + std::to_string(state_.epoch + 1),
                     std::move(after), weight_paths(run_dir_, deployable));
}

}  // namespace yoloflow::core
