// `yoloflow info [--model yolo11s | --weights FILE]`: the layer table, parameter count and
// GFLOPs of a model; for a weights file also what the file says of itself.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "cli/command_observer.h"
#include "training/model/fetched_weights.h"
#include "training/model/flop_counter.h"
#include "training/model/model_factory.h"
#include "runtime/pipeline/default_documents.h"
#include "training/checkpoint/checkpoint_model.h"
#include "yoloflow/error.h"
#include "yoloflow/printable.h"

namespace yoloflow::cli {

namespace {
// 2624080 -> "2,624,080"
std::string thousands(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

// `key=value ...` as Ultralytics' command line writes its arguments.
std::string words(const nlohmann::ordered_json& object) {
  std::string out;
  for (const auto& [k, v] : object.items()) {
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  }
  return out;
}

// What a weights file says of itself (LoadedCheckpointModel::about), a few lines.
void print_about(const std::string& weights, const core::LoadedCheckpointModel& loaded) {
  const nlohmann::ordered_json& a = loaded.about;
  const std::string format = a.value("format", std::string());
  std::cout << "weights: " << weights << ": ";
  if (format == "ultralytics") {
    std::cout << "an Ultralytics" << (a.value("version", std::string()).empty() ? "" : " " + a["version"].get<std::string>())
              << " checkpoint";
    if (!a.value("date", std::string()).empty()) std::cout << " written " << a["date"].get<std::string>();
    if (a.contains("epoch")) {
      const auto epoch = a["epoch"].get<std::int64_t>();
      std::cout << ", epoch " << epoch << (epoch < 0 ? " (a finished run's final weights)" : " (saved after epoch " + std::to_string(epoch + 1) + ")");
    }
    std::cout << "; its " << a.value("entry", std::string()) << " model";
  } else if (format == "yoloflow") {
    std::cout << "a yoloflow checkpoint, epoch " << a.value("epoch", 0) << ", " << a.value("global_step", std::int64_t{0})
              << " optimizer steps; its " << loaded.weights_kind << " weights";
  } else {
    std::cout << "a PyTorch state dict";
  }
  if (a.contains("dtype")) std::cout << " (" << a["dtype"].get<std::string>() << ")";
  std::cout << "\n";
  const auto& names = loaded.described.names;
  std::cout << "classes: " << names.size();
  for (std::size_t c = 0; c < names.size() && c < 10; ++c) std::cout << (c ? ", " : ": ") << printable(names[c]);
  if (names.size() > 10) std::cout << ", ... (" << names.size() - 10 << " more)";
  std::cout << "\n";
  if (a.contains("train_args") && !a["train_args"].empty()) std::cout << "train args: " << words(a["train_args"]) << "\n";
  if (a.contains("train_metrics") && !a["train_metrics"].empty()) {
    std::cout << "train metrics: " << words(a["train_metrics"]) << "\n";
  }
}
}  // namespace

void add_info_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("info", "Show a model's layers, parameter count and GFLOPs");
  struct Opts {
    std::string model;  // empty: the train sink's default model
    std::string weights;
    int nc = 80;
    int imgsz = 640;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model,
                  "Architecture, e.g. yolo11s (default: the train sink's model in core/resources/train-defaults.json; "
                  "with --weights: the architecture of a plain state dict)");
  cmd->add_option("--weights", o->weights,
                  "A weights file: a checkpoint of `yoloflow train`, an Ultralytics checkpoint (yolo11n.pt, best.pt) or a "
                  "state dict with --model; also prints what the file says of itself");
  auto* nc_option = cmd->add_option("--nc", o->nc, "Number of classes (with --weights: the file's)")
                 ->capture_default_str()
                 ->check(CLI::PositiveNumber);
  nc_option->excludes(cmd->get_option("--weights"));
  cmd->add_option("--imgsz", o->imgsz, "Square image size for the GFLOPs count (multiple of 32; with --weights, default: the size they were trained at)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->callback([&ctx, &selected, o, cmd] {
    const bool imgsz_given = cmd->count("--imgsz") > 0;
    selected = [&ctx, o, imgsz_given]() -> int {
      std::unique_ptr<Model> model;
      int nc = o->nc;
      std::vector<std::string> names;  // the weights' class names (none for an architecture)
      if (!o->weights.empty()) {
        o->weights = core::locate_weights_file(o->weights);  // yolo11n.pt: fetched on first use
        core::LoadedCheckpointModel loaded = core::load_checkpoint_model(
            ctx.plugins().registry(), o->weights, torch::Device(torch::kCPU), "--weights", o->model, "--model");
        print_about(o->weights, loaded);
        names = loaded.described.names;
        if (!imgsz_given) o->imgsz = core::default_imgsz(loaded);  // the size it was trained at
        model = std::move(loaded.model);
        nc = model->head().nc;
      } else if (o->model.empty()) {
        const json spec = core::train_sink_default("model");
        model = core::create_model(ctx.plugins().registry(), spec.value("plugin", std::string()), o->nc,
                                   spec.value("params", json::object()));
      } else {
        model = core::create_model(ctx.plugins().registry(), o->model, o->nc);
      }
      std::cout << std::right << std::setw(5) << "" << std::setw(20) << "from" << std::setw(4) << "n"
                << std::setw(12) << "params" << "  " << std::left << std::setw(10) << "module"
                << "arguments\n";
      for (const auto& r : model->layers()) {
        std::cout << std::right << std::setw(5) << r.index << std::setw(20) << r.from << std::setw(4) << r.repeats
                  << std::setw(12) << thousands(r.params) << "  " << std::left << std::setw(10) << r.module
                  << r.args << "\n";
      }
      std::int64_t params = 0, grads = 0;
      for (const auto& p : model->module().parameters()) {
        params += p.numel();
        if (p.requires_grad()) grads += p.numel();
      }
      const double gflops = core::forward_gflops(*model, o->imgsz);
      std::ostringstream gf;
      gf << std::fixed << std::setprecision(1) << gflops;
      std::cout << model->architecture() << " summary: " << model->layers().size() << " layers, "
                << thousands(params) << " parameters, " << thousands(grads) << " gradients, " << gf.str()
                << " GFLOPs at " << o->imgsz << "x" << o->imgsz << " (nc " << nc << ")" << std::endl;
      if (CommandObserver* observer = command_observer()) {
        nlohmann::ordered_json d;
        d["architecture"] = model->architecture();
        d["layers"] = model->layers().size();
        d["parameters"] = params;
        d["gradients"] = grads;
        d["gflops"] = gflops;
        d["imgsz"] = o->imgsz;
        d["nc"] = nc;
        d["names"] = names;
        observer->described(d.dump());
      }
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
