// yoloflow: train and run YOLO11 detectors. `yoloflow --help` lists the commands.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "cli/verb_words.h"
#include "log/logging.h"
#include "training/device/device_choice.h"
#include "training/builtin_components.h"
#include "yoloflow/error.h"
#include "yoloflow/params.h"
#include "yoloflow/printable.h"
#include "yoloflow/version.h"

namespace yoloflow::cli {

core::PluginManager& CliContext::plugins() {
  if (!manager_) {
    manager_ = std::make_unique<core::PluginManager>();
    // --plugin-path takes a folder of plugins or one plugin library.
    std::vector<std::string> files;
    for (const auto& p : plugin_paths) {
      std::error_code ec;
      if (std::filesystem::is_regular_file(p, ec)) {
        files.push_back(p);
      } else {
        manager_->add_search_dir(p);
      }
    }
    manager_->load_all();
    for (const auto& f : files) manager_->load(f);
  }
  return *manager_;
}

// The first line of an exception's message, without the library's id in front of it.
std::string one_line(const std::string& what);

namespace {

// The first word that is neither a global option nor its value: where the command stands.
std::string first_command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--plugin-path" || a == "--log-level") {
      ++i;  // its value
      continue;
    }
    if (!a.empty() && a[0] == '-') continue;
    return a;
  }
  return "";
}

}  // namespace

std::string one_line(const std::string& what) {
  // LibTorch appends a backtrace after the first line; nlohmann starts with its exception's id.
  std::string line = what.substr(0, what.find('\n'));
  if (line.rfind("[json.exception.", 0) == 0 && line.find("] ") != std::string::npos) {
    line = "malformed or unexpected JSON: " + line.substr(line.find("] ") + 2);
  }
  return line;
}

}  // namespace yoloflow::cli

int main(int argc_in, char** argv_in) {
  using namespace yoloflow;
  core::use_builtin_components();
  // Ultralytics' key=value words on val, predict, export and info become their options
  // (cli/verb_words.h) before the command line is parsed.
  std::vector<std::string> args;
  try {
    args = cli::words_as_options(std::vector<std::string>(argv_in + 1, argv_in + argc_in));
  } catch (const Error& e) {
    std::cerr << "error: " << printable_lines(e.what()) << std::endl;
    return e.exit_code();
  }
  std::vector<char*> arg_pointers{argv_in[0]};
  for (auto& a : args) arg_pointers.push_back(a.data());
  const int argc = static_cast<int>(arg_pointers.size());
  char** argv = arg_pointers.data();
  cli::CliContext ctx;
  cli::Action selected;

  CLI::App app{"yoloflow " YOLOFLOW_VERSION_STRING
               ": train and run YOLO11 detectors with LibTorch, as a host plus plugins.\n"
               "Pipelines are JSON files (docs/pipeline-format.md); `yoloflow COMMAND --help` "
               "explains each command."};
  app.set_version_flag("--version", YOLOFLOW_VERSION_STRING);
  app.add_option("--plugin-path", ctx.plugin_paths,
                 "Also load plugins from this folder, or this plugin library (repeatable; $YOLOFLOW_PLUGIN_PATH too)");
  app.add_option("--log-level", ctx.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "warning", "error", "off"}));
  app.require_subcommand(1);
  // Global options may also follow the command (`yoloflow train P.json --log-level debug`);
  // subcommands inherit this when they are added.
  app.fallthrough(true);

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
  cli::add_export_command(app, ctx, selected);
  cli::add_sweep_command(app, ctx, selected);
  cli::describe_words(app);

  // A word where the command belongs that names none: say which exist, not "a subcommand is
  // required".
  if (const std::string verb = cli::first_command_word(argc, argv); !verb.empty()) {
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), verb) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      const std::string guess = closest_name(verb, names);
      std::cerr << "error: unknown command '" << verb << "'" << (guess.empty() ? "" : "; did you mean '" + guess + "'?")
                << "\nthe commands are: " << list << " (yoloflow COMMAND --help explains each)" << std::endl;
      return kExitInvalid;
    }
  }

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
    // A --device is read before the command reads anything (weights, data, a pipeline): a device
    // that is none, or that this machine lacks, is refused in one line, the same on every command.
    for (const CLI::App* command : app.get_subcommands()) {
      const CLI::Option* device = command->get_option_no_throw("--device");
      if (device != nullptr && device->count() > 0) core::check_device(device->as<std::string>(), "--device");
    }
    return selected ? selected() : kExitInvalid;
  } catch (const Error& e) {
    std::cerr << "error: " << printable_lines(e.what()) << std::endl;
    return e.exit_code();
  } catch (const std::exception& e) {
    // Not an error yoloflow raises on purpose: still one line, without a library's internals.
    std::cerr << "error: " << cli::one_line(e.what()) << std::endl;
    return kExitFailure;
  }
}
