// `yoloflow train PIPELINE [path=value ...]` runs a pipeline that ends in the train sink;
// `yoloflow train --resume RUN_DIR [path=value ...]` continues a stopped run from its
// weights/last.pt with the pipeline saved in RUN_DIR (overrides may extend epochs or change
// the image size or batch: progressive resolution); `yoloflow train data=D.yaml [words...]`
// trains the shipped recipe on D.yaml, as Ultralytics' `yolo train data=...` does; model=FILE.pt
// starts from that file's weights and architecture (training/trainer/model_word.h).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/default_pipeline.h"
#include "runtime/fetch/builtin_datasets.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/util/path_words.h"
#include "runtime/words/resume_word.h"
#include "training/trainer/model_word.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_train_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("train", "Train a detector: run a pipeline ending in the train sink, or resume one");
  auto r = std::make_shared<RunRequest>();
  auto resume_dir = std::make_shared<std::string>();
  cmd->add_option("pipeline", r->file,
                  "Pipeline JSON file (not with --resume); without one, data=DATA.yaml trains the shipped recipe");
  cmd->add_option("overrides", r->overrides,
                  "Overrides path=value, e.g. epochs=50 stages.batch.params.batch=32, and Ultralytics' words "
                  "(optimizer=SGD cos_lr=True project=P name=N resume=RUN/weights/last.pt ...: "
                  "docs/ultralytics-arguments.md); model=yolo11n.pt starts from that weights file (its architecture "
                  "and weights); Ultralytics' released names (yolo11n.pt, data=coco8.yaml) are fetched on first use "
                  "(docs/getting-started.md)");
  cmd->add_option("--resume", *resume_dir,
                  "Run folder to continue (its pipeline.json and weights/last.pt), or that RUN/weights/last.pt");
  cmd->add_option("--run-dir", r->run_dir, "Output folder (default runs/<pipeline name>/<N>); one holding a run, or holding runs (runs/train), is refused");
  cmd->add_flag("--exist-ok", r->exist_ok, "Write into a --run-dir that already holds a run (its files are replaced)");
  cmd->add_option("--device", r->device, "cpu, cuda, cuda:N (default: the pipeline's \"device\")");
  cmd->add_flag("--print-resolved", r->print_resolved, "Print the resolved pipeline before running");
  cmd->callback([&ctx, &selected, r, resume_dir, cmd] {
    selected = [&ctx, r, resume_dir, cmd]() -> int {
      // `--run-dir ''` names no folder; it is not the same as leaving --run-dir out.
      if (cmd->count("--run-dir") > 0) core::check_path_word("--run-dir", r->run_dir);
      RunRequest request = *r;
      request.training = true;
      // resume=RUN/weights/last.pt (Ultralytics' word) is --resume.
      core::take_resume_word(request.file, request.overrides, *resume_dir);
      if (!resume_dir->empty()) {
        namespace fs = std::filesystem;
        // CLI11 fills the first positional first: with --resume it is an override.
        if (!request.file.empty()) request.overrides.insert(request.overrides.begin(), request.file);
        // The run folder, or a checkpoint in its weights folder (RUN/weights/last.pt, as
        // Ultralytics' resume=path/to/last.pt).
        std::string run = *resume_dir;
        std::error_code ec;
        if (fs::is_regular_file(run, ec)) {
          const fs::path file = fs::absolute(run).lexically_normal();
          if (file.parent_path().filename() != "weights") {
            std::cerr << "error: cannot resume from " << run << ": a checkpoint to resume is RUN/weights/last.pt "
                      << "inside its run folder (which holds the run's pipeline.json); give the run folder" << std::endl;
            return kExitInvalid;
          }
          run = file.parent_path().parent_path().string();
          request.resume_checkpoint = file.string();
        } else {
          request.resume_checkpoint = run + "/weights/last.pt";
        }
        request.file = run + "/pipeline.json";
        for (const auto& f : {request.file, request.resume_checkpoint}) {
          if (!fs::exists(f, ec)) {
            std::cerr << "error: cannot resume " << *resume_dir << ": " << f << " does not exist" << std::endl;
            return kExitInvalid;
          }
        }
        if (!request.run_dir.empty() && fs::absolute(request.run_dir).lexically_normal() != fs::absolute(run).lexically_normal()) {
          std::cerr << "error: --run-dir " << request.run_dir << " with --resume " << *resume_dir
                    << ": a resumed run continues in its own folder; leave --run-dir out" << std::endl;
          return kExitInvalid;
        }
        request.run_dir = run;
      } else if (request.file.empty() || request.file.find('=') != std::string::npos) {
        // No pipeline file, Ultralytics-style: `yoloflow train data=D.yaml model=yolo11s epochs=50`
        // trains the shipped recipe (pipelines/train-coco128.json, built in) on D.yaml.
        if (!request.file.empty()) request.overrides.insert(request.overrides.begin(), request.file);
        request.file.clear();
        const bool has_data = std::any_of(request.overrides.begin(), request.overrides.end(),
                                          [](const std::string& o) { return o.rfind("data=", 0) == 0; });
        if (!has_data) {
          std::cerr << "error: train needs a pipeline file, --resume RUN_DIR, or data=DATA.yaml (Ultralytics' recipe "
                       "on that dataset, e.g. yoloflow train data=coco8.yaml model=yolo11n epochs=100)" << std::endl;
          return kExitInvalid;
        }
        nlohmann::json doc = core::read_json_text(default_train_pipeline(), "the built-in training pipeline");
        doc["name"] = "train";  // runs/train/<N>, as Ultralytics names it
        doc["data"] = "";       // the shipped file's dataset path means nothing from here
        request.builtin = doc.dump();
      }
      // model=yolo11n.pt (Ultralytics' weights, or a run's best.pt): its architecture and its
      // weights, as `yolo train model=yolo11n.pt` starts from them.
      request.words = request.overrides;
      if (resume_dir->empty()) request.overrides = core::expand_model_words(request.overrides);
      // data=coco8.yaml (a dataset Ultralytics names without a file): fetched into the datasets folder.
      request.overrides = core::expand_data_words(request.overrides);
      return run_pipeline(ctx, request);
    };
  });
}

}  // namespace yoloflow::cli
