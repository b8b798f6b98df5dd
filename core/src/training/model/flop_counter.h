#pragma once
// Counts the multiply-adds of convolutions and matrix products that run on this thread,
// from the actual tensor shapes each op receives (ATen RecordFunction callbacks): works for
// any model without per-layer formulas.
#include <cstdint>

#include <ATen/record_function.h>

#include "yoloflow/model.h"

namespace yoloflow::core {

class FlopCounter {
 public:
  FlopCounter();   // starts counting on this thread
  ~FlopCounter();  // stops
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;
  double macs() const;

 private:
  at::CallbackHandle handle_;
};

// GFLOPs (2 x multiply-adds / 1e9, Ultralytics' convention) of one forward pass of a
// 1x3xSxS image in eval mode; the model's training flag is restored afterwards.
double forward_gflops(Model& model, int imgsz);

}  // namespace yoloflow::core
