// The fp16 training step as the host runs it, with both plugins: scale the loss, backward,
// unscale (overflow flag on the device), optimizer step skipped by that flag, scale update.
#include <doctest/doctest.h>

#include <limits>

#include "support/plugins.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"

using namespace yoloflow;

TEST_CASE("fp16 step: a clean step updates, an overflowing step is skipped and backs off") {
  core::PluginManager pm;
  auto opt = test::make_component<Optimizer>(pm, Kind::Optimizer, "sgd", {{"lr0", 0.1}, {"momentum", 0.5}, {"weight_decay", 0.0}},
                                             {640, "optimizer", "optimizer_standard"});
  auto amp = test::make_component<PrecisionStrategy>(pm, Kind::Precision, "amp_fp16", json::object(),
                                                     {640, "precision", "precision_standard"});

  auto w = torch::tensor({1.f, 2.f}).set_requires_grad(true);
  ParamGroup g;
  g.name = "weights";
  g.params = {w};
  opt->setup({g}, OptimizerSetup{});
  auto x = torch::tensor({3.f, -1.f});

  auto run_step = [&](bool inject_inf) {
    w.mutable_grad() = torch::Tensor();
    auto loss = (w * x).sum();
    amp->scale_loss(loss).backward();
    if (inject_inf) w.mutable_grad()[1] = std::numeric_limits<float>::infinity();
    auto found = amp->unscale({w.grad()});
    opt->step(found);
    amp->update(found);
  };
  run_step(false);
  // Unscaled gradient is x; Nesterov first step moves by lr * (1 + momentum) * x.
  CHECK(w[0].item<float>() == doctest::Approx(1 - 0.1 * 1.5 * 3));
  CHECK(w[1].item<float>() == doctest::Approx(2 + 0.1 * 1.5 * 1));
  CHECK(amp->scale() == 65536.0);
  const auto before = w.detach().clone();
  run_step(true);
  CHECK(torch::equal(w.detach(), before));
  CHECK(amp->scale() == 32768.0);
}
