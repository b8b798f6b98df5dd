// signsgd: an optimizer plugin, written against yoloflow/optimizer.h alone. Sign descent with
// momentum: buf = momentum * buf + grad; p -= lr * (sign(buf) + weight_decay * p).
//
// What the contract asks of an optimizer (yoloflow/optimizer.h):
// - setup() receives the host's three groups ("weights", "norm", "bias") with every number 0
//   and sets lr, initial_lr, momentum and weight_decay on each; the host then scales the
//   weights group's decay to the batch and removes it from norms and biases;
// - step() reads each group's lr and momentum, which the host rewrites before every step
//   (warmup, schedule), and leaves everything unchanged when `skip` says so (fp16 overflow),
//   without reading it on the host;
// - warmup_traits(): a sign update moves every weight by lr whatever the gradient's size, so
//   the bias group's warmup lr of 0.1 would throw the biases about: it is turned off.
// - state()/load_state(): the momentum buffers, so that a resumed run continues exactly.
#include <string>

// Only the operators this file calls, not all of <torch/torch.h>: a rebuild takes seconds.
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros_like.h>

#include "yoloflow/error.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/plugin.h"

namespace {

class SignSgd final : public yoloflow::Optimizer {
 public:
  static yoloflow::Schema schema() {
    yoloflow::Schema s;
    s.add_float("lr0", 1e-4).greater_than(0.0).doc("Step size of each weight per update.");
    s.add_float("momentum", 0.9).range(0.0, 1.0).doc("Decay of the momentum buffer whose sign is followed.");
    s.add_float("weight_decay", 5e-4).min(0.0).doc("Decoupled weight decay for the nominal batch (64 images).");
    return s;
  }

  void configure(const yoloflow::Params& p, const yoloflow::StageContext&) override {
    lr0_ = p.get_float("lr0");
    momentum_ = p.get_float("momentum");
    weight_decay_ = p.get_float("weight_decay");
  }

  void setup(std::vector<yoloflow::ParamGroup> groups, const yoloflow::OptimizerSetup&) override {
    groups_ = std::move(groups);
    buffers_.clear();
    for (auto& g : groups_) {
      g.lr = g.initial_lr = lr0_;
      g.momentum = momentum_;
      g.weight_decay = weight_decay_;
      std::vector<at::Tensor> bufs;
      for (const auto& p : g.params) bufs.push_back(at::zeros_like(p));
      buffers_.push_back(std::move(bufs));
    }
  }

  std::vector<yoloflow::ParamGroup>& groups() override { return groups_; }

  void step(const at::Tensor& skip) override {
    at::NoGradGuard no_grad;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const auto& group = groups_[g];
      for (std::size_t i = 0; i < group.params.size(); ++i) {
        auto p = group.params[i];
        if (!p.grad().defined()) continue;
        // keep = 1 to step, 0 to leave parameter and buffer as they are.
        const auto keep = skip.defined() ? (1 - skip.to(p.dtype())) : at::ones({}, p.options());
        auto& buf = buffers_[g][i];
        const auto next = buf * group.momentum + p.grad();
        buf.copy_(keep * next + (1 - keep) * buf);
        p.sub_(keep * group.lr * (next.sign() + group.weight_decay * p));
      }
    }
  }

  std::string description() const override {
    return "SignSGD(lr=" + std::to_string(lr0_) + ", momentum=" + std::to_string(momentum_) + ")";
  }

  yoloflow::WarmupTraits warmup_traits() const override { return {/*bias_lr=*/false, /*momentum=*/true}; }

  yoloflow::NamedTensors state() const override {
    yoloflow::NamedTensors out;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      for (std::size_t i = 0; i < buffers_[g].size(); ++i) {
        out.emplace_back(groups_[g].name + "." + std::to_string(i) + ".momentum", buffers_[g][i]);
      }
    }
    return out;
  }

  void load_state(const std::map<std::string, at::Tensor>& state) override {
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      for (std::size_t i = 0; i < buffers_[g].size(); ++i) {
        const auto it = state.find(groups_[g].name + "." + std::to_string(i) + ".momentum");
        if (it == state.end()) throw yoloflow::Error("signsgd: the checkpoint has no momentum buffer for " + groups_[g].name);
        buffers_[g][i].copy_(it->second);
      }
    }
  }

 private:
  double lr0_ = 1e-4, momentum_ = 0.9, weight_decay_ = 5e-4;
  std::vector<yoloflow::ParamGroup> groups_;
  std::vector<std::vector<at::Tensor>> buffers_;
};

void register_components(yoloflow::Registrar& r) {
  r.add_optimizer<SignSgd>("signsgd", SignSgd::schema(), "Sign descent with momentum (example optimizer plugin).");
}

}  // namespace

YOLOFLOW_PLUGIN("example_signsgd", "1.0.0", register_components)
