#include "training/trainer/epoch_report.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "training/device/cuda_memory.h"
#include "training/eval/metrics_report.h"
#include "training/trainer/progress_report.h"
#include "training/trainer/results_plot.h"
#include "runtime/util/text_format.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

std::vector<std::string> results_columns(const std::vector<std::string>& loss_names,
                                         const std::vector<std::string>& metric_columns) {
  std::vector<std::string> out = {"epoch", "time"};
  for (const auto& name : loss_names) out.push_back("train/" + name + "_loss");
  out.insert(out.end(), metric_columns.begin(), metric_columns.end());
  for (const auto& name : loss_names) out.push_back("val/" + name + "_loss");
  for (const char* lr : {"lr/pg0", "lr/pg1", "lr/pg2"}) out.emplace_back(lr);
  return out;
}

EpochReport::EpochReport(std::string run_dir, bool plots, std::vector<std::string> columns)
    : run_dir_(std::move(run_dir)), plots_(plots), csv_(run_dir_ + "/results.csv", std::move(columns)) {}

ResultsRow EpochReport::training_row(const EpochFacts& f, const TrainState& state, const std::vector<ParamGroup>& groups,
                                     StepProfile* profile) {
  ResultsRow row;
  row["epoch"] = f.epoch + 1;
  row["time"] = state.total_seconds;
  for (const auto& [name, value] : f.train_loss) row["train/" + name + "_loss"] = value;
  for (std::size_t g = 0; g < groups.size() && g < 3; ++g) row["lr/pg" + std::to_string(g)] = groups[g].lr;
  row["images_per_second"] = state.images / std::max(f.seconds, 1e-9);
  row["imgsz"] = f.imgsz;
  row["batch"] = static_cast<double>(state.batch);
  row["accumulate"] = static_cast<double>(f.accumulate);
  for (const auto& kv : f.schedule) row[kv.first] = kv.second;
  row["micro_batch"] = static_cast<double>(state.micro_batch > 0 ? std::min(state.micro_batch, state.batch) : state.batch);
  row["oom_retries"] = static_cast<double>(state.oom_retries);
  if (profile) {
    const auto means = profile->take_epoch_means();
    for (const auto& kv : means) row[kv.first] = kv.second;
    if (!means.empty()) YF_LOG_INFO("epoch " << f.epoch + 1 << " " << StepProfile::summary(means));
  }
  return row;
}

void EpochReport::add_validation(ResultsRow& row, const ValidationResult& v) {
  for (const auto& [column, value] : v.evaluation.columns) row[column] = value;
  row["fitness"] = v.evaluation.fitness;
  for (const auto& [name, value] : v.losses) row["val/" + name + "_loss"] = value;
}

void EpochReport::add_memory(ResultsRow& row, const torch::Device& device) {
  if (const auto mem = take_cuda_memory_stats(device)) {
    row["gpu_mem_GiB"] = mem->peak_allocated_gib;
    row["gpu_reserved_GiB"] = mem->reserved_gib;
    row["gpu_peak_reserved_GiB"] = mem->peak_reserved_gib;
    row["gpu_fragmentation_GiB"] = mem->fragmentation_gib;
    row["gpu_num_ooms"] = mem->num_ooms;
  }
}

void EpochReport::write(const ResultsRow& row) {
  csv_.add_row(row);
  csv_.save();
  if (plots_) plot_results(csv_, run_dir_ + "/results.png");
}

std::string EpochReport::summary(double total_seconds, const ShownValidation* v) const {
  // Only the files this run left behind: an interrupted first epoch has no results yet.
  std::vector<std::string> files;
  for (const char* f : {"results.csv", "results.png", "confusion_matrix.png", "BoxPR_curve.png", "weights/last.pt",
                        "weights/best.pt"}) {
    // Without plots a plot in the folder is an earlier run's (--exist-ok), not this one's.
    if (!plots_ && std::string(f).find(".png") != std::string::npos) continue;
    if (std::filesystem::exists(run_dir_ + "/" + f)) files.emplace_back(f);
  }
  const std::size_t epochs = csv_.rows().size();
  std::ostringstream os;
  os << "trained " << epochs << " epoch" << (epochs == 1 ? "" : "s") << " in " << format_duration(total_seconds)
     << "; results in " << run_dir_;
  for (std::size_t i = 0; i < files.size(); ++i) os << (i == 0 ? " (" : ", ") << files[i];
  os << (files.empty() ? "\n" : ")\n");
  if (v) {
    // Ultralytics' table after the final validation: all, then each class with labels.
    os << "final validation: " << metrics_line(v->evaluation, v->table, false) << "\n"
       << metrics_table(v->evaluation, v->table, v->names);
  }
  return os.str();
}

std::string epoch_line(int epoch, int epochs, double seconds, const ResultsRow& row,
                       const std::vector<std::string>& loss_names, const ShownValidation* v,
                       double validation_seconds, double results_seconds, double checkpoint_seconds) {
  std::ostringstream os;
  os << "epoch " << epoch + 1 << "/" << epochs << " done in " << format_duration(seconds) << ":";
  for (const auto& name : loss_names) os << " " << name << " " << row.at("train/" + name + "_loss");
  os << (v ? ", " + metrics_line(v->evaluation, v->table, true) : std::string())
     << "; then " << (validation_seconds >= 0 ? "validation " + format_fixed(validation_seconds, 2) + " s, " : "")
     << "results " << format_fixed(results_seconds, 2) << " s, checkpoints " << format_fixed(checkpoint_seconds, 2)
     << " s";
  return os.str();
}

}  // namespace yoloflow::core
