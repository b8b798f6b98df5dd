// Model EMA: decay schedule, BN buffers, integer counters, swap/restore, state round trip.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "training/callbacks/model_ema.h"

using namespace yoloflow::core;

namespace {
struct Net : torch::nn::Module {
  Net() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return bn(fc(x)); }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

void fill_all(Net& net, double v) {
  torch::NoGradGuard ng;
  for (auto& p : net.parameters()) p.fill_(v);
  net.bn->running_mean.fill_(v);
  net.bn->running_var.fill_(v);
}
}  // namespace

TEST_CASE("EMA follows decay * (1 - exp(-updates / tau)) exactly") {
  Net net;
  fill_all(net, 1.0);
  const double decay = 0.9, tau = 2.0;
  ModelEma ema(net, decay, tau);
  double expected = 1.0;
  for (int k = 1; k <= 6; ++k) {
    const double v = 2.0 * k;  // the model moves every step
    fill_all(net, v);
    ema.update(net);
    const double d = decay * (1.0 - std::exp(-k / tau));
    expected = d * expected + (1 - d) * v;
  }
  CHECK(ema.updates() == 6);
  int checked = 0;
  for (const auto& [name, t] : ema.state()) {
    if (name == "bn.num_batches_tracked") continue;
    CHECK((t.scalar_type() == torch::kFloat));
    CHECK(t.min().item<double>() == doctest::Approx(expected).epsilon(1e-6));
    CHECK(t.max().item<double>() == doctest::Approx(expected).epsilon(1e-6));
    ++checked;
  }
  CHECK(checked == 6);  // fc.weight, fc.bias, bn.weight, bn.bias, running_mean, running_var
}

TEST_CASE("EMA copies integer buffers instead of averaging them") {
  Net net;
  ModelEma ema(net);
  net.train();
  for (int i = 0; i < 3; ++i) net.forward(torch::randn({4, 3}));
  ema.update(net);
  const auto st = ema.state();
  std::map<std::string, torch::Tensor> s(st.begin(), st.end());
  REQUIRE(s.count("bn.num_batches_tracked"));
  CHECK((s["bn.num_batches_tracked"].scalar_type() == torch::kLong));
  CHECK(s["bn.num_batches_tracked"].item<int64_t>() == 3);
}

TEST_CASE("EMA keeps a parameter that does not train (a frozen layer) exactly, and averages the rest") {
  Net net;
  fill_all(net, 1.0);
  net.fc->weight.set_requires_grad(false);
  ModelEma ema(net, 0.9999, 1.0);
  {
    torch::NoGradGuard ng;
    // Averaged, the weight's EMA would lie between 1 and 0.1; copied, it is the weight.
    net.fc->weight.fill_(0.1f);
    net.fc->bias.fill_(3.0f);
  }
  for (int k = 0; k < 5; ++k) ema.update(net);
  const auto st = ema.state();
  std::map<std::string, torch::Tensor> s(st.begin(), st.end());
  CHECK(torch::equal(s["fc.weight"], net.fc->weight.detach()));
  CHECK(s["fc.bias"].max().item<float>() > 1.5f);  // averaging towards 3
  CHECK(s["fc.bias"].max().item<float>() < 3.0f);
}

TEST_CASE("EMA swaps into the model for validation and restores the raw weights") {
  Net net;
  fill_all(net, 1.0);
  ModelEma ema(net, 0.5, 1e-9);  // decay 0.5 from the first update
  fill_all(net, 3.0);
  ema.update(net);  // EMA = 2
  auto saved = ema.swap_into(net);
  CHECK(net.fc->weight.min().item<float>() == doctest::Approx(2.0));
  CHECK(net.bn->running_var.max().item<float>() == doctest::Approx(2.0));
  ema.restore(net, saved);
  CHECK(net.fc->weight.min().item<float>() == doctest::Approx(3.0));
  CHECK(net.bn->running_mean.max().item<float>() == doctest::Approx(3.0));
  CHECK(net.fc->weight.requires_grad());
}

TEST_CASE("EMA state round trip continues identically") {
  Net net;
  torch::manual_seed(0);
  ModelEma a(net, 0.9, 3.0);
  for (int i = 0; i < 3; ++i) {
    fill_all(net, i + 0.5);
    a.update(net);
  }
  const auto sa = a.state();
  std::map<std::string, torch::Tensor> state;
  for (const auto& [k, v] : sa) state[k] = v.clone();
  Net other;
  ModelEma b(other, 0.9, 3.0);
  b.load_state(state, a.updates());
  fill_all(net, 7.0);
  a.update(net);
  b.update(net);
  const auto s1 = a.state(), s2 = b.state();
  REQUIRE(s1.size() == s2.size());
  for (std::size_t i = 0; i < s1.size(); ++i) {
    CHECK(s1[i].first == s2[i].first);
    CHECK(torch::equal(s1[i].second, s2[i].second));
  }
  state.erase("fc.bias");
  CHECK_THROWS_WITH(b.load_state(state, 1), doctest::Contains("fc.bias"));
}
