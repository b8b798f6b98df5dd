// yoloflow: train and run YOLO11 detectors. `yoloflow --help` lists the commands.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/cli.h"
#include "log/logging.h"
#include "yoloflow/error.h"
#include "yoloflow/version.h"

namespace yoloflow::cli {

core::PluginManager& CliContext::plugins() {
  if (!manager_) {
    manager_ = std::make_unique<core::PluginManager>();
    for (const auto& p : plugin_paths) manager_->add_search_dir(p);
    manager_->load_all();
  }
  return *manager_;
}

}  // namespace yoloflow::cli

int main(int argc, char** argv) {
  using namespace yoloflow;
  cli::CliContext ctx;
  cli::Action selected;

  CLI::App app{"yoloflow " YOLOFLOW_VERSION_STRING
               ": train and run YOLO11 detectors with LibTorch, as a host plus plugins.\n"
               "Pipelines are JSON files (docs/pipeline-format.md); `yoloflow COMMAND --help` "
               "explains each command."};
  app.set_version_flag("--version", YOLOFLOW_VERSION_STRING);
  app.add_option("--plugin-path", ctx.plugin_paths,
                 "Also load plugins from this folder (repeatable; $YOLOFLOW_PLUGIN_PATH too)");
  app.add_option("--log-level", ctx.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"}));
  app.require_subcommand(1);

  cli::add_plugins_command(app, ctx, selected);
  cli::add_describe_command(app, ctx, selected);
  cli::add_validate_command(app, ctx, selected);
  cli::add_run_command(app, ctx, selected);
  cli::add_train_command(app, ctx, selected);
  cli::add_info_command(app, ctx, selected);
  cli::add_weights_command(app, ctx, selected);
  cli::add_preview_command(app, ctx, selected);
  cli::add_val_command(app, ctx, selected);
  cli::add_predict_command(app, ctx, selected);
  cli::add_sweep_command(app, ctx, selected);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // Help and version are successes; anything else is a usage error.
    return rc == 0 ? kExitOk : kExitInvalid;
  }

  LogLevel level = LogLevel::Info;
  core::parse_log_level(ctx.log_level, level);
  core::init_logging(level);

  try {
    return selected ? selected() : kExitInvalid;
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return kExitFailure;
  }
}
