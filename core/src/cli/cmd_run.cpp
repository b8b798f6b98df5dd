// `yoloflow run PIPELINE [path=value ...]`: validates the pipeline, makes its run folder and the
// driver of its run (runtime/run/run_driver.h: the trainer, or the epoch loop of a plain sink), runs it
// and prints its summary. The command owns no loop. SIGINT/SIGTERM stop it gracefully: a
// line says so at once, the batch in the sink finishes and no other starts, a training run
// saves its state and exits 0 with the resume command, any other run exits 130. A second
// signal stops at once (exit 130) without saving: checkpoints are written atomically, so the
// last complete one stays.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "cli/interrupt.h"
#include "cli/cli.h"
#include "cli/distributed_run.h"
#include "cli/pipeline_plugins.h"
#include "cli/command_observer.h"
#include "runtime/graph/graph_runner.h"
#include "runtime/run/epoch_loop.h"
#include "runtime/run/run_driver.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/run/run_folder.h"
#include "runtime/util/atomic_file.h"
#include "runtime/util/file_checks.h"
#include "runtime/util/path_words.h"
#include "runtime/util/text_format.h"
#include "runtime/words/pipeline_loading.h"
#include "runtime/words/run_args_yaml.h"
#include "runtime/words/run_folder_words.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/printable.h"

namespace yoloflow::cli {
namespace {

namespace fs = std::filesystem;

void print_summary(core::GraphRunner& runner, const std::string& run_summary, const core::RunOutcome& outcome) {
  std::cout << "done: " << outcome.samples << " images in " << core::format_fixed(outcome.seconds, 2) << " s ("
            << core::format_fixed(outcome.seconds > 0 ? outcome.samples / outcome.seconds : 0.0, 1) << " images/s)"
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
      std::cout << "  sample " << index << ": " << printable(reason) << std::endl;
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
      std::cout << "  " << printable(issues[i].path) << ": " << printable(issues[i].problem) << " -> "
                << printable(issues[i].action) << std::endl;
    }
    if (shown < issues.size()) std::cout << "  ... and " << issues.size() - shown << " more" << std::endl;
  }
  // The summary's lines are its own; what is in them (class names, paths) is shown escaped.
  if (!run_summary.empty()) std::cout << printable_lines(run_summary) << (run_summary.back() == '\n' ? "" : "\n");
  std::cout.flush();
}

// A resumed run given overrides: what they change in the run's pipeline.json, in one line (the
// pipeline written back holds the new values), so that the log says where the run changed course.
void log_resume_changes(const std::string& file, const json& now, const core::Registry& registry) {
  const auto before = core::load_pipeline(file, {}, registry);
  if (!before.ok()) return;
  std::string changes;
  const json ops = json::diff(before.pipeline->document, now);
  // A component whose plugin changed: its parameters went with the old one, not each a change.
  auto of_replaced_plugin = [&](const std::string& path) {
    const auto at = path.rfind("/params/");
    return at != std::string::npos && std::any_of(ops.begin(), ops.end(), [&](const json& o) {
             return o.value("path", std::string()) == path.substr(0, at) + "/plugin";
           });
  };
  for (const auto& op : ops) {
    const std::string path = op.value("path", std::string());
    if (path.rfind("/plugin_path", 0) == 0 || of_replaced_plugin(path)) continue;
    const json::json_pointer pointer(path);
    std::string dotted = path.substr(1);
    std::replace(dotted.begin(), dotted.end(), '/', '.');
    const std::string was = before.pipeline->document.contains(pointer) ? before.pipeline->document.at(pointer).dump() : "-";
    const std::string is = now.contains(pointer) ? now.at(pointer).dump() : "-";
    changes += (changes.empty() ? "" : ", ") + dotted + " " + was + " -> " + is;
  }
  if (!changes.empty()) YF_LOG_INFO("resume: the overrides change " << printable(changes));
}

}  // namespace

