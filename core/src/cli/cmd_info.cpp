// `yoloflow info [--model yolo11s]`: the layer table, parameter count and GFLOPs of a model.
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/cli.h"
#include "model/flop_counter.h"
#include "model/model_factory.h"
#include "pipeline/default_documents.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

namespace {
// 2624080 -> "2,624,080"
std::string thousands(std::int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return s;
}
}  // namespace

void add_info_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("info", "Show a model's layers, parameter count and GFLOPs");
  struct Opts {
    std::string model;  // empty: the train sink's default model
    int nc = 80;
    int imgsz = 640;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--model", o->model,
                  "Architecture, e.g. yolo11s (default: the train sink's model in core/resources/train-defaults.json)");
  cmd->add_option("--nc", o->nc, "Number of classes")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--imgsz", o->imgsz, "Square image size for the GFLOPs count (multiple of 32)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() -> int {
      std::unique_ptr<Model> model;
      if (o->model.empty()) {
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
                << " GFLOPs at " << o->imgsz << "x" << o->imgsz << " (nc " << o->nc << ")" << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
