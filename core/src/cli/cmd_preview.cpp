// `yoloflow preview PIPELINE --out DIR [--batches N]`: runs the pipeline's source and
// augmentation chain on a few samples and writes image grids with their boxes and class
// names drawn: what to look at before a long run (are the labels on the objects, are the
// augmentations sane).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "cli/cli.h"
#include "detect/sample_grid.h"
#include "graph/stage_sample_loaders.h"
#include "pipeline/component_factory.h"
#include "pipeline/pipeline.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"
#include "yoloflow/source.h"

namespace fs = std::filesystem;

namespace yoloflow::cli {

void add_preview_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "preview", "Write image grids of augmented training samples with their boxes and class names");
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
      StageContext context;
      context.imgsz = p.imgsz(epoch);
      context.epoch = epoch;
      context.epochs = p.epochs;
      context.seed = p.seed;
      context.deterministic = p.deterministic;
      context.workers = 1;
      context.device = "cpu";
      auto make = [&](const std::string& name) {
        const core::StageSpec& spec = p.stage(name);
        StageContext c = context;
        c.node = name;
        return core::create_configured(registry, spec.kind, spec.plugin, p.stage_params(name, epoch),
                                       spec.path(), c);
      };
      std::unique_ptr<DataSource> source(static_cast<DataSource*>(make(p.source).release()));
      std::vector<std::unique_ptr<Augmentation>> chain;
      for (const auto& a : p.augmentations)
        chain.emplace_back(static_cast<Augmentation*>(make(a).release()));
      const auto names = source->info().names;
      std::vector<Augmentation*> chain_ptrs;
      for (auto& a : chain) chain_ptrs.push_back(a.get());
      core::StageSampleLoaders loaders(*source, chain_ptrs, Rng::mix(p.seed, static_cast<std::uint64_t>(epoch)),
                                       context.imgsz, epoch);

      std::error_code ec;
      fs::create_directories(o->out, ec);
      if (!fs::is_directory(o->out, ec)) {
        throw InvalidInput("--out: cannot create the folder '" + o->out + "'");
      }
      // A shuffled order from the pipeline's seed, as training would draw them.
      std::vector<std::size_t> order(source->size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      Rng shuffle_rng(Rng::mix(p.seed, static_cast<std::uint64_t>(epoch)));
      if (p.shuffle) std::shuffle(order.begin(), order.end(), shuffle_rng.engine());

      const int cols = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(o->per_grid))));
      std::size_t next = 0, written = 0;
      for (int g = 0; g < o->batches && next < order.size(); ++g) {
        std::vector<Sample> samples;
        while (static_cast<int>(samples.size()) < o->per_grid && next < order.size()) {
          const std::size_t pos = next++;
          Sample s = source->load(order[pos]);
          Rng rng(Rng::mix(Rng::mix(p.seed, static_cast<std::uint64_t>(epoch)), pos));
          for (std::size_t i = 0; i < chain.size(); ++i) {
            AugmentContext actx{rng, loaders.for_stage(i), context.imgsz, epoch};
            chain[i]->apply(s, actx);
          }
          samples.push_back(std::move(s));
        }
        const cv::Mat grid = core::draw_sample_grid(samples, names, o->max_side, cols);
        const int n = static_cast<int>(samples.size());
        const std::string path = (fs::path(o->out) / ("preview_" + std::to_string(g) + "." + o->format)).string();
        if (!cv::imwrite(path, grid)) throw Error("cannot write '" + path + "'");
        std::cout << path << ": " << n << " images, " << grid.cols << "x" << grid.rows << std::endl;
        ++written;
      }
      std::cout << "wrote " << written << " preview grid" << (written == 1 ? "" : "s") << " of '"
                << p.name << "' (imgsz " << context.imgsz << ", epoch " << epoch << ") to " << o->out
                << std::endl;
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
