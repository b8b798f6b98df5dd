#pragma once
// Exponential moving average of a model's float state (parameters and BN buffers), kept in
// fp32, updated with multi-tensor (foreach) ops: decay = d * (1 - exp(-updates / tau)).
// Parameters that do not train (requires_grad false when the average is made: frozen layers,
// the DFL's fixed weights) are copied, so their average stays exactly their value.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace yoloflow::core {

class ModelEma {
 public:
  ModelEma(torch::nn::Module& model, double decay = 0.9999, double tau = 2000.0);
  void update(torch::nn::Module& model);  // no host sync
  // EMA state named like the model's state dict.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  void load_state(const std::map<std::string, torch::Tensor>& state, std::int64_t updates);
  // Copies the EMA values into `model` (for validation/export); returns what was there
  // before so it can be restored.
  std::vector<torch::Tensor> swap_into(torch::nn::Module& model);
  void restore(torch::nn::Module& model, const std::vector<torch::Tensor>& saved);
  std::int64_t updates() const { return updates_; }

 private:
  std::vector<std::string> names_;
  std::vector<torch::Tensor> ema_;  // fp32 copies, same order as names_
  // Indices into ema_ of averaged (floating) and copied (integer, or not trained) entries.
  std::vector<std::size_t> float_index_, other_index_;
  static std::vector<torch::Tensor> model_tensors(torch::nn::Module& model);
  std::int64_t updates_ = 0;
  double decay_, tau_;
};

}  // namespace yoloflow::core
