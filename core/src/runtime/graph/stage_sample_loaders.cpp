#include "runtime/graph/stage_sample_loaders.h"

#include <utility>

#include "yoloflow/rng.h"

namespace yoloflow::core {

// What stage `stage` sees as its loader while one sample is made: that sample's recent samples
// go with every other sample it loads.
class StageSampleLoaders::Loader final : public SampleLoader {
 public:
  Loader(StageSampleLoaders& owner, std::size_t stage, RecentSamples recent)
      : owner_(owner), stage_(stage), recent_(recent) {}
  std::size_t size() const override { return owner_.source_.size(); }
  Sample load(std::size_t index) override { return owner_.load(stage_, index, recent_); }

 private:
  StageSampleLoaders& owner_;
  std::size_t stage_;
  RecentSamples recent_;
};

StageSampleLoaders::StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain,
                                       std::uint64_t epoch_seed, int imgsz, int epoch, RecentImages* recent)
    : source_(source), chain_(std::move(chain)), imgsz_(imgsz), epoch_(epoch), recent_(recent) {
  // A stream per stage, apart from the one the pipeline's own samples draw from.
  constexpr std::uint64_t kOtherSamples = 0x6f74686572ULL;  // "other"
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    seeds_.push_back(Rng::mix(Rng::mix(epoch_seed, kOtherSamples), static_cast<std::uint64_t>(i)));
    loaders_.push_back(std::make_unique<Loader>(*this, i, RecentSamples{}));
  }
}

Sample StageSampleLoaders::load_source(std::size_t index) {
  if (recent_ != nullptr && recent_->wanted()) {
    if (auto kept = recent_->get(index)) return std::move(*kept);
  }
  Sample sample = source_.load(index);
  if (recent_ != nullptr) recent_->put(index, sample);
  return sample;
}

Sample StageSampleLoaders::load(std::size_t stage, std::size_t index, RecentSamples recent) {
  std::optional<Sample> kept;
  if (recent_ != nullptr) kept = recent_->get(index);
  Sample sample = kept ? std::move(*kept) : source_.load(index);
  if (stage == 0) return sample;
  Rng rng(Rng::mix(seeds_[stage], static_cast<std::uint64_t>(index)));
  apply(sample, rng, stage, recent);
  return sample;
}

void StageSampleLoaders::apply(Sample& sample, Rng& rng, std::size_t stages, RecentSamples recent) {
  for (std::size_t i = 0; i < stages && i < chain_.size(); ++i) {
    try {
      Loader loader(*this, i, recent);
      AugmentContext context{rng, loader, imgsz_, epoch_, recent};
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
