// `yoloflow sweep SWEEP.json`: batch experiments over a base pipeline (docs/sweeps.md). Each
// run is a `yoloflow train` child process, so a crashing run never stops the sweep; rerunning
// the command skips finished runs and resumes interrupted ones.
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "runtime/pipeline/device_word.h"
#include "runtime/sweep/same_runs.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/sweep/slurm_script.h"
#include "runtime/sweep/sweep_plan.h"
#include "runtime/sweep/sweep_runner.h"
#include "runtime/sweep/sweep_summary.h"
#include "runtime/sweep/run_state.h"
#include "runtime/util/atomic_file.h"
#include "runtime/words/pipeline_loading.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {
namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  std::string file, out, devices, emit, out_script;
  int jobs = 1;
  bool retry_failed = false, dry_run = false, summary_only = false;
};

// "0,1" or "cuda:0,cuda:1" -> {"cuda:0", "cuda:1"}.
std::vector<std::string> parse_devices(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    // Read as every device is (runtime/pipeline/device_word.h); a sweep's devices are GPUs by index.
    std::string device;
    if (!core::read_device_word(cur, device) || device.rfind("cuda:", 0) != 0) {
      throw InvalidInput("--devices: '" + cur + "' is not a CUDA device; give indices like 0,1 or cuda:0,cuda:1");
    }
    out.push_back(device);
    cur.clear();
  };
  for (char c : list) {
    if (c == ',') flush();
    else if (c != ' ') cur += c;
  }
  flush();
  if (out.empty()) throw InvalidInput("--devices: empty list; give indices like 0,1");
  return out;
}

std::string continue_command(const SweepArgs& a) {
  std::string s = "yoloflow sweep " + a.file;
  if (!a.out.empty()) s += " --out " + a.out;
  if (!a.devices.empty()) s += " --devices " + a.devices;
  if (a.jobs != 1) s += " --jobs " + std::to_string(a.jobs);
  if (a.retry_failed) s += " --retry-failed";
  return s;
}

int run_sweep_command(CliContext& ctx, const SweepArgs& a) {
  // The devices first: a device that is none is refused before the sweep file is read.
  const auto devices = a.devices.empty() ? std::vector<std::string>{} : parse_devices(a.devices);
  core::SweepPlan plan = core::load_sweep_plan(a.file);
  const std::string out_dir = a.out.empty() ? (fs::path("runs") / "sweep" / plan.name).string() : a.out;
  if (a.jobs < 1) throw InvalidInput("--jobs must be at least 1");

  if (a.summary_only) {
    const auto rows = core::write_summary(plan, out_dir);
    std::cout << core::summary_markdown(plan.name, rows) << "written: " << out_dir << "/summary.csv, " << out_dir
              << "/summary.md" << std::endl;
    return kExitOk;
  }
  if (!a.emit.empty()) {
    if (a.emit != "slurm") throw InvalidInput("--emit: '" + a.emit + "' is not supported; use --emit slurm");
    plan.base = fs::absolute(plan.base).lexically_normal().string();
    core::SlurmOptions so;
    so.exe = fs::read_symlink("/proc/self/exe").string();
    so.out_dir = fs::absolute(out_dir).lexically_normal().string();
    so.sweep_file = fs::absolute(a.file).lexically_normal().string();
    const std::string script = a.out_script.empty() ? out_dir + "/" + plan.name + ".sbatch" : a.out_script;
    if (const auto parent = fs::path(script).parent_path(); !parent.empty()) fs::create_directories(parent);
    fs::create_directories(so.out_dir);  // Slurm does not create the folder of --output
    core::write_file_atomic(script, core::slurm_array_script(plan, so));
    std::cout << "wrote " << script << ": a Slurm job array of " << plan.runs.size()
              << " runs; submit it with: sbatch " << script << std::endl;
    return kExitOk;
  }

  auto& registry = ctx.plugins().registry();
  core::RunValidator validate = [&](const core::SweepRun& run) -> std::string {
    const auto loaded = core::load_pipeline(plan.base, run.overrides, registry);
    return loaded.ok() ? std::string() : core::format_diagnostics(loaded.diagnostics, plan.base);
  };
  if (a.dry_run) {
    std::cout << "sweep '" << plan.name << "' over " << plan.base << ": " << plan.runs.size() << " run"
              << (plan.runs.size() == 1 ? "" : "s") << " in " << out_dir << std::endl;
    int invalid = 0;
    for (std::size_t i = 0; i < plan.runs.size(); ++i) {
      const auto& run = plan.runs[i];
      const auto state = core::read_run_state((fs::path(out_dir) / run.folder).string());
      std::cout << "  " << i << "  " << run.name << "  [" << state.status() << "]  " << out_dir << "/" << run.folder
                << std::endl;
      for (const auto& o : run.overrides) std::cout << "       " << o << std::endl;
      const std::string problems = validate(run);
      if (!problems.empty()) {
        ++invalid;
        std::cout << "     invalid:\n" << problems;
      }
    }
    std::cout << "dry run: nothing was started" << (invalid ? "; " + std::to_string(invalid) + " invalid" : "")
              << std::endl;
    return kExitOk;
  }

  // A grid key that changes nothing would train the same run several times: refused first.
  if (const std::string same = core::same_runs(plan, registry); !same.empty()) {
    std::cerr << same;
    throw InvalidInput(plan.file + ": a grid key changes nothing in the runs' pipelines; nothing was started");
  }
  core::SweepOptions options;
  options.exe = fs::read_symlink("/proc/self/exe").string();
  for (const auto& p : ctx.plugin_paths) options.global_args.insert(options.global_args.end(), {"--plugin-path", p});
  options.global_args.insert(options.global_args.end(), {"--log-level", ctx.log_level});
  options.devices = devices;
  options.jobs = a.jobs;
  options.retry_failed = a.retry_failed;
  options.out_dir = out_dir;
  const auto outcome = core::run_sweep(plan, options, validate, std::cout);
  std::cout << "sweep '" << plan.name << "': " << outcome.done << " done, " << outcome.failed << " failed, "
            << outcome.interrupted << " interrupted, " << outcome.pending << " not started; summary: " << out_dir
            << "/summary.md" << std::endl;
  if (outcome.stopped) {
    std::cout << "sweep stopped; continue with: " << continue_command(a) << std::endl;
    return kExitOk;
  }
  return outcome.failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace

void add_sweep_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("sweep", "Train a batch of runs over a base pipeline (grid or list; docs/sweeps.md)");
  auto a = std::make_shared<SweepArgs>();
  cmd->add_option("sweep", a->file, "Sweep JSON file")->required();
  cmd->add_option("--out", a->out, "Sweep folder (default runs/sweep/<sweep name>)");
  cmd->add_option("--devices", a->devices, "One concurrent run per CUDA device: 0,1 or cuda:0,cuda:1");
  cmd->add_option("--jobs", a->jobs, "Concurrent runs without --devices (default 1)");
  cmd->add_flag("--retry-failed", a->retry_failed, "Run failed runs again (skipped otherwise)");
  cmd->add_flag("--dry-run", a->dry_run, "List the runs, their overrides and state; start nothing");
  cmd->add_flag("--summary-only", a->summary_only, "Only collect the run folders into summary.csv/.md");
  cmd->add_option("--emit", a->emit, "Write a job script instead of running: slurm");
  cmd->add_option("--out-script", a->out_script, "Where --emit writes (default <out>/<name>.sbatch)");
  cmd->callback([&ctx, &selected, a] { selected = [&ctx, a]() -> int { return run_sweep_command(ctx, *a); }; });
}

}  // namespace yoloflow::cli
