#include "runtime/graph/augmented_samples.h"

#include "runtime/graph/epoch_order.h"
#include "runtime/graph/failure_text.h"
#include "runtime/graph/stage_sample_loaders.h"
#include "runtime/pipeline/component_factory.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {

AugmentedSamples::AugmentedSamples(const Pipeline& p, const Registry& registry, int epoch, const json& source_overrides)
    : epoch_(epoch), imgsz_(p.imgsz(epoch)), epoch_seed_(epoch_seed(p.seed, epoch)) {
  StageContext context;
  context.imgsz = imgsz_;
  context.epoch = epoch;
  context.epochs = p.epochs;
  context.seed = p.seed;
  context.deterministic = p.deterministic;
  context.workers = 1;
  context.device = "cpu";
  auto make = [&](const std::string& name, const json& overrides) {
    const StageSpec& spec = p.stage(name);
    StageContext c = context;
    c.node = name;
    json params = p.stage_params(name, epoch);
    for (const auto& [k, v] : overrides.items()) params[k] = v;
    return create_configured(registry, spec.kind, spec.plugin, params, spec.path(), c);
  };
  source_.reset(static_cast<DataSource*>(make(p.source, source_overrides).release()));
  for (const auto& a : p.augmentations) {
    chain_.emplace_back(static_cast<Augmentation*>(make(a, json::object()).release()));
    chain_labels_.push_back(stage_text(p.stage(a)));
  }
  std::vector<Augmentation*> chain;
  for (auto& a : chain_) chain.push_back(a.get());
  // The mosaic's recent samples as the graph runner gives them (one process).
  const json batch = p.stage_params(p.batcher, epoch).value("batch", json());
  recent_window_ = recent_window(source_->size(), batch.is_number_integer() ? batch.get<std::int64_t>() : 0);
  recent_images_.reset(recent_window_);
  loaders_ = std::make_unique<StageSampleLoaders>(*source_, chain, epoch_seed_, imgsz_, epoch, &recent_images_,
                                                  chain_fields(p));
  order_ = epoch_order(source_->size(), p.shuffle, p.seed, epoch);
  if (epoch > 0) previous_order_ = epoch_order(source_->size(), p.shuffle, p.seed, epoch - 1);
}

AugmentedSamples::~AugmentedSamples() = default;

Sample AugmentedSamples::at(std::size_t position) {
  Sample s = loaders_->load_source(order_.at(position));
  s.sequence = position;
  Rng rng(sample_seed(epoch_seed_, static_cast<std::uint64_t>(position)));  // as the graph runner
  const std::vector<std::size_t> recent = recent_indexes(order_, previous_order_, position, recent_window_);
  try {
    loaders_->apply(s, rng, chain_.size(), RecentSamples{recent.data(), recent.size()});
  } catch (const ChainStageError& e) {
    throw Error(chain_labels_.at(e.stage()) + " failed on " + sample_text(s.index, s.path) + ": " + e.what());
  }
  return s;
}

}  // namespace yoloflow::core
