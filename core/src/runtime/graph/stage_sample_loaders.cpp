#include "runtime/graph/stage_sample_loaders.h"

#include <utility>

#include "runtime/pipeline/component_spec.h"
#include "runtime/plugin/stage_flow.h"
#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {

ChainFields chain_fields(const Pipeline& pipeline) {
  ChainFields fields;
  const StageSpec& source = pipeline.stage(pipeline.source);
  fields.source = source.label() + " (" + source.path() + ")";
  for (const auto& name : pipeline.augmentations) {
    fields.keeps.push_back(annotation_contract(pipeline.stage(name).component->info).keeps);
  }
  return fields;
}

// What stage `stage` sees as its loader while one sample is made: that sample's recent samples
// go with every other sample it loads.
// A stage that plans its pixels gets other samples planned too (mixup's, cutmix's).
class StageSampleLoaders::Loader final : public SampleLoader {
 public:
  Loader(StageSampleLoaders& owner, std::size_t stage, RecentSamples recent, bool plan_pixels = false)
      : owner_(owner), stage_(stage), recent_(recent), plan_pixels_(plan_pixels) {}
  std::size_t size() const override { return owner_.source_.size(); }
  Sample load(std::size_t index) override { return owner_.load(stage_, index, recent_, plan_pixels_); }

 private:
  StageSampleLoaders& owner_;
  std::size_t stage_;
  RecentSamples recent_;
  bool plan_pixels_;
};

StageSampleLoaders::StageSampleLoaders(DataSource& source, std::vector<Augmentation*> chain,
                                       std::uint64_t epoch_seed, int imgsz, int epoch, RecentImages* recent,
                                       ChainFields fields)
    : source_(source), chain_(std::move(chain)), imgsz_(imgsz), epoch_(epoch), recent_(recent),
      fields_(std::move(fields)) {
  // A stream per stage, apart from the one the pipeline's own samples draw from.
  constexpr std::uint64_t kOtherSamples = 0x6f74686572ULL;  // "other"
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    seeds_.push_back(Rng::mix(Rng::mix(epoch_seed, kOtherSamples), static_cast<std::uint64_t>(i)));
    loaders_.push_back(std::make_unique<Loader>(*this, i, RecentSamples{}));
  }
}

Sample StageSampleLoaders::from_source(std::size_t index) {
  Sample sample = source_.load(index);
  // A source's bug, or a label file it read wrongly: every stage after it selects and moves
  // instances by index, and would pair a box with another instance's outline.
  if (const std::string problem = instance_problem(sample); !problem.empty()) {
    throw Error(fields_.source + " gave a sample whose instances do not match: " + problem);
  }
  return sample;
}

std::optional<Sample> StageSampleLoaders::from_store(std::size_t index) const {
  if (kept_images_ == nullptr || !share_decoded_) return std::nullopt;
  return kept_images_->get(kept_key_, index);
}

std::optional<Sample> StageSampleLoaders::keep_in_store(std::size_t index, const Sample& sample) {
  if (kept_images_ == nullptr || !share_decoded_) return std::nullopt;
  kept_images_->offer(kept_key_, index, sample);
  return kept_images_->get(kept_key_, index);
}

// A sample the store keeps is handed out as the store has it (its pixels read where they are, not
// uploaded again with its batch) and goes to no RecentImages store. A sample found among the
// recent ones is offered too: they outlive an epoch, and the store opens between two.
Sample StageSampleLoaders::load_source(std::size_t index) {
  if (auto stored = from_store(index)) return std::move(*stored);
  std::optional<Sample> recent;
  if (recent_ != nullptr && recent_->wanted()) recent = recent_->get(index, share_decoded_);
  Sample sample = recent ? std::move(*recent) : from_source(index);
  if (auto stored = keep_in_store(index, sample)) return std::move(*stored);
  if (!recent && recent_ != nullptr) recent_->put(index, sample, share_decoded_);
  return sample;
}

Sample StageSampleLoaders::load(std::size_t stage, std::size_t index, RecentSamples recent, bool plan_pixels) {
  // Where no stage writes into its pixels here (none runs, or the earlier ones plan), the sample
  // may share the decoded pixels and come from the store; an earlier stage making pixels may write.
  const bool unwritten = stage == 0 || plan_pixels;
  std::optional<Sample> stored = unwritten ? from_store(index) : std::nullopt;
  std::optional<Sample> kept;
  if (!stored && recent_ != nullptr) kept = recent_->get(index, share_decoded_ && unwritten);
  Sample sample = stored ? std::move(*stored) : kept ? std::move(*kept) : from_source(index);
  if (!stored && unwritten) {
    if (auto now = keep_in_store(index, sample)) sample = std::move(*now);
  }
  if (stage > 0) {
    Rng rng(Rng::mix(seeds_[stage], static_cast<std::uint64_t>(index)));
    apply(sample, rng, stage, recent, plan_pixels);
  }
  // As stage `stage`'s own sample: without the fields it does not keep.
  remove_fields(sample, keeps(stage));
  return sample;
}

void StageSampleLoaders::apply(Sample& sample, Rng& rng, std::size_t stages, RecentSamples recent, bool plan_pixels) {
  for (std::size_t i = 0; i < stages && i < chain_.size(); ++i) {
    // Clearing vectors: no copy. A field the stage does not handle would come out unmoved.
    remove_fields(sample, keeps(i));
    try {
      Loader loader(*this, i, recent, plan_pixels);
      AugmentContext context{rng, loader, imgsz_, epoch_, recent, plan_pixels};
      chain_[i]->apply(sample, context);
    } catch (const std::exception& e) {
      throw ChainStageError(i, e.what());
    } catch (...) {
      throw ChainStageError(i, "unknown exception");
    }
    if (const std::string problem = instance_problem(sample); !problem.empty()) {
      throw ChainStageError(i, "it gave back a sample whose instances do not match: " + problem +
                                   " (each field it keeps, " + (keeps(i) | Field::Boxes).names() +
                                   ", holds one entry per box or none: yoloflow/annotations.h selects and moves "
                                   "them together)");
    }
  }
}

StageSampleLoaders::~StageSampleLoaders() = default;

SampleLoader& StageSampleLoaders::for_stage(std::size_t stage) { return *loaders_.at(stage); }

}  // namespace yoloflow::core
