#pragma once
// The `yoloflow` command line: one file per subcommand, each adding itself to the app.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/plugin/plugin_manager.h"

namespace yoloflow::cli {

struct CliContext {
  std::vector<std::string> plugin_paths;  // --plugin-path, repeatable
  std::vector<std::string> host_plugin_paths;  // named by a program that runs commands in-process
  std::string log_level = "info";
  // Loads plugins once, on first use, from the default folders plus --plugin-path.
  core::PluginManager& plugins();

 private:
  std::unique_ptr<core::PluginManager> manager_;
};

// A subcommand's action; returns the process exit code (yoloflow::ExitCode).
using Action = std::function<int()>;

// What `run` and `train` execute (cmd_run.cpp).
struct RunRequest {
  std::string file;
  std::string builtin;            // a pipeline's text, used instead of `file` when that is empty
  std::vector<std::string> overrides;
  std::string run_dir, device;
  bool print_resolved = false;
  bool training = false;          // `train`: the pipeline must end in the train sink
  bool exist_ok = false;          // --exist-ok: a --run-dir holding a run may be written into
  std::string resume_checkpoint;  // continue from this checkpoint (epoch, data position)
  std::vector<std::string> words;  // train: the words as given (before model= and data= expand), for args.yaml
};
int run_pipeline(CliContext& ctx, const RunRequest& request);

// Each adds one subcommand; its callback stores the action to run in `selected`.
void add_plugins_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_describe_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_validate_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_run_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_train_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_info_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_weights_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_preview_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_predict_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_sweep_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_val_command(CLI::App& app, CliContext& ctx, Action& selected);
void add_export_command(CLI::App& app, CliContext& ctx, Action& selected);

}  // namespace yoloflow::cli
