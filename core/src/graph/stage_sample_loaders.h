#pragma once
// What augmentations that load other samples (mosaic, mixup) receive: the other sample as it
// reaches their stage. Stage i's loader reads the source and passes the sample through the
// augmentations before stage i, so mixup after mosaic and random_perspective blends in a
// mosaic-and-perspective image, as Ultralytics' MixUp does with its pre-transform; the first
// stage (mosaic, usually) gets the source's samples as they are. Each load draws from its own
// generator (epoch seed, stage, sample index): results do not depend on threads.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "yoloflow/augmentation.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

class StageSampleLoaders {
 public:
  // `chain`: the pipeline's augmentations in order (not owned; they outlive this object).
  StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain, std::uint64_t epoch_seed, int imgsz,
                     int epoch);
  ~StageSampleLoaders();
  StageSampleLoaders(const StageSampleLoaders&) = delete;
  StageSampleLoaders& operator=(const StageSampleLoaders&) = delete;

  // The loader for augmentation `stage` (0-based in the chain). Thread-safe.
  SampleLoader& for_stage(std::size_t stage);

 private:
  class Loader;
  std::vector<Augmentation*> chain_;
  std::vector<std::unique_ptr<Loader>> loaders_;  // loader i refers to loaders 0..i-1
};

}  // namespace yoloflow::core
