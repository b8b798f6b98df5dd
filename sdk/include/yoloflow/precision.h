#pragma once
// Precision-strategy plugins (LibTorch): autocast for forward and loss, loss scaling,
// unscaling and overflow detection, all without host synchronisation.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType, c10::Device; see optimizer.h

#include "yoloflow/component.h"
#include "yoloflow/optimizer.h"

namespace yoloflow {

// Held while forward and loss run; destroying it restores the previous autocast state.
class AutocastScope {
 public:
  virtual ~AutocastScope() = default;
};

class PrecisionStrategy : public Component {
 public:
  ~PrecisionStrategy() override = default;
  // Data type of autocast regions (kFloat means no autocast).
  virtual at::ScalarType compute_dtype() const = 0;
  // True when this strategy can run on `device` ("cpu", "cuda"); false with a reason.
  virtual bool supports(const c10::Device& device, std::string& why_not) const = 0;
  virtual std::unique_ptr<AutocastScope> autocast(const c10::Device& device) = 0;
  // Multiplies the loss by the current scale (identity without loss scaling).
  virtual at::Tensor scale_loss(const at::Tensor& loss) = 0;
  // Divides gradients by the scale in place; returns a 0-dim float tensor on the device that
  // is 1 when any gradient is inf or NaN (the step must be skipped), else 0. Undefined
  // tensor when the strategy never skips.
  virtual at::Tensor unscale(const std::vector<at::Tensor>& grads) = 0;
  // After the optimizer step: grow or back off the scale from `found_inf`.
  virtual void update(const at::Tensor& found_inf) = 0;
  // Current loss scale (reads the device: call off the hot path).
  virtual double scale() const = 0;
  virtual NamedTensors state() const = 0;
  virtual void load_state(const std::map<std::string, at::Tensor>& state) = 0;
};

}  // namespace yoloflow
