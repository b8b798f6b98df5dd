// `yoloflow preview PIPELINE --out DIR [--batches N]`: runs the pipeline's source and
// augmentation chain on a few samples and writes image grids with their boxes and class
// names drawn: what to look at before a long run (are the labels on the objects, are the
// augmentations sane).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "cli/cli.h"
#include "runtime/util/path_words.h"
#include "training/detect/image_file.h"
#include "training/detect/sample_grid.h"
#include "runtime/graph/augmented_samples.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "yoloflow/error.h"
#include "yoloflow/printable.h"

namespace fs = std::filesystem;

namespace yoloflow::cli {

void add_preview_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "preview", "Write image grids of augmented training samples with their boxes and class names (and their outlines, filled)");
  struct Opts {
    std::string file, out, format = "jpg";
    std::vector<std::string> overrides;
    int batches = 3, per_grid = 16, max_side = 1920, epoch = 0;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("pipeline", o->file, "Pipeline JSON file")->required();
  cmd->add_option("overrides", o->overrides, "Overrides path=value, e.g. imgsz=320");
  cmd->add_option("--out", o->out, "Folder to write preview_<n>.<format> into")->required();
  cmd->add_option("--batches", o->batches, "Number of grids to write")->check(CLI::Range(1, 1000));
  cmd->add_option("--per-grid", o->per_grid, "Images per grid")->check(CLI::Range(1, 256));
  cmd->add_option("--max-side", o->max_side, "Longest side of a grid in pixels")
      ->check(CLI::Range(64, 16384));
  cmd->add_option("--epoch", o->epoch, "Epoch whose imgsz and schedules to use (0-based)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--format", o->format, "jpg or png")->check(CLI::IsMember({"jpg", "png"}));
  cmd->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() -> int {
      core::check_path_word("--out", o->out);
      auto& registry = ctx.plugins().registry();
      auto loaded = core::load_pipeline(o->file, o->overrides, registry);
      if (!loaded.ok()) {
        std::cerr << core::format_diagnostics(loaded.diagnostics, o->file);
        std::cerr << o->file << ": " << loaded.diagnostics.size()
                  << (loaded.diagnostics.size() == 1 ? " problem" : " problems")
                  << "; nothing was previewed" << std::endl;
        return kExitInvalid;
      }
      const core::Pipeline& p = *loaded.pipeline;
      const int epoch = std::min(o->epoch, std::max(0, p.epochs - 1));
      // The epoch's first samples, exactly as training draws them.
      core::AugmentedSamples samples_of_epoch(p, registry, epoch);
      const auto names = samples_of_epoch.source().info().names;

      std::error_code ec;
      fs::create_directories(o->out, ec);
      if (!fs::is_directory(o->out, ec)) {
        throw InvalidInput("--out: cannot create the folder '" + printable(o->out) + "'");
      }

      const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o->per_grid))));
      std::size_t next = 0, written = 0;
      for (int g = 0; g < o->batches && next < samples_of_epoch.size(); ++g) {
        std::vector<Sample> samples;
        while (static_cast<int>(samples.size()) < o->per_grid && next < samples_of_epoch.size()) {
          samples.push_back(samples_of_epoch.at(next++));
        }
        const cv::Mat grid = core::draw_sample_grid(samples, names, o->max_side, cols);
        const int n = static_cast<int>(samples.size());
        const std::string path = (fs::path(o->out) / ("preview_" + std::to_string(g) + "." + o->format)).string();
        core::write_image_file(path, grid);
        std::cout << printable(path) << ": " << n << " images, " << grid.cols << "x" << grid.rows << std::endl;
        ++written;
      }
      std::cout << "wrote " << written << " preview grid" << (written == 1 ? "" : "s") << " of '"
                << printable(p.name) << "' (imgsz " << samples_of_epoch.imgsz() << ", epoch " << epoch << ") to " << printable(o->out)
                << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
