#include "training/parallel/gradient_reducer.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <mutex>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core::dist {

struct GradientReducer::State {
  struct Bucket {
    std::vector<std::size_t> params;  // indices into State::params
    std::size_t ready = 0;
    bool started = false;
    torch::Tensor flat;
    std::unique_ptr<PendingWork> work;
  };
  ProcessGroup* group = nullptr;
  std::vector<torch::Tensor> params;
  std::vector<std::size_t> bucket_of;  // param index -> bucket
  std::vector<char> param_ready;
  std::vector<Bucket> buckets;
  // Keeps each parameter's AccumulateGrad node alive: a parameter holds it weakly, and a
  // new node (without our hook) would be made for the next backward.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::mutex mutex;
  bool sync = false;
  std::size_t next_start = 0;  // buckets start strictly in index order
  std::size_t started_in_backward = 0;

  void start(Bucket& b) {
    std::vector<torch::Tensor> parts;
    parts.reserve(b.params.size());
    for (std::size_t i : b.params) {
      const auto& p = params[i];
      const auto& g = p.grad();
      parts.push_back(g.defined() ? g.detach().reshape(-1) : torch::zeros({p.numel()}, p.options()));
    }
    b.flat = torch::cat(parts);
    b.work = group->all_reduce_sum_async(b.flat);
    b.started = true;
  }

  // A gradient became final during a syncing backward (called on the autograd thread).
  void on_ready(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!sync || param_ready[i]) return;
    param_ready[i] = 1;
    ++buckets[bucket_of[i]].ready;
    while (next_start < buckets.size() && buckets[next_start].ready == buckets[next_start].params.size()) {
      start(buckets[next_start++]);
      ++started_in_backward;
    }
  }
};

namespace {

// Runs after an AccumulateGrad node wrote its parameter's .grad.
class ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  explicit ReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

std::int64_t default_bucket_bytes() {
  const char* v = std::getenv("YOLOFLOW_DIST_BUCKET_MB");
  if (v != nullptr && *v != '\0') {
    char* end = nullptr;
    const double mb = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(mb > 0)) {
      throw InvalidInput(std::string("environment variable YOLOFLOW_DIST_BUCKET_MB='") + v +
                         "' is not a number of MiB > 0");
    }
    return static_cast<std::int64_t>(mb * 1024 * 1024);
  }
  return 8LL << 20;
}

}  // namespace

GradientReducer::GradientReducer(ProcessGroup& group, std::vector<torch::Tensor> params, std::int64_t bucket_bytes)
    : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.group = &group;
  s.params = std::move(params);
  const std::int64_t limit = bucket_bytes > 0 ? bucket_bytes : default_bucket_bytes();
  s.bucket_of.assign(s.params.size(), 0);
  s.param_ready.assign(s.params.size(), 0);
  // Reverse order: backward finishes the last layers first. A bucket holds one dtype.
  std::int64_t bytes = 0;
  for (std::size_t k = s.params.size(); k-- > 0;) {
    const auto& p = s.params[k];
    if (!p.requires_grad()) throw Error("gradient reducer: parameter " + std::to_string(k) + " does not require grad");
    const std::int64_t nb = p.numel() * static_cast<std::int64_t>(p.element_size());
    const bool new_bucket = s.buckets.empty() || bytes + nb > limit ||
                            s.params[s.buckets.back().params.front()].scalar_type() != p.scalar_type();
    if (new_bucket) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    s.buckets.back().params.push_back(k);
    s.bucket_of[k] = s.buckets.size() - 1;
    bytes += nb;
  }
  std::weak_ptr<State> weak = state_;
  for (std::size_t k = 0; k < s.params.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(s.params[k]);
    if (!acc) throw Error("gradient reducer: parameter " + std::to_string(k) + " is not a leaf tensor");
    acc->add_post_hook(std::make_unique<ReadyHook>([weak, k] {
      if (auto state = weak.lock()) state->on_ready(k);
    }));
    s.accumulators.push_back(std::move(acc));
  }
  YF_LOG_DEBUG("gradient reducer: " << s.params.size() << " parameters in " << s.buckets.size() << " buckets of <= "
                                    << limit / (1 << 20) << " MiB");
}

// The hooks stay on the accumulators but hold the state weakly: they do nothing once it is gone.
GradientReducer::~GradientReducer() = default;

void GradientReducer::expect_sync(bool sync) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->sync = sync;
}

void GradientReducer::synchronize() {
  auto& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  // What the backward did not start (a window that ended without a syncing backward, or
  // parameters that got no gradient) starts now, still in bucket order.
  while (s.next_start < s.buckets.size()) s.start(s.buckets[s.next_start++]);
  torch::NoGradGuard no_grad;
  for (auto& b : s.buckets) {
    b.work->wait();
    std::int64_t offset = 0;
    for (std::size_t i : b.params) {
      auto& p = s.params[i];
      const std::int64_t n = p.numel();
      auto sum = b.flat.narrow(0, offset, n).view(p.sizes());
      if (p.grad().defined()) p.mutable_grad().copy_(sum);
      else p.mutable_grad() = sum.clone();
      offset += n;
    }
    b.work.reset();
    b.flat = torch::Tensor();
    b.ready = 0;
    b.started = false;
  }
  std::fill(s.param_ready.begin(), s.param_ready.end(), 0);
  s.next_start = 0;
  s.sync = false;
}

std::size_t GradientReducer::bucket_count() const { return state_->buckets.size(); }

std::size_t GradientReducer::buckets_started_in_backward() const { return state_->started_in_backward; }

}  // namespace yoloflow::core::dist
