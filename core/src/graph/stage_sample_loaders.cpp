#include "graph/stage_sample_loaders.h"

#include <utility>

#include "yoloflow/rng.h"

namespace yoloflow::core {

class StageSampleLoaders::Loader final : public SampleLoader {
 public:
  Loader(DataSource& source, const std::vector<Augmentation*>& chain,
         const std::vector<std::unique_ptr<Loader>>& loaders, std::size_t stage, std::uint64_t seed, int imgsz,
         int epoch)
      : source_(source), chain_(chain), loaders_(loaders), stage_(stage), seed_(seed), imgsz_(imgsz), epoch_(epoch) {}

  std::size_t size() const override { return source_.size(); }

  Sample load(std::size_t index) override {
    Sample sample = source_.load(index);
    if (stage_ == 0) return sample;
    Rng rng(Rng::mix(seed_, static_cast<std::uint64_t>(index)));
    for (std::size_t j = 0; j < stage_; ++j) {
      AugmentContext context{rng, *loaders_[j], imgsz_, epoch_};
      chain_[j]->apply(sample, context);
    }
    return sample;
  }

 private:
  DataSource& source_;
  const std::vector<Augmentation*>& chain_;
  const std::vector<std::unique_ptr<Loader>>& loaders_;
  std::size_t stage_;
  std::uint64_t seed_;
  int imgsz_, epoch_;
};

StageSampleLoaders::StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain,
                                       std::uint64_t epoch_seed, int imgsz, int epoch)
    : chain_(std::move(chain)) {
  // A stream per stage, apart from the one the pipeline's own samples draw from.
  constexpr std::uint64_t kOtherSamples = 0x6f74686572ULL;  // "other"
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    const std::uint64_t seed = Rng::mix(Rng::mix(epoch_seed, kOtherSamples), static_cast<std::uint64_t>(i));
    loaders_.push_back(std::make_unique<Loader>(source, chain_, loaders_, i, seed, imgsz, epoch));
  }
}

StageSampleLoaders::~StageSampleLoaders() = default;

SampleLoader& StageSampleLoaders::for_stage(std::size_t stage) { return *loaders_.at(stage); }

}  // namespace yoloflow::core
