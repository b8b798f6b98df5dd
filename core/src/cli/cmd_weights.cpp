// `yoloflow weights import|export`: move weights between PyTorch state-dict files and ours, and
// back to Ultralytics (export --format ultralytics).
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cli/ultralytics_export.h"
#include "runtime/util/string_affixes.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/model/model_factory.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "runtime/util/atomic_file.h"
#include "runtime/util/path_words.h"
#include "training/model/weights_io.h"
#include "yoloflow/error.h"
#include "yoloflow/printable.h"

namespace yoloflow::cli {

namespace {

int run_import(CliContext& ctx, const std::string& src, std::string arch, int nc, const std::string& out) {
  // The output is checked before anything is read: a refused --out costs nothing. It is
  // written atomically (core::write_weights): an existing file is replaced only once the new
  // one is whole on disk.
  core::check_path_word("--out", out);
  core::check_writable_target(out);
  core::TorchFile file = core::TorchFile::open(src);
  core::NamedTensors weights;
  if (core::is_ultralytics_checkpoint(file.root())) {
    // It says its architecture itself; --model, when given, must agree.
    core::UltralyticsCheckpoint u = core::read_ultralytics_checkpoint(file);
    core::check_finite(u.weights, file.name(), u.weights_entry);
    if (!arch.empty() && arch != u.architecture()) {
      throw InvalidInput("--model " + arch + ", but " + file.name() + " holds a " + u.architecture() +
                         " (an Ultralytics checkpoint): leave --model out");
    }
    arch = u.architecture();
    std::cout << "read " << printable(src) << ": an Ultralytics" << (u.version.empty() ? "" : " " + u.version) << " checkpoint, "
              << arch << ", " << u.nc << " classes, its " << u.weights_entry << " model\n";
    weights = std::move(u.weights);
  } else {
    weights = core::read_weights(file);
    if (arch.empty()) {
      throw InvalidInput(file.name() + " does not say which model it holds; name it with --model (e.g. yolo11n)");
    }
  }
  const int file_nc = core::classes_in(weights);
  const int target_nc = nc > 0 ? nc : (file_nc > 0 ? file_nc : 80);
  auto model = core::create_model(ctx.plugins().registry(), arch, target_nc);
  core::LoadOptions opts;
  const bool finetune = file_nc > 0 && file_nc != target_nc;
  if (finetune) opts.may_differ = core::is_class_head_tensor;  // everything else must fit
  const auto report = core::load_weights(model->module(), weights, src, opts);
  core::write_weights(out, core::module_state(model->module()));
  std::cout << "imported " << report.loaded << " tensors from " << printable(src) << " into " << model->architecture()
            << " (nc " << target_nc << ")\n";
  if (finetune) {
    std::cout << "nc " << file_nc << " -> " << target_nc << ": kept the initial values of "
              << report.kept_initial.size() << " class-head tensors (fine-tuning):\n";
    for (const auto& n : report.kept_initial) std::cout << "  " << printable(n) << "\n";
  }
  std::cout << "wrote " << printable(out) << std::endl;
  return kExitOk;
}

int run_export(CliContext& ctx, const std::string& in, const std::string& key, const std::string& arch,
               const std::string& out) {
  core::check_path_word("--out", out);
  core::check_writable_target(out);
  auto weights = core::read_weights(in, key);
  if (!arch.empty()) {
    // Check against the architecture, and write in its state-dict order.
    auto model = core::create_model(ctx.plugins().registry(), arch, core::classes_in(weights));
    core::load_weights(model->module(), weights, in);
    weights = core::module_state(model->module());
  }
  core::write_weights(out, weights);
  std::cout << "exported " << weights.size() << " tensors from " << printable(in) << " to " << printable(out)
            << " (a dict name -> tensor; Python: torch.load('" << printable(out) << "'))" << std::endl;
  return kExitOk;
}

// The last line of `text` that `wanted` accepts; "" when none does.
template <class Wanted>
std::string last_line(const std::string& text, Wanted wanted) {
  std::istringstream in(text);
  std::string line, found;
  while (std::getline(in, line)) {
    if (wanted(line)) found = line;
  }
  return found;
}

// What the script said in its last "error: " line, without the prefix; "" when it said none.
std::string script_error(const std::string& text) {
  const std::string line = last_line(text, [](const std::string& l) { return core::starts_with(l, "error: "); });
  return line.empty() ? line : line.substr(7);
}

// --format ultralytics: checks the file as every consumer of weights does (the architecture, the
// EMA, names and shapes), then has scripts/yoloflow-to-ultralytics.py build Ultralytics' own
// model object from it with the user's Ultralytics (ultralytics_export.h). The script writes the
// output atomically itself.
int run_export_ultralytics(CliContext& ctx, const std::string& in, const std::string& key, const std::string& arch,
                           const std::string& out) {
  core::check_path_word("--out", out);
  core::check_writable_target(out);
  if (!core::ends_with(out, ".pt")) {
    throw InvalidInput("--out " + out + ": Ultralytics loads checkpoints named *.pt; name the output so");
  }
  if (!key.empty() && key != "ema" && key != "model") {
    throw InvalidInput("--key " + key +
                       ": with --format ultralytics, ema or model (the entries of a yoloflow checkpoint)");
  }
  auto loaded = core::load_checkpoint_model(ctx.plugins().registry(), in, torch::Device(torch::kCPU), "--weights",
                                            arch, "--model");
  if (core::starts_with(loaded.weights_kind, "Ultralytics")) {
    throw InvalidInput(in + " is an Ultralytics checkpoint already: Ultralytics loads it as it is (YOLO('" + in +
                       "'))");
  }
  const std::string architecture = loaded.model->architecture();
  std::vector<std::string> looked_in;
  const std::string script = find_ultralytics_script(&looked_in);
  if (script.empty()) {
    std::string where;
    for (const auto& d : looked_in) where += (where.empty() ? "" : ", ") + d;
    throw Error("cannot find yoloflow-to-ultralytics.py, which writes Ultralytics checkpoints (looked in " + where +
                "); reinstall yoloflow");
  }
  std::vector<std::string> args = {"--model", architecture};
  // The image size it trained at, as its pipeline says (the last epoch's of a schedule); without
  // a pipeline, the script takes the checkpoint's own note of it.
  if (!loaded.described.pipeline.is_null()) {
    args.insert(args.end(), {"--imgsz", std::to_string(core::default_imgsz(loaded))});
  }
  if (const std::string data = core::default_data(loaded); !data.empty()) {
    args.insert(args.end(), {"--data", data});
  }
  if (!key.empty()) args.insert(args.end(), {"--key", key});
  args.insert(args.end(), {"--", in, out});
  const std::string python = python_interpreter();
  const PythonRun run = run_python(python, script, args);
  if (run.not_started) {
    throw InvalidInput("cannot run Python '" + python + "' (" + run.start_error +
                       "): writing an Ultralytics checkpoint needs Python 3 with Ultralytics (pip install "
                       "ultralytics); YOLOFLOW_PYTHON names the interpreter");
  }
  if (run.exit_code != 0) {
    const std::string said = script_error(run.output);
    if (!said.empty()) {
      if (run.exit_code == kExitInvalid) throw InvalidInput(said);
      throw Error(said);
    }
    const std::string last =
        last_line(run.output, [](const std::string& l) { return l.find_first_not_of(" \t\r") != std::string::npos; });
    throw Error("writing the Ultralytics checkpoint failed (" + python + " " + script +
                (run.exit_code < 0 ? std::string(" was killed") : " exited with " + std::to_string(run.exit_code)) +
                (last.empty() ? std::string(")") : "): " + last));
  }
  std::cout << printable_lines(run.output) << std::flush;
  return kExitOk;
}

}  // namespace

void add_weights_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "weights", "Import PyTorch state dicts and Ultralytics checkpoints; export ours for PyTorch or Ultralytics");
  cmd->require_subcommand(1);
  struct Opts {
    std::string src, model, out, key, format = "state_dict";
    int nc = 0;
  };
  auto o = std::make_shared<Opts>();

  auto* imp = cmd->add_subcommand(
      "import", "Read a Python torch.save(model.state_dict()) file or an Ultralytics checkpoint (yolo11n.pt, best.pt), "
                "check every name and shape against the architecture and write it as our weights file; another --nc "
                "keeps the class head initialised");
  imp->add_option("src", o->src, "State-dict file written by torch.save, or an Ultralytics checkpoint")->required();
  imp->add_option("--model", o->model, "Architecture, e.g. yolo11n (an Ultralytics checkpoint says its own)");
  imp->add_option("--nc", o->nc, "Classes of the new model (default: as in the file)")->check(CLI::PositiveNumber);
  imp->add_option("--out", o->out, "Output weights file")->required();
  imp->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() { return run_import(ctx, o->src, o->model, o->nc, o->out); };
  });

  auto* exp = cmd->add_subcommand(
      "export", "Write our weights or checkpoint file as a state dict (OrderedDict name -> tensor) that a plain "
                "torch.load in Python reads, or (--format ultralytics) as an Ultralytics checkpoint that "
                "YOLO(\"model.pt\") loads");
  exp->add_option("src,--weights", o->src, "Our weights or checkpoint file (a run's weights/best.pt or last.pt)")
      ->required();
  exp->add_option("--out", o->out, "Output file")->required();
  exp->add_option("--format", o->format,
                  "state_dict (a dict name -> tensor) or ultralytics (an Ultralytics checkpoint: the model built by "
                  "the Ultralytics installed for $YOLOFLOW_PYTHON, default python3; pip install ultralytics)")
      ->check(CLI::IsMember({"state_dict", "ultralytics"}))
      ->capture_default_str();
  exp->add_option("--key", o->key,
                  "Checkpoint entry holding the weights (default: ema, then model, then state_dict; "
                  "with --format ultralytics: ema or model)");
  exp->add_option("--model", o->model,
                  "Also check names and shapes against this architecture (a plain state dict: its architecture)");
  exp->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() {
      if (o->format == "ultralytics") return run_export_ultralytics(ctx, o->src, o->key, o->model, o->out);
      return run_export(ctx, o->src, o->key, o->model, o->out);
    };
  });
}

}  // namespace yoloflow::cli
