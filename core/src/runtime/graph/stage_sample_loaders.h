#pragma once
// What augmentations that load other samples (mosaic, mixup) receive: the other sample as it
// reaches their stage. Stage i's loader reads the source and passes the sample through the
// augmentations before stage i, so mixup after mosaic and random_perspective blends in a
// mosaic-and-perspective image, as Ultralytics' MixUp does with its pre-transform; the first
// stage (mosaic, usually) gets the source's samples as they are. Each load draws from its own
// generator (epoch seed, stage, sample index): results do not depend on threads.
// Samples come from the RecentImages store when it holds them (the main path's loads fill it).
//
// The annotation fields are held to the components' contracts (yoloflow/annotations.h): before
// an augmentation runs, the fields it does not keep are removed from the sample and from every
// other sample it loads (it never sees, so never leaves unmoved, a field it does not handle), and
// every sample the source gives and each augmentation gives back must have its instances in step
// (one entry per box in each field, or none).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/graph/recent_images.h"
#include "runtime/graph/source_image_store.h"
#include "runtime/pipeline/pipeline.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/fields.h"
#include "yoloflow/rng.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

// An augmentation of the chain failed on a sample: which one (0-based in the chain) and why
// (the plugin's own message). Callers name the stage the way their users know it.
class ChainStageError : public std::runtime_error {
 public:
  ChainStageError(std::size_t stage, const std::string& message) : std::runtime_error(message), stage_(stage) {}
  std::size_t stage() const { return stage_; }

 private:
  std::size_t stage_;
};

// The contracts of a chain as its loaders enforce them.
struct ChainFields {
  // Names the source when a sample it gives has instances out of step: "source 'x' (stages.source)".
  std::string source = "the source";
  // The fields each augmentation keeps, in chain order. An augmentation left out keeps boxes only
  // (the default of one that declares nothing).
  std::vector<Fields> keeps;
};
// A pipeline's: its source's name and its augmentations' contracts (their kind's default where
// they declare none).
ChainFields chain_fields(const Pipeline& pipeline);

class StageSampleLoaders {
 public:
  // `chain`: the pipeline's augmentations in order (not owned; they outlive this object).
  // `recent`: decoded samples to reuse and to fill (not owned; null: none).
  StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain, std::uint64_t epoch_seed, int imgsz,
                     int epoch, RecentImages* recent = nullptr, ChainFields fields = {});
  ~StageSampleLoaders();
  StageSampleLoaders(const StageSampleLoaders&) = delete;
  StageSampleLoaders& operator=(const StageSampleLoaders&) = delete;

  // The loader for augmentation `stage` (0-based in the chain), for samples made with no
  // recent samples. Thread-safe.
  SampleLoader& for_stage(std::size_t stage);

  // The source's sample `index` as the pipeline's own sample: from the RecentImages store
  // when it holds it, else loaded and kept there. Throws what the source throws, and
  // yoloflow::Error naming the source when the sample's instances are out of step.
  Sample load_source(std::size_t index);

  // Runs the chain's first `stages` augmentations over `sample`, drawing from `rng`, each with
  // its stage's loader and `recent` (the samples loaded before this one; the other samples a
  // stage loads are made with the same): the one per-sample loop of the graph runner,
  // AugmentedSamples and the loaders themselves. Throws ChainStageError naming the stage that
  // failed on `sample` (a mosaic whose other sample failed in an earlier stage: the mosaic,
  // with that message), or that gave it back with its instances out of step. Thread-safe.
  // Whether the chain plans its pixels (nothing writes into a decoded image): the RecentImages
  // store then shares its pixels instead of copying them. Set before loading.
  void share_decoded_pixels(bool shared) { share_decoded_ = shared; }
  // Where decoded source images may be kept (not owned; null: nowhere), for `key` (the pass's
  // image size and source parameters). Consulted only while decoded pixels are shared.
  void keep_source_images(SourceImageStore* store, std::string key) {
    kept_images_ = store;
    kept_key_ = std::move(key);
  }
  // `plan_pixels`: AugmentContext::plan_pixels, for the pipeline's own samples and the other
  // samples its stages load (a mixup's other sample comes planned through the stages before it).
  void apply(Sample& sample, Rng& rng, std::size_t stages, RecentSamples recent = {}, bool plan_pixels = false);

 private:
  class Loader;
  // Sample `index` as it reaches stage `stage`, its earlier stages made with `recent`, planning
  // their pixels when `plan_pixels` (the stage asking plans its own).
  Sample load(std::size_t stage, std::size_t index, RecentSamples recent, bool plan_pixels = false);
  // The source's sample `index`, its instances checked.
  Sample from_source(std::size_t index);
  // The store's copy of the source's sample `index` (only while pixels are shared), or nothing.
  std::optional<Sample> from_store(std::size_t index) const;
  // Offers the source's sample `index` to the store: the store's copy when it keeps it, or nothing.
  std::optional<Sample> keep_in_store(std::size_t index, const Sample& sample);
  Fields keeps(std::size_t stage) const { return stage < fields_.keeps.size() ? fields_.keeps[stage] : Fields(); }

  DataSource& source_;
  std::vector<Augmentation*> chain_;
  int imgsz_, epoch_;
  RecentImages* recent_;
  ChainFields fields_;
  bool share_decoded_ = false;
  SourceImageStore* kept_images_ = nullptr;
  std::string kept_key_;
  std::vector<std::uint64_t> seeds_;              // each stage's generator stream for other samples
  std::vector<std::unique_ptr<Loader>> loaders_;  // for_stage()
};

}  // namespace yoloflow::core
