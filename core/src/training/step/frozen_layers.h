#pragma once
// Ultralytics' `freeze`: the parameters of the model's first N layers (model.0 .. model.N-1), or
// of the listed layer indices, and always the DFL's (".dfl"), stop training: requires_grad
// false, so they get no gradient, join no optimizer group and keep their value; the batch norms
// inside frozen layers run in eval mode during training, so their running statistics stay as
// loaded too. The model's layer indices are those of its parameter names ("model.<i>.").
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

class FrozenLayers {
 public:
  FrozenLayers() = default;

  // Freezes `layers` of `module`, whose model has `layer_count` layers, printing each parameter
  // it freezes as Ultralytics does ("Freezing layer 'model.0.conv.weight'") and a summary. An
  // index beyond the model's layers, or a freeze that leaves nothing to train, is refused
  // (InvalidInput naming `where`). No layers: nothing is frozen and nothing is printed.
  static FrozenLayers apply(torch::nn::Module& module, const std::vector<std::int64_t>& layers,
                            std::size_t layer_count, const std::string& where);

  // module.train(), then eval mode for the batch norms inside frozen layers.
  void train(torch::nn::Module& module) const;

  const std::vector<std::int64_t>& layers() const { return layers_; }
  // The parameters frozen here, by name, in the module's order.
  const std::vector<std::string>& parameters() const { return parameters_; }

 private:
  bool frozen(const std::string& name) const;

  std::vector<std::int64_t> layers_;
  std::vector<std::string> patterns_;  // "model.<i>." for each layer, and ".dfl"
  std::vector<std::string> parameters_;
};

// `layers` as a short text: "0-9", "0, 3, 5", "2-4, 8".
std::string layer_list_text(const std::vector<std::int64_t>& layers);

}  // namespace yoloflow::core
