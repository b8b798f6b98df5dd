// `yoloflow run PIPELINE [path=value ...]`: validates the pipeline, then runs its flow graph
// for every epoch, printing progress and a summary. SIGINT/SIGTERM stop it gracefully: a
// line says so at once, the batch in the sink finishes and no other starts, a training run
// saves its state and exits 0 with the resume command, any other run exits 130. A second
// signal stops at once (exit 130) without saving: checkpoints are written atomically, so the
// last complete one stays.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/cli.h"
#include "cli/distributed_run.h"
#include "graph/graph_runner.h"
#include "pipeline/json_text.h"
#include "pipeline/pipeline.h"
#include "run/run_folder.h"
#include "train/auto_batch_profiler.h"
#include "train/checkpoint.h"
#include "util/atomic_file.h"
#include "util/file_checks.h"
#include "util/stop_signal_scope.h"
#include "util/text_format.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {
namespace {

namespace fs = std::filesystem;

std::atomic<bool> g_stop_requested{false};
std::atomic<int> g_stop_signal{0};
// The checkpoint a training run keeps, for the second interrupt's message ("" outside training).
char g_last_checkpoint[4096] = {0};

extern "C" void on_stop_signal(int sig) {
  // Async-signal-safe: atomics, access(2) and write(2) only.
  if (g_stop_requested.exchange(true)) {
    // The second: give up now. Checkpoints are written atomically, so a save cut short
    // leaves the previous last.pt whole.
    static const char kKept[] = "\nsecond interrupt: stopping now without saving; weights/last.pt keeps its last complete save\n";
    static const char kNone[] = "\nsecond interrupt: stopping now without saving; no checkpoint was saved yet, so this run cannot be resumed\n";
    static const char kPlain[] = "\nsecond interrupt: stopping now\n";
    if (g_last_checkpoint[0] == 0) {
      (void)!write(STDERR_FILENO, kPlain, sizeof kPlain - 1);
    } else if (access(g_last_checkpoint, F_OK) == 0) {
      (void)!write(STDERR_FILENO, kKept, sizeof kKept - 1);
    } else {
      (void)!write(STDERR_FILENO, kNone, sizeof kNone - 1);
    }
    _exit(kExitInterrupted);
  }
  g_stop_signal.store(sig);
  static const char kSaving[] = "\ninterrupt: stopping after the current step and saving (interrupt again to stop at once)\n";
  static const char kStopping[] = "\ninterrupt: stopping after the current batch (interrupt again to stop at once)\n";
  if (g_last_checkpoint[0] != 0) {
    (void)!write(STDERR_FILENO, kSaving, sizeof kSaving - 1);
  } else {
    (void)!write(STDERR_FILENO, kStopping, sizeof kStopping - 1);
  }
}

// The plugin folders and libraries a pipeline file records (its "plugin_path"), absolute, read
// before any plugin is loaded: a resumed run loads what it trained with. Nothing when the file
// cannot be read or has none (loading the pipeline reports what is wrong with it).
std::vector<std::string> recorded_plugin_paths(const std::string& file) {
  std::vector<std::string> out;
  if (file.empty() || !core::not_a_regular_file(file).empty()) return out;
  std::string text;
  try {
    text = core::read_regular_file(file, core::kMaxPipelineBytes, "pipeline");
  } catch (const Error&) {
    return out;
  }
  json doc;
  Diagnostics ignored;
  if (!core::parse_json_text(text, doc, ignored) || !doc.is_object() || !doc.contains("plugin_path")) return out;
  const json& list = doc["plugin_path"];
  if (!list.is_array()) return out;
  const fs::path dir = fs::absolute(file).parent_path();
  for (const auto& e : list) {
    if (!e.is_string() || e.get<std::string>().empty()) continue;
    const fs::path p(e.get<std::string>());
    out.push_back((p.is_absolute() ? p : dir / p).lexically_normal().string());
  }
  return out;
}

void print_summary(core::GraphRunner& runner, std::size_t total_samples, double total_seconds) {
  std::cout << "done: " << total_samples << " images in " << core::format_fixed(total_seconds, 2) << " s ("
            << core::format_fixed(total_seconds > 0 ? total_samples / total_seconds : 0.0, 1) << " images/s)"
            << std::endl;
  std::map<std::size_t, std::string> skipped;  // source index -> reason (all epochs)
  for (const auto& e : runner.history()) {
    for (const auto& s : e.skipped) skipped.emplace(s.index, s.reason);
  }
  if (!skipped.empty()) {
    std::cout << "skipped " << skipped.size() << " sample" << (skipped.size() == 1 ? "" : "s")
              << " that failed to load:" << std::endl;
    std::size_t shown = 0;
    for (const auto& [index, reason] : skipped) {
      if (++shown > 20) break;
      std::cout << "  sample " << index << ": " << reason << std::endl;
    }
    if (skipped.size() > 20) std::cout << "  ... and " << skipped.size() - 20 << " more" << std::endl;
  }
  // The same problem met again in a later epoch is one issue.
  std::vector<DataIssue> issues;
  for (const auto& issue : runner.source().issues()) {
    const bool seen = std::any_of(issues.begin(), issues.end(), [&](const DataIssue& i) {
      return i.path == issue.path && i.problem == issue.problem;
    });
    if (!seen) issues.push_back(issue);
  }
  if (!issues.empty()) {
    std::cout << "data issues reported by the source (" << issues.size() << "):" << std::endl;
    const std::size_t shown = std::min<std::size_t>(issues.size(), 20);
    for (std::size_t i = 0; i < shown; ++i) {
      std::cout << "  " << issues[i].path << ": " << issues[i].problem << " -> "
                << issues[i].action << std::endl;
    }
    if (shown < issues.size()) std::cout << "  ... and " << issues.size() - shown << " more" << std::endl;
  }
  const std::string sink_summary = runner.sink().summary();
  if (!sink_summary.empty()) std::cout << sink_summary << (sink_summary.back() == '\n' ? "" : "\n");
  std::cout.flush();
}

}  // namespace