int run_pipeline(CliContext& ctx, const RunRequest& request_in) {
  RunRequest request = request_in;
  // Ultralytics' project=, name= and exist_ok= (runtime/words/run_folder_words.h): the run folder.
  const core::RunFolderWords folder_words = core::take_run_folder_words(request.overrides);
  if (folder_words.exist_ok_given) request.exist_ok = folder_words.exist_ok;
  if (const std::string dir = core::ultralytics_run_dir(folder_words, request.training ? "train" : "run"); !dir.empty()) {
    if (!request.run_dir.empty()) {
      throw InvalidInput("--run-dir " + request.run_dir + " and project=/name= both name the run folder; give one");
    }
    request.run_dir = dir;
  }
  // A start into this folder killed before its first step is undone before its files are read.
  if (!request.run_dir.empty()) core::RunFolder::put_back_interrupted_start(request.run_dir);
  // The plugin folders the pipeline file records (a run folder's pipeline.json records those
  // its run loaded), before the first plugin is loaded.
  add_recorded_plugin_paths(ctx, request.file);
  auto& registry = ctx.plugins().registry();
  auto loaded = request.file.empty()
                    ? core::parse_pipeline(request.builtin, fs::current_path().string(), request.overrides, registry,
                                           "the built-in training pipeline")
                    : core::load_pipeline(request.file, request.overrides, registry);
  if (!loaded.ok()) {
    const std::string source = request.file.empty() ? "the built-in training pipeline" : request.file;
    std::cerr << printable_lines(core::format_diagnostics(loaded.diagnostics, source));
    std::cerr << printable(source) << ": " << loaded.diagnostics.size()
              << (loaded.diagnostics.size() == 1 ? " problem" : " problems") << "; nothing was run"
              << std::endl;
    return kExitInvalid;
  }
  core::Pipeline& p = *loaded.pipeline;
  if (!request.resume_checkpoint.empty() && !request.overrides.empty()) log_resume_changes(request.file, p.document, registry);

  // A training sink saves resumable state when stopped; other sinks just stop.
  // A pipeline that ends in a stage with its own loop (the trainer) runs under it; its run
  // saves state it continues from.
  const core::RegisteredComponent& last_stage = *p.stage(p.sink).component;
  if (request.training && last_stage.driver == nullptr) {
    std::cerr << printable(request.file) << ": stages." << p.sink << ".plugin: `yoloflow train` needs a pipeline that ends in the "
              << "train stage, this one ends in '" << p.stage(p.sink).plugin << "' (use `yoloflow run`)" << std::endl;
    return kExitInvalid;
  }
  DistributedRun dist(ctx.log_level);  // torchrun / srun: this process's rank
  // Only runs that write outputs get a numbered folder; a throughput run leaves none.
  // Rank 0 alone writes outputs (data parallel).
  const bool writes_outputs = last_stage.writes_run_folder;

  // Nothing below writes into a run folder until every check has passed and the run is
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
        std::cerr << "error: --run-dir " << printable(request.run_dir) << " already holds a run (" << earlier
                  << "); its files would be overwritten. Choose another folder, leave --run-dir out for a new "
                  << "numbered one, or pass --exist-ok to reuse it" << std::endl;
        return kExitInvalid;
      }
      folder = core::RunFolder::open(request.run_dir);
    } else if (writes_outputs) {
      folder = core::RunFolder::claim_numbered(p.name);
    }
  }
  const std::string run_dir = dist.is_main() ? folder.path() : request.run_dir;
  // What the run's driver settles first (an auto batch): the pipeline.json written below records it.
  core::prepare_run_pipeline(p, registry, request.device);
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

  // A training run stops after its step and saves last.pt; a second signal stops at once and
  // says whether a last.pt is there to resume from.
  InterruptLines lines;
  if (last_stage.driver != nullptr && !run_dir.empty()) {
    lines.first = "interrupt: stopping after the current step and saving (interrupt again to stop at once)";
    lines.again = "interrupt: already stopping after the current step and saving";
    lines.second = "second interrupt: stopping now without saving; weights/last.pt keeps its last complete save";
    lines.kept_file = run_dir + "/weights/last.pt";
    lines.second_without_kept =
        "second interrupt: stopping now without saving; no checkpoint was saved yet, so this run cannot be resumed";
  } else {
    lines.first = "interrupt: stopping after the current batch (interrupt again to stop at once)";
    lines.again = "interrupt: already stopping after the current batch";
    lines.second = "second interrupt: stopping now";
  }
  InterruptScope interrupt(lines);
  core::RunOptions options;
  options.run_dir = run_dir;
  options.device = request.device;
  options.stop_flag = InterruptScope::flag();
  options.resume_checkpoint = request.resume_checkpoint;
  // From the first optimizer step on, the new run's files replace the earlier run's for good.
  options.on_first_step = [&folder] { folder.first_step_taken(); };
  // Builds everything (the data read, the model built, a resumed checkpoint loaded); a failure
  // leaves through here, and a folder this command made is removed again.
  if (request.training && request.resume_checkpoint.empty()) {
    // What this run is, before what its pipeline's recipe says of itself (before the driver is
    // made: its checkpoints keep the pipeline.json document).
    std::string command = "yoloflow train";
    if (!request.file.empty()) command += " " + request.file;
    for (const auto& w : request.words) command += " " + w;
    const std::string recipe = p.document.value("_doc", std::string());
    p.document["_doc"] = "This run: `" + command + "` (args.yaml holds its arguments under Ultralytics' keys)." +
                         (recipe.empty() ? std::string() : " The pipeline: " + recipe);
  }
  const auto driver = core::make_run_driver(p, registry, options);
  if (const std::string nothing = driver->nothing_to_run(); !nothing.empty()) {
    std::cout << nothing << std::endl;
    return kExitOk;
  }
  if (!folder.empty()) {
    // A folder holding an earlier run (--exist-ok, a resume) keeps that run's files until this
    // one takes its first step: a start that fails or is stopped before puts them back.
    folder.keep_earlier_run();
    folder.commit();
    std::cout << "run folder: " << printable(run_dir) << std::endl;
    if (CommandObserver* observer = command_observer()) observer->run_folder(run_dir);
    // The resolved pipeline (overrides applied, defaults filled, paths absolute): what
    // `train --resume` reads back.
    core::write_file_atomic(run_dir + "/pipeline.json", p.document.dump(2) + "\n");
    // A new training run's arguments as Ultralytics' args.yaml (a resume keeps the first's).
    if (request.training && request.resume_checkpoint.empty()) {
      core::write_file_atomic(run_dir + "/args.yaml", core::run_args_yaml(p.document, p.sink, request.words, run_dir));
    }
    if (const int stale = folder.remove_stale_temporaries(); stale > 0) {
      std::cout << "removed " << stale << " temporary file" << (stale == 1 ? "" : "s")
                << " that an interrupted write left in " << printable(run_dir) << std::endl;
    }
  }
  const core::RunOutcome outcome = driver->run(std::cout);
  // A run that ended, or stopped itself (max_steps, a time budget), ran as asked; one stopped
  // by a signal before its first step leaves the earlier run as it was.
  const bool stopped_by_signal = outcome.interrupted && outcome.stop_reason.empty();
  if (CommandObserver* observer = command_observer()) observer->run_ended(stopped_by_signal);
  if (!stopped_by_signal) folder.first_step_taken();
  if (stopped_by_signal && folder.restore_earlier_run()) {
    std::cout << "stopped before the first optimizer step: " << printable(run_dir)
              << " holds the earlier run as it was" << std::endl;
    return kExitInterrupted;
  }
  // A signal may reach one rank and leave the others in mid-epoch collectives: they must be
  // told. A stop the run asked for (early stop, max_steps) is taken by every rank at the same
  // point (rank 0 broadcasts its early-stop verdict), so it ends the group cleanly.
  dist.end(!outcome.interrupted || !outcome.stop_reason.empty(), "interrupted by a signal");
  print_summary(driver->graph(), driver->summary(), outcome);
  if (outcome.interrupted) {
    if (!outcome.stop_reason.empty()) std::cout << "stopped: " << outcome.stop_reason;
    else std::cout << "interrupted by " << InterruptScope::signal_name();
    std::cout << " after " << outcome.epochs_done << " complete epoch" << (outcome.epochs_done == 1 ? "" : "s") << " of "
              << (outcome.epochs > 0 ? outcome.epochs : p.epochs) << std::endl;
    if (driver->resumable()) {
      std::cout << "state saved; continue with: yoloflow train --resume " << printable(run_dir) << std::endl;
      return kExitOk;
    }
    return outcome.stop_reason.empty() ? kExitInterrupted : kExitOk;
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
  cmd->add_option("--run-dir", r->run_dir, "Folder components may write outputs to; one holding a run, or holding runs (runs/train), is refused");
  cmd->add_flag("--exist-ok", r->exist_ok, "Write into a --run-dir that already holds a run (its files are replaced)");
  cmd->add_option("--device", r->device, "cpu, cuda, cuda:N (default: the pipeline's \"device\")");
  cmd->callback([&ctx, &selected, r, cmd] {
    selected = [&ctx, r, cmd]() -> int {
      // `--run-dir ''` names no folder; it is not the same as leaving --run-dir out.
      if (cmd->count("--run-dir") > 0) core::check_path_word("--run-dir", r->run_dir);
      return run_pipeline(ctx, *r);
    };
  });
}

}  // namespace yoloflow::cli
