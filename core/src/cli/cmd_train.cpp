// `yoloflow train PIPELINE [path=value ...]` runs a pipeline that ends in the train sink;
// `yoloflow train --resume RUN_DIR [path=value ...]` continues a stopped run from its
// weights/last.pt with the pipeline saved in RUN_DIR (overrides may extend epochs or change
// the image size or batch: progressive resolution).
#include <filesystem>
#include <iostream>

#include "cli/cli.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_train_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("train", "Train a detector: run a pipeline ending in the train sink, or resume one");
  auto r = std::make_shared<RunRequest>();
  auto resume_dir = std::make_shared<std::string>();
  cmd->add_option("pipeline", r->file, "Pipeline JSON file (not with --resume)");
  cmd->add_option("overrides", r->overrides, "Overrides path=value, e.g. epochs=50 stages.batch.params.batch=32");
  cmd->add_option("--resume", *resume_dir, "Run folder to continue (its pipeline.json and weights/last.pt)");
  cmd->add_option("--run-dir", r->run_dir, "Output folder (default runs/<pipeline name>/<N>); one holding a run is refused");
  cmd->add_flag("--exist-ok", r->exist_ok, "Write into a --run-dir that already holds a run (its files are replaced)");
  cmd->add_option("--device", r->device, "cpu, cuda, cuda:N (default: the pipeline's \"device\")");
  cmd->add_flag("--print-resolved", r->print_resolved, "Print the resolved pipeline before running");
  cmd->callback([&ctx, &selected, r, resume_dir] {
    selected = [&ctx, r, resume_dir]() -> int {
      RunRequest request = *r;
      request.training = true;
      if (!resume_dir->empty()) {
        namespace fs = std::filesystem;
        // CLI11 fills the first positional first: with --resume it is an override.
        if (!request.file.empty()) request.overrides.insert(request.overrides.begin(), request.file);
        request.file = *resume_dir + "/pipeline.json";
        request.resume_checkpoint = *resume_dir + "/weights/last.pt";
        for (const auto& f : {request.file, request.resume_checkpoint}) {
          if (!fs::exists(f)) {
            std::cerr << "error: cannot resume " << *resume_dir << ": " << f << " does not exist" << std::endl;
            return kExitInvalid;
          }
        }
        if (request.run_dir.empty()) request.run_dir = *resume_dir;
      } else if (request.file.empty()) {
        std::cerr << "error: train needs a pipeline file or --resume RUN_DIR" << std::endl;
        return kExitInvalid;
      }
      return run_pipeline(ctx, request);
    };
  });
}

}  // namespace yoloflow::cli
