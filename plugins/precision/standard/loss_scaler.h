#pragma once
// Dynamic loss scaling for fp16 training (GradScaler's semantics): the loss is multiplied by
// a scale so small gradients survive fp16; gradients are divided back and checked for
// inf/NaN; an overflow skips the step and halves the scale, and a run of clean steps grows
// it. Scale, tracker and the overflow flag stay on the device: no host synchronisation.
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/optimizer.h"

namespace yoloflow::precision {

struct LossScalerOptions {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});
  void set_options(const LossScalerOptions& options);
  torch::Tensor scale_loss(const torch::Tensor& loss);
  // Divides `grads` in place by the scale; returns a 0-dim float: 1 if any is inf/NaN.
  torch::Tensor unscale(const std::vector<torch::Tensor>& grads);
  void update(const torch::Tensor& found_inf);
  double scale() const;
  NamedTensors state() const;
  void load_state(const std::map<std::string, torch::Tensor>& state);

 private:
  void to_device(const torch::Device& device);
  LossScalerOptions opt_;
  torch::Tensor scale_;    // 0-dim float
  torch::Tensor tracker_;  // 0-dim int32: clean steps since the last change
};

}  // namespace yoloflow::precision
