#include "training/step/frozen_layers.h"

#include <algorithm>

#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

std::string layer_list_text(const std::vector<std::int64_t>& layers) {
  std::string out;
  for (std::size_t i = 0; i < layers.size();) {
    std::size_t j = i;
    while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(layers[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(layers[j]);
    i = j + 1;
  }
  return out;
}

FrozenLayers FrozenLayers::apply(torch::nn::Module& module, const std::vector<std::int64_t>& layers,
                                 std::size_t layer_count, const std::string& where) {
  FrozenLayers f;
  if (layers.empty()) return f;
  f.layers_ = layers;
  std::sort(f.layers_.begin(), f.layers_.end());
  f.layers_.erase(std::unique(f.layers_.begin(), f.layers_.end()), f.layers_.end());
  for (const auto i : f.layers_) {
    if (i < 0 || static_cast<std::size_t>(i) >= layer_count) {
      throw InvalidInput(where + ": layer " + std::to_string(i) + " does not exist; the model has layers 0-" +
                         std::to_string(layer_count - 1));
    }
    f.patterns_.push_back("model." + std::to_string(i) + ".");
  }
  // Ultralytics always adds the DFL, whose weights are a fixed integral in our model anyway.
  f.patterns_.push_back(".dfl");
  std::int64_t frozen_values = 0, trainable_values = 0;
  for (auto& np : module.named_parameters()) {
    auto& p = np.value();
    if (f.frozen(np.key())) {
      YF_LOG_INFO("Freezing layer '" << np.key() << "'");
      if (p.requires_grad()) {
        p.set_requires_grad(false);
        f.parameters_.push_back(np.key());
        frozen_values += p.numel();
      }
    } else if (p.requires_grad()) {
      trainable_values += p.numel();
    }
  }
  const std::string list = layer_list_text(f.layers_);
  if (trainable_values == 0) {
    throw InvalidInput(where + ": freezing layers " + list +
                       " leaves no parameter to train; freeze fewer layers, or list the ones to freeze");
  }
  YF_LOG_INFO("freeze: layers " << list << " and the DFL: " << f.parameters_.size() << " parameter tensors ("
                                << frozen_values << " values) frozen, their batch norms' running statistics kept; "
                                << trainable_values << " values train");
  return f;
}

bool FrozenLayers::frozen(const std::string& name) const {
  return std::any_of(patterns_.begin(), patterns_.end(),
                     [&](const std::string& p) { return name.find(p) != std::string::npos; });
}

void FrozenLayers::train(torch::nn::Module& module) const {
  module.train();
  if (patterns_.empty()) return;
  for (const auto& m : module.named_modules()) {
    if (m.value()->as<torch::nn::BatchNorm2d>() != nullptr && frozen(m.key())) m.value()->eval();
  }
}

}  // namespace yoloflow::core
