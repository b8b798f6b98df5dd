// `yoloflow weights import|export`: move weights between PyTorch state-dict files and ours.
#include <iostream>

#include "cli/cli.h"
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

}  // namespace

void add_weights_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("weights", "Import PyTorch state dicts and export ours for PyTorch");
  cmd->require_subcommand(1);
  struct Opts {
    std::string src, model, out, key;
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
                "torch.load in Python reads");
  exp->add_option("src", o->src, "Our weights or checkpoint file")->required();
  exp->add_option("--out", o->out, "Output file")->required();
  exp->add_option("--key", o->key, "Checkpoint entry holding the weights (default: ema, then model, then state_dict)");
  exp->add_option("--model", o->model, "Also check names and shapes against this architecture");
  exp->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() { return run_export(ctx, o->src, o->key, o->model, o->out); };
  });
}

}  // namespace yoloflow::cli
