// `yoloflow validate PIPELINE [path=value ...]`: every problem of a pipeline at once, each
// with its JSON path; nothing is constructed. It reads the pipeline as `run` and `train` do (its
// plugin_path loaded first), so what they would refuse before running, it reports.
#include <iostream>

#include "cli/cli.h"
#include "cli/pipeline_plugins.h"
#include "runtime/fetch/builtin_datasets.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "training/trainer/model_word.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_validate_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "validate", "Check a pipeline file (plugins, parameters, edges, datasets, annotation fields) without running it");
  struct Opts {
    std::string file;
    std::vector<std::string> overrides;
    bool print_resolved = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("pipeline", o->file, "Pipeline JSON file")->required();
  cmd->add_option("overrides", o->overrides,
                  "Overrides path=value, e.g. epochs=3 stages.letterbox.params.auto=true");
  cmd->add_flag("--print-resolved", o->print_resolved,
                "Print the resolved pipeline (defaults filled in, paths absolute)");
  cmd->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() -> int {
      // The plugins the file records, loaded as `run` and `train` load them: a stage from one of
      // them is known here too, and a path that does not exist is a problem here too.
      add_recorded_plugin_paths(ctx, o->file);
      // model=yolo11n.yaml, model=best.pt read as `train` reads them.
      o->overrides = core::expand_data_words(core::expand_model_words(o->overrides));
      auto loaded = core::load_pipeline(o->file, o->overrides, ctx.plugins().registry());
      if (!loaded.ok()) {
        std::cerr << core::format_diagnostics(loaded.diagnostics, o->file);
        std::cerr << o->file << ": " << loaded.diagnostics.size()
                  << (loaded.diagnostics.size() == 1 ? " problem" : " problems")
                  << "; nothing was run" << std::endl;
        return kExitInvalid;
      }
      const auto& p = *loaded.pipeline;
      if (o->print_resolved) {
        std::cout << p.document.dump(2) << std::endl;
      } else {
        std::string chain = p.source;
        for (const auto& a : p.augmentations) chain += " -> " + a;
        chain += " -> " + p.batcher + " -> " + p.sink;
        std::cout << o->file << ": valid pipeline '" << p.name << "' (" << chain << ")"
                  << std::endl;
      }
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
