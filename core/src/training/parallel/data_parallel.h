#pragma once
// What the `train` sink calls to train data-parallel: one object per sink, null in a
// one-process run, so each call site in the sink is one `if (dp_)` line.
//   attach          after the model is on its device: joins the process group, copies rank
//                   0's weights and buffers to every rank, hooks the gradient reducer
//   before_backward whether this backward ends an accumulation window
//   before_step     before unscale/clip: gradients become the sum over ranks
//   mean            a statistic (the epoch's losses) averaged over ranks
//   barrier         the others wait while rank 0 validates and writes
//   rank0_decides   rank 0's yes/no (e.g. early stop) on every rank; also waits for rank 0
//   rank0_value     rank 0's count on every rank (a time budget's planned epochs)
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "training/parallel/gradient_reducer.h"
#include "training/parallel/process_group.h"
#include "runtime/dist/runtime.h"

namespace yoloflow::core::dist {

// The device this rank trains on: a CUDA device without an index becomes cuda:LOCAL_RANK.
inline torch::Device rank_device(const torch::Device& wanted) {
  const DistEnv& env = current_env();
  if (env.distributed() && wanted.is_cuda() && !wanted.has_index()) {
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  }
  return wanted;
}

// Rank 0, or the only process: the one that validates and writes outputs.
inline bool is_main_process() { return current_env().is_main(); }

class DataParallel {
 public:
  // Null when the run is one process.
  static std::unique_ptr<DataParallel> attach(torch::nn::Module& model, const torch::Device& device) {
    ProcessGroup* group = process_group_for(device);
    if (group == nullptr) return nullptr;
    return std::unique_ptr<DataParallel>(new DataParallel(*group, model));
  }

  void before_backward(bool ends_window) { reducer_->expect_sync(ends_window); }
  void before_step() { reducer_->synchronize(); }
  torch::Tensor mean(const torch::Tensor& t) {
    auto sum = t.detach().to(group_.device()).to(torch::kFloat).contiguous().clone();
    group_.all_reduce_sum(sum);
    return (sum / static_cast<double>(group_.size())).to(t.device());
  }
  void barrier() { group_.barrier(); }
  // Decisions only rank 0 can make (it alone validates, so early stop is its call) must reach
  // the other ranks, or they would wait in the next epoch's collectives for a rank that left.
  bool rank0_decides(bool decision) {
    std::vector<torch::Tensor> flag{torch::full({1}, decision ? 1 : 0, torch::TensorOptions().dtype(torch::kInt).device(group_.device()))};
    group_.broadcast(flag, 0);
    return flag[0].item<int>() != 0;
  }
  // Rank 0's count on every rank, where the ranks must agree on it and only rank 0's clock
  // is the run's (the epochs a time budget plans).
  std::int64_t rank0_value(std::int64_t value) {
    std::vector<torch::Tensor> v{torch::full({1}, value, torch::TensorOptions().dtype(torch::kLong).device(group_.device()))};
    group_.broadcast(v, 0);
    return v[0].item<std::int64_t>();
  }
  int world_size() const { return group_.size(); }

 private:
  DataParallel(ProcessGroup& group, torch::nn::Module& model) : group_(group) {
    // Rank 0's initial weights and buffers everywhere (seeds may differ, a resume may not).
    std::vector<torch::Tensor> state;
    std::vector<torch::Tensor> trainable;
    for (auto& p : model.parameters()) {
      state.push_back(p);
      if (p.requires_grad()) trainable.push_back(p);
    }
    for (auto& b : model.buffers()) state.push_back(b);
    group_.broadcast(state, 0);
    reducer_ = std::make_unique<GradientReducer>(group_, std::move(trainable));
  }

  ProcessGroup& group_;
  std::unique_ptr<GradientReducer> reducer_;
};

}  // namespace yoloflow::core::dist
