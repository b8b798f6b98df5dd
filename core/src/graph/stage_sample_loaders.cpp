#include "graph/stage_sample_loaders.h"

#include <utility>

#include "yoloflow/rng.h"

namespace yoloflow::core {

class StageSampleLoaders::Loader final : public SampleLoader {
 public:
  Loader(DataSource& source, StageSampleLoaders& owner, std::size_t stage, std::uint64_t seed)
      : source_(source), owner_(owner), stage_(stage), seed_(seed) {}

  std::size_t size() const override { return source_.size(); }

  Sample load(std::size_t index) override {
    Sample sample = source_.load(index);
    if (stage_ == 0) return sample;
    Rng rng(Rng::mix(seed_, static_cast<std::uint64_t>(index)));
    owner_.apply(sample, rng, stage_);
    return sample;
  }

 private:
  DataSource& source_;
  StageSampleLoaders& owner_;
  std::size_t stage_;
  std::uint64_t seed_;
};

StageSampleLoaders::StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain,
                                       std::uint64_t epoch_seed, int imgsz, int epoch)
    : chain_(std::move(chain)), imgsz_(imgsz), epoch_(epoch) {
  // A stream per stage, apart from the one the pipeline's own samples draw from.
  constexpr std::uint64_t kOtherSamples = 0x6f74686572ULL;  // "other"
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    const std::uint64_t seed = Rng::mix(Rng::mix(epoch_seed, kOtherSamples), static_cast<std::uint64_t>(i));
    loaders_.push_back(std::make_unique<Loader>(source, *this, i, seed));
  }
}

void StageSampleLoaders::apply(Sample& sample, Rng& rng, std::size_t stages) {
  for (std::size_t i = 0; i < stages && i < chain_.size(); ++i) {
    try {
      AugmentContext context{rng, *loaders_[i], imgsz_, epoch_};
      chain_[i]->apply(sample, context);
    } catch (const std::exception& e) {
      throw ChainStageError(i, e.what());
    } catch (...) {
      throw ChainStageError(i, "unknown exception");
    }
  }
}

StageSampleLoaders::~StageSampleLoaders() = default;

SampleLoader& StageSampleLoaders::for_stage(std::size_t stage) { return *loaders_.at(stage); }

}  // namespace yoloflow::core
