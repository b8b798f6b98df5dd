#include "cli/command_line.h"

#include <algorithm>
#include <deque>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <streambuf>

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
    std::vector<std::string> paths = host_plugin_paths;
    paths.insert(paths.end(), plugin_paths.begin(), plugin_paths.end());
    for (const auto& p : paths) {
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

namespace yoloflow::cli {
namespace {

// std::cerr passed through unchanged, the command's own lines also kept (not the logger's,
// which writes to the terminal itself), for a host that shows a failure another way (a Python
// exception): its "error: ..." lines, or, when it printed none, its last plain lines (a
// pipeline's problems, one per line, and their count).
class ErrorLines final : public std::streambuf {
 public:
  explicit ErrorLines(std::streambuf* out) : out_(out) {}
  std::string errors() const {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::deque<std::string>& lines = errors_.empty() ? plain_ : errors_;
    std::string all;
    for (const auto& l : lines) all += (all.empty() ? "" : "\n") + l;
    return all;
  }

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return out_->pubsync() == 0 ? 0 : traits_type::eof();
    const char ch = static_cast<char>(c);
    take(&ch, 1);
    return out_->sputc(ch);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    take(s, n);
    return out_->sputn(s, n);
  }
  int sync() override { return out_->pubsync(); }

 private:
  static constexpr std::size_t kLines = 20, kLineBytes = 4096;
  // A plugin may write to std::cerr from a worker thread.
  void take(const char* s, std::streamsize n) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::streamsize i = 0; i < n; ++i) {
      if (s[i] == '\n') {
        end_line();
      } else if (line_.size() < kLineBytes) {
        line_ += s[i];
      }
    }
  }
  void end_line() {
    static const std::string kError = "error: ";
    if (line_.rfind(kError, 0) == 0) {
      keep(errors_, line_.substr(kError.size()));
    } else if (!line_.empty() && line_[0] != '[' && line_[0] != ' ' && line_[0] != '\r') {
      if (!errors_.empty()) {
        // A refusal's further lines (what to do instead), a few of them.
        if (errors_.back().size() < 4 * kLineBytes) errors_.back() += "\n" + line_;
      } else {
        keep(plain_, line_);
      }
    }
    line_.clear();
  }
  static void keep(std::deque<std::string>& lines, const std::string& line) {
    lines.push_back(line);
    if (lines.size() > kLines) lines.pop_front();
  }
  std::streambuf* out_;
  mutable std::mutex mutex_;
  std::string line_;
  std::deque<std::string> errors_, plain_;
};

// What a command writes to std::cout, kept for its host (bounded: a prediction over a large
// folder writes a line per image).
class KeptOutput final : public std::streambuf {
 public:
  explicit KeptOutput(std::string& text) : text_(text) {}
  KeptOutput(const KeptOutput&) = delete;
  KeptOutput& operator=(const KeptOutput&) = delete;

 protected:
  int overflow(int c) override {
    if (c != traits_type::eof()) {
      const char ch = static_cast<char>(c);
      xsputn(&ch, 1);
    }
    return traits_type::not_eof(c);
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    static constexpr std::size_t kLimit = std::size_t{8} << 20;
    std::lock_guard<std::mutex> lock(mutex_);  // std::cout may be written from worker threads
    if (text_.size() < kLimit) {
      text_.append(s, std::min<std::size_t>(static_cast<std::size_t>(n), kLimit - text_.size()));
      if (text_.size() == kLimit) text_ += "\n... (the rest of the output was left out: 8 MiB kept)\n";
    }
    return n;
  }

 private:
  std::mutex mutex_;
  std::string& text_;
};

int run_parsed(const std::vector<std::string>& words, const std::vector<std::string>& plugin_paths);

}  // namespace

CommandLineResult run_command_line(const std::vector<std::string>& words,
                                   const std::vector<std::string>& plugin_paths, std::string* output) {
  // One command at a time: the commands share the process's signal handlers and run folders.
  static std::mutex one_at_a_time;
  std::lock_guard<std::mutex> lock(one_at_a_time);
  std::streambuf* const original = std::cerr.rdbuf();
  std::streambuf* const original_out = std::cout.rdbuf();
  ErrorLines errors(original);
  std::string unused;
  KeptOutput kept(output != nullptr ? *output : unused);
  std::cerr.rdbuf(&errors);
  if (output != nullptr) std::cout.rdbuf(&kept);
  CommandLineResult result;
  try {
    result.exit_code = run_parsed(words, plugin_paths);
  } catch (...) {
    std::cerr.rdbuf(original);
    std::cout.rdbuf(original_out);
    throw;
  }
  std::cout.flush();
  std::cerr.flush();
  std::cout.rdbuf(original_out);
  std::cerr.rdbuf(original);
  if (result.exit_code != 0) result.error = errors.errors();
  return result;
}

namespace {

int run_parsed(const std::vector<std::string>& words, const std::vector<std::string>& plugin_paths) {
  core::use_builtin_components();
  // Ultralytics' key=value words on val, predict, export and info become their options
  // (cli/verb_words.h) before the command line is parsed.
  std::vector<std::string> args;
  try {
    args = words_as_options(words);
  } catch (const Error& e) {
    std::cerr << "error: " << printable_lines(e.what()) << std::endl;
    return e.exit_code();
  }
  std::string program = "yoloflow";
  std::vector<char*> arg_pointers{program.data()};
  for (auto& a : args) arg_pointers.push_back(a.data());
  const int argc = static_cast<int>(arg_pointers.size());
  char** argv = arg_pointers.data();
  CliContext ctx;
  ctx.host_plugin_paths = plugin_paths;
  Action selected;

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

  add_plugins_command(app, ctx, selected);
  add_describe_command(app, ctx, selected);
  add_validate_command(app, ctx, selected);
  add_run_command(app, ctx, selected);
  add_train_command(app, ctx, selected);
  add_info_command(app, ctx, selected);
  add_weights_command(app, ctx, selected);
  add_preview_command(app, ctx, selected);
  add_val_command(app, ctx, selected);
  add_predict_command(app, ctx, selected);
  add_export_command(app, ctx, selected);
  add_sweep_command(app, ctx, selected);
  describe_words(app);

  // A word where the command belongs that names none: say which exist, not "a subcommand is
  // required".
  if (const std::string verb = first_command_word(argc, argv); !verb.empty()) {
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
    // Help and version are successes, printed as CLI11 prints them; anything else is a usage
    // error in one line.
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return kExitOk;
    }
    std::cerr << "error: " << one_line(e.what()) << " (yoloflow " << (app.get_subcommands().empty() ? "" : app.get_subcommands().front()->get_name() + " ")
              << "--help lists the options)" << std::endl;
    return kExitInvalid;
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
    std::cerr << "error: " << one_line(e.what()) << std::endl;
    return kExitFailure;
  }
}

}  // namespace
}  // namespace yoloflow::cli
