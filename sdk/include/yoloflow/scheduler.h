#pragma once
// Scheduler plugins: how the learning rate decays over a training run. The train sink asks
// for one factor per epoch and sets every parameter group's lr to its initial_lr (the
// optimizer's lr0, yoloflow/optimizer.h) times that factor. The warmup of the first
// iterations is the train sink's (warmup_epochs, warmup_bias_lr, warmup_momentum): it ramps
// each group towards initial_lr times the factor of the epoch it is in.
//
// Pipeline JSON, inside the train sink's params:
//   "scheduler": {"plugin": "cosine", "params": {"lrf": 0.01}}
//
// A scheduler holds no state of its own: the factor is a function of the epoch, so a resumed
// run continues on the same curve.
#include "yoloflow/component.h"

namespace yoloflow {

class YOLOFLOW_SDK_API Scheduler : public Component {
 public:
  ~Scheduler() override;
  // The factor for `epoch` (0-based) of a run of `epochs`; 1 = the optimizer's lr0. Called
  // once per batch, so it must be cheap; never called with epochs < 1.
  virtual double lr_factor(int epoch, int epochs) const = 0;
};

}  // namespace yoloflow