int run_pipeline(CliContext& ctx, const RunRequest& request_in) {
  RunRequest request = request_in;
  // Ultralytics' exist_ok=true as a word among the overrides: the --exist-ok flag.
  for (auto it = request.overrides.begin(); it != request.overrides.end();) {
    if (it->rfind("exist_ok=", 0) == 0) {
      const std::string value = it->substr(std::string("exist_ok=").size());
      request.exist_ok = value == "true" || value == "True" || value == "1";
      it = request.overrides.erase(it);
    } else {
      ++it;
    }
  }
  // The plugin folders the pipeline file records (a run folder's pipeline.json records those
  // its run loaded), before the first plugin is loaded.
  for (const auto& path : recorded_plugin_paths(request.file)) {
    if (std::find(ctx.plugin_paths.begin(), ctx.plugin_paths.end(), path) == ctx.plugin_paths.end()) {
      ctx.plugin_paths.push_back(path);
    }
  }
  auto& registry = ctx.plugins().registry();
  auto loaded = request.file.empty()
                    ? core::parse_pipeline(request.builtin, fs::current_path().string(), request.overrides, registry,
                                           "the built-in training pipeline")
                    : core::load_pipeline(request.file, request.overrides, registry);
  if (!loaded.ok()) {
    const std::string source = request.file.empty() ? "the built-in training pipeline" : request.file;
    std::cerr << core::format_diagnostics(loaded.diagnostics, source);
    std::cerr << source << ": " << loaded.diagnostics.size()
              << (loaded.diagnostics.size() == 1 ? " problem" : " problems") << "; nothing was run"
              << std::endl;
    return kExitInvalid;
  }
  core::Pipeline& p = *loaded.pipeline;

  // A training sink saves resumable state when stopped; other sinks just stop.
  const bool resumable = p.stage(p.sink).plugin == "train";
  if (request.training && !resumable) {
    std::cerr << request.file << ": stages." << p.sink << ".plugin: `yoloflow train` needs the 'train' sink, this "
              << "pipeline ends in '" << p.stage(p.sink).plugin << "' (use `yoloflow run`)" << std::endl;
    return kExitInvalid;
  }
  DistributedRun dist(ctx.log_level);  // torchrun / srun: this process's rank
  // Only sinks that write outputs get a numbered folder; a throughput run leaves none.
  // Rank 0 alone writes outputs (data parallel).
  const std::string& sink_plugin = p.stage(p.sink).plugin;
  const bool writes_outputs = resumable || sink_plugin == "validate" || sink_plugin == "predict";

  // Nothing below writes into a run folder until every check has passed and the graph is
  // built: a refused start, resume or --exist-ok leaves the folder as it was.
  // The run folder: created or claimed, checked writable and locked (one process per run),
  // before a resumed run's checkpoint is read: another process may be writing it.
  core::RunFolder folder;
  if (dist.is_main()) {
    if (!request.run_dir.empty()) {
      const std::string earlier = request.resume_checkpoint.empty() && !request.exist_ok
                                      ? core::RunFolder::holds_a_run(request.run_dir)
                                      : std::string();
      if (!earlier.empty()) {
        std::cerr << "error: --run-dir " << request.run_dir << " already holds a run (" << earlier
                  << "); its files would be overwritten. Choose another folder, leave --run-dir out for a new "
                  << "numbered one, or pass --exist-ok to reuse it" << std::endl;
        return kExitInvalid;
      }
      folder = core::RunFolder::open(request.run_dir);
    } else if (writes_outputs) {
      folder = core::RunFolder::claim_numbered(p.name);
    }
  }
  int first_epoch = 0;
  std::uint64_t first_sequence = 0;
  if (!request.resume_checkpoint.empty()) {
    const auto ck = core::load_checkpoint(request.resume_checkpoint);
    first_epoch = ck.epoch;
    first_sequence = ck.next_sequence;
    if (first_epoch >= p.epochs) {
      std::cout << request.resume_checkpoint << " finished all " << p.epochs
                << " epochs; to train longer, pass a larger count: epochs=" << p.epochs + 10 << std::endl;
      return kExitOk;
    }
    auto& sink = const_cast<core::StageSpec&>(p.stage(p.sink));
    sink.params["resume"] = request.resume_checkpoint;
  }
  const std::string run_dir = dist.is_main() ? folder.path() : request.run_dir;
  // Records the number chosen in the pipeline.json written below.
  core::resolve_auto_batch(p, registry, request.device);
  // Every plugin folder this run loads from besides the default ones, absolute: what
  // `train --resume` loads again.
  json plugin_paths = json::array();
  std::vector<std::string> extra = ctx.plugin_paths;
  if (const char* env = std::getenv("YOLOFLOW_PLUGIN_PATH")) {
    std::stringstream entries(env);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (!entry.empty()) extra.push_back(entry);
    }
  }
  for (const auto& path : extra) {
    const std::string abs = fs::absolute(path).lexically_normal().string();
    if (std::find(plugin_paths.begin(), plugin_paths.end(), abs) == plugin_paths.end()) plugin_paths.push_back(abs);
  }
  p.document["plugin_path"] = plugin_paths;
  if (request.print_resolved) std::cout << p.document.dump(2) << std::endl;

  g_stop_requested.store(false);
  g_last_checkpoint[0] = 0;
  if (resumable && !run_dir.empty()) {
    const std::string last = run_dir + "/weights/last.pt";
    if (last.size() < sizeof g_last_checkpoint) std::copy(last.begin(), last.end() + 1, g_last_checkpoint);
  }
  core::StopSignalScope signals(on_stop_signal, /*once=*/false);
  core::RunnerOptions options;
  options.run_dir = run_dir;
  options.device = request.device;
  options.stop_flag = &g_stop_requested;
  options.first_epoch = first_epoch;
  // Builds and configures every stage (the data read, the model built, a resumed checkpoint
  // loaded); a failure leaves through here, and a folder this command made is removed again.
  auto runner_owner = std::make_unique<core::GraphRunner>(p, registry, options);
  core::GraphRunner& runner = *runner_owner;
  if (!folder.empty()) {
    folder.commit();
    std::cout << "run folder: " << run_dir << std::endl;
    // The resolved pipeline (overrides applied, defaults filled, paths absolute): what
    // `train --resume` reads back.
    core::write_file_atomic(run_dir + "/pipeline.json", p.document.dump(2) + "\n");
    if (const int stale = folder.remove_stale_temporaries(); stale > 0) {
      std::cout << "removed " << stale << " temporary file" << (stale == 1 ? "" : "s")
                << " that an interrupted write left in " << run_dir << std::endl;
    }
  }

  RunEvent run_event;
  run_event.run_dir = run_dir;
  run_event.pipeline_name = p.name;
  run_event.epochs = p.epochs;
  run_event.device = request.device.empty() ? p.device : request.device;
  for (auto& m : runner.monitors()) m->on_run_start(run_event);

  std::cout << (request.resume_checkpoint.empty() ? "running '" : "resuming '") << p.name << "': " << p.epochs
            << " epoch" << (p.epochs == 1 ? "" : "s") << ", " << runner.source().size() << " samples, "
            << runner.workers() << " worker" << (runner.workers() == 1 ? "" : "s")
            << (p.ordered ? ", ordered" : "") << std::endl;
  std::size_t total = 0;
  double seconds = 0;
  int epochs_done = 0;
  bool interrupted = false;
  for (int epoch = first_epoch; epoch < p.epochs && !runner.stop_requested(); ++epoch) {
    const auto s = runner.run_epoch(epoch, epoch == first_epoch ? first_sequence : 0);
    total += s.samples;
    seconds += s.seconds;
    std::cout << "epoch " << epoch + 1 << "/" << p.epochs << ": " << s.samples << " images in " << s.batches
              << " batches, " << core::format_fixed(s.seconds, 2) << " s, "
              << core::format_fixed(s.images_per_second, 1) << " images/s, " << s.skipped.size() << " skipped, peak " << s.peak_in_flight << "/"
              << s.max_in_flight << " samples in flight; first batch after " << core::format_fixed(s.first_batch_seconds, 2)
              << " s, end of epoch " << core::format_fixed(s.end_seconds, 2) << " s" << (s.interrupted ? " (interrupted)" : "")
              << std::endl;
    constexpr std::size_t kShownSkips = 20;
    for (std::size_t i = 0; i < s.skipped.size() && i < kShownSkips; ++i) {
      std::cout << "  skipped sample " << s.skipped[i].index << ": " << s.skipped[i].reason << std::endl;
    }
    if (s.skipped.size() > kShownSkips) std::cout << "  ... and " << s.skipped.size() - kShownSkips << " more" << std::endl;
    if (s.samples == 0 && !s.skipped.empty() && !s.interrupted) {
      // Every sample failed the same way, as a 100000-pixel imgsz does: an epoch of nothing is
      // not a success.
      throw Error("epoch " + std::to_string(epoch + 1) + ": none of its " + std::to_string(s.skipped.size()) +
                  " samples could be loaded (sample " + std::to_string(s.skipped.front().index) + ": " +
                  s.skipped.front().reason + "); nothing was trained");
    }
    EpochEvent ev;
    ev.epoch = epoch;
    ev.epochs = p.epochs;
    ev.seconds = s.seconds;
    ev.values["images_per_second"] = s.images_per_second;
    ev.values["samples"] = static_cast<double>(s.samples);
    ev.values["skipped"] = static_cast<double>(s.skipped.size());
    ev.values["time/first_batch"] = s.first_batch_seconds;
    ev.values["time/end_of_epoch"] = s.end_seconds;
    for (const auto& kv : runner.take_epoch_values()) ev.values[kv.first] = kv.second;
    for (auto& m : runner.monitors()) {
      m->on_epoch(ev);
      const std::string line = m->epoch_summary();
      if (!line.empty()) std::cout << "  " << line << std::endl;
    }
    if (s.interrupted) {
      interrupted = true;
      break;
    }
    ++epochs_done;
  }
  interrupted = interrupted || runner.stop_requested();
  // A signal may reach one rank and leave the others in mid-epoch collectives: they must be
  // told. A stop the sink asked for (early stop, max_steps) is taken by every rank at the same
  // point (rank 0 broadcasts its early-stop verdict), so it ends the group cleanly.
  const bool agreed_stop = !runner.stop_reason().empty();
  dist.end(!interrupted || agreed_stop, "interrupted by a signal");
  for (auto& m : runner.monitors()) m->on_run_end(run_event);
  print_summary(runner, total, seconds);
  if (interrupted) {
    const std::string reason = runner.stop_reason();
    const int sig = g_stop_signal.load();
    if (!reason.empty()) std::cout << "stopped: " << reason;
    else std::cout << "interrupted by " << (sig == SIGTERM ? "SIGTERM" : "SIGINT");
    std::cout << " after " << epochs_done << " complete epoch" << (epochs_done == 1 ? "" : "s") << " of "
              << p.epochs << std::endl;
    if (resumable) {
      std::cout << "state saved; continue with: yoloflow train --resume " << run_dir << std::endl;
      return kExitOk;
    }
    return reason.empty() ? kExitInterrupted : kExitOk;
  }
  return kExitOk;
}

void add_run_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("run", "Validate a pipeline and run its graph for every epoch");
  auto r = std::make_shared<RunRequest>();
  cmd->add_option("pipeline", r->file, "Pipeline JSON file")->required();
  cmd->add_option("overrides", r->overrides,
                  "Overrides path=value, e.g. epochs=3 stages.letterbox.params.auto=true");
  cmd->add_flag("--print-resolved", r->print_resolved,
                "Print the resolved pipeline (defaults filled in) before running");
  cmd->add_option("--run-dir", r->run_dir, "Folder components may write outputs to; one holding a run is refused");
  cmd->add_flag("--exist-ok", r->exist_ok, "Write into a --run-dir that already holds a run (its files are replaced)");
  cmd->add_option("--device", r->device, "cpu, cuda, cuda:N (default: the pipeline's \"device\")");
  cmd->callback([&ctx, &selected, r] { selected = [&ctx, r]() -> int { return run_pipeline(ctx, *r); }; });
}

}  // namespace yoloflow::cli
