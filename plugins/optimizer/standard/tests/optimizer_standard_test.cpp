// The standard optimizers, loaded from their plugin library, against PyTorch's formulas.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include <torch/torch.h>

#include "support/plugin_set.h"
#include "yoloflow/optimizer.h"
// Last: CHECK is doctest's, not LibTorch's glog one.
#include "support/doctest_checks.h"

using namespace yoloflow;

namespace {

std::unique_ptr<Optimizer> make(const std::string& name, const json& params = json::object()) {
  return plugin_test::make_component<Optimizer>(plugin_test::plugins_with("optimizer_standard"), Kind::Optimizer, name, params,
                                         {640, "", "optimizer_standard"});
}

torch::Tensor param(std::vector<float> v) { return torch::tensor(v).set_requires_grad(true); }
void set_grad(const torch::Tensor& p, std::vector<float> g) { p.mutable_grad() = torch::tensor(g); }
std::vector<double> values(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}
void check_close(const torch::Tensor& t, const std::vector<double>& expected) {
  auto v = values(t);
  REQUIRE(v.size() == expected.size());
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

// As the host hands them over: names and parameters, every number 0.
std::vector<ParamGroup> two_groups(const torch::Tensor& w, const torch::Tensor& b) {
  ParamGroup gw;
  gw.name = "weights";
  gw.params = {w};
  ParamGroup gb;
  gb.name = "bias";
  gb.params = {b};
  return {gw, gb};
}

std::map<std::string, torch::Tensor> clone_state(const NamedTensors& s) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [k, v] : s) out[k] = v.clone();
  return out;
}

// Reference Adam/AdamW on doubles (torch.optim semantics).
struct RefAdam {
  std::vector<double> m, v;
  int t = 0;
  void step(std::vector<double>& p, std::vector<double> g, double lr, double b1, double b2,
            double wd, bool decoupled) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (decoupled) p[i] *= 1 - lr * wd; else g[i] += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
      p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + 1e-8);
    }
  }
};

}  // namespace

TEST_CASE("sgd: two Nesterov steps match PyTorch's SGD formula") {
  auto w = param({1.f, -2.f, 3.f});
  auto b = param({0.5f});
  auto opt = make("sgd", {{"lr0", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}});
  opt->setup(two_groups(w, b), OptimizerSetup{});
  // setup() sets every number of every group from the optimizer's parameters...
  for (const auto& g : opt->groups()) {
    CHECK(g.lr == doctest::Approx(0.1));
    CHECK(g.initial_lr == doctest::Approx(0.1));
    CHECK(g.momentum == doctest::Approx(0.9));
    CHECK(g.weight_decay == doctest::Approx(0.01));
  }
  CHECK(opt->warmup_traits().bias_lr);
  CHECK(opt->warmup_traits().momentum);
  opt->groups()[1].weight_decay = 0.0;  // ...and the host takes decay off the biases
  CHECK(opt->description() == "SGD(lr=0.1, momentum=0.9, nesterov=True)");

  std::vector<double> p{1, -2, 3}, buf(3, 0.0), pb{0.5}, bufb{0.0};
  const double lr = 0.1, m = 0.9, wd = 0.01;
  const std::vector<std::vector<float>> grads{{0.5f, 0.1f, -0.3f}, {-0.2f, 0.4f, 0.05f}};
  for (int s = 0; s < 2; ++s) {
    set_grad(w, grads[s]);
    set_grad(b, {0.25f});
    opt->step(torch::Tensor());
    for (int i = 0; i < 3; ++i) {
      const double d = grads[s][i] + wd * p[i];
      buf[i] = m * buf[i] + d;  // first step: buf = d (dampening 0)
      p[i] -= lr * (d + m * buf[i]);
    }
    bufb[0] = m * bufb[0] + 0.25;  // bias group: no weight decay
    pb[0] -= lr * (0.25 + m * bufb[0]);
  }
  check_close(w, p);
  check_close(b, pb);
}

TEST_CASE("sgd without Nesterov steps along the momentum buffer") {
  auto w = param({1.f, 2.f});
  auto opt = make("sgd", {{"lr0", 0.5}, {"momentum", 0.5}, {"nesterov", false}, {"weight_decay", 0.0}});
  ParamGroup g;
  g.name = "weights";
  g.params = {w};
  opt->setup({g}, OptimizerSetup{});
  set_grad(w, {1.f, -1.f});
  opt->step(torch::Tensor());
  opt->step(torch::Tensor());  // buf = 1.5 g; total step 0.5 * (1 + 1.5) g
  check_close(w, {1 - 1.25, 2 + 1.25});
}

TEST_CASE("adam and adamw: two steps match the closed form with bias correction") {
  for (const bool decoupled : {false, true}) {
    CAPTURE(decoupled);
    auto w = param({1.f, -2.f});
    auto opt = make(decoupled ? "adamw" : "adam", {{"lr0", 0.01}, {"momentum", 0.9}, {"weight_decay", 0.1}});
    ParamGroup g;
    g.name = "weights";
    g.params = {w};
    opt->setup({g}, OptimizerSetup{});
    // Warmup leaves Adam's beta1 alone (Ultralytics' groups carry betas, not a momentum).
    CHECK(opt->warmup_traits().bias_lr);
    CHECK_FALSE(opt->warmup_traits().momentum);
    CHECK(opt->description() == std::string(decoupled ? "AdamW" : "Adam") + "(lr=0.01, betas=(0.9, 0.999))");
    RefAdam ref;
    std::vector<double> p{1, -2};
    const std::vector<std::vector<float>> grads{{0.5f, -0.1f}, {0.3f, 0.2f}};
    for (const auto& gr : grads) {
      set_grad(w, gr);
      opt->step(torch::Tensor());
      ref.step(p, {gr[0], gr[1]}, 0.01, 0.9, 0.999, 0.1, decoupled);
    }
    check_close(w, p);
  }
}

// torch.optim's NAdam, RAdam, Adamax and RMSprop on one problem: two groups (weights with weight decay
// 0.01, a bias without), lr 0.01, momentum 0.9 (beta1 for NAdam and RAdam), 8 steps of the
// gradients below. The expected values were computed once, offline, with PyTorch 1.13:
//   w = torch.tensor([1., -2., 3.], requires_grad=True); b = torch.tensor([.5], requires_grad=True)
//   opt = torch.optim.NAdam([{"params": [w], "weight_decay": 0.01}, {"params": [b], "weight_decay": 0.}],
//                           lr=0.01, betas=(0.9, 0.999), momentum_decay=4e-3, foreach=True)
//     (RAdam and Adamax: lr=0.01, betas=(0.9, 0.999); RMSprop: lr=0.01, momentum=0.9, alpha=0.99, eps=1e-8)
//   for s in range(8): w.grad = torch.tensor(GRADS_W[s]); b.grad = torch.tensor(GRADS_B[s]); opt.step()
// printing w and b after steps 1 and 8 (RAdam's steps 1-5 take the unrectified branch, 6-8 the
// rectified one). NAdam with foreach=True: 1.13's single-tensor NAdam multiplies one mu too many
// into the next step's momentum product (PyTorch 2 corrected it); its foreach path, PyTorch 2
// and the documented algorithm agree.
TEST_CASE("nadam, radam, adamax and rmsprop match torch.optim's NAdam, RAdam, Adamax and RMSprop") {
  const std::vector<std::vector<float>> grads_w{{0.5f, 0.1f, -0.3f},  {-0.2f, 0.4f, 0.05f}, {0.3f, -0.25f, 0.6f},
                                                {0.1f, 0.2f, -0.1f},  {-0.4f, 0.05f, 0.2f}, {0.25f, -0.3f, -0.15f},
                                                {0.05f, 0.35f, 0.4f}, {-0.1f, -0.2f, 0.3f}};
  const std::vector<float> grads_b{0.25f, -0.1f, 0.15f, 0.3f, -0.05f, 0.2f, -0.3f, 0.1f};
  struct Expected {
    std::string name, description;
    bool momentum_warmup;
    std::vector<double> w1, b1, w8, b8;
  };
  const std::vector<Expected> cases{
      {"nadam", "NAdam(lr=0.01, betas=(0.9, 0.999))", false,
       {0.989435494, -2.01056457, 3.01056457}, {0.489435494},
       {0.984610021, -2.01662779, 2.98022032}, {0.475043982}},
      {"radam", "RAdam(lr=0.01, betas=(0.9, 0.999))", false,
       {0.994899988, -2.00079989, 3.00270009}, {0.497500002},
       {0.989076614, -2.005373, 2.99891353}, {0.492919713}},
      {"adamax", "Adamax(lr=0.01, betas=(0.9, 0.999))", false,
       {0.99000001, -2.00999999, 3.00999999}, {0.49000001},
       {0.974738896, -2.02321362, 2.9999454}, {0.467286527}},
      {"rmsprop", "RMSprop(lr=0.01, momentum=0.9)", true,
       {0.900000036, -2.0999999, 3.0999999}, {0.400000036},
       {0.404476583, -2.87992215, 2.83264828}, {-0.382295012}},
  };
  for (const auto& e : cases) {
    CAPTURE(e.name);
    auto w = param({1.f, -2.f, 3.f});
    auto b = param({0.5f});
    auto opt = make(e.name, {{"lr0", 0.01}, {"momentum", 0.9}, {"weight_decay", 0.01}});
    opt->setup(two_groups(w, b), OptimizerSetup{});
    opt->groups()[1].weight_decay = 0.0;
    CHECK(opt->description() == e.description);
    CHECK(opt->warmup_traits().bias_lr);
    // Ultralytics' groups carry a `momentum` for RMSprop (warmup ramps it) and betas for the others.
    CHECK(opt->warmup_traits().momentum == e.momentum_warmup);
    for (std::size_t s = 0; s < grads_w.size(); ++s) {
      set_grad(w, grads_w[s]);
      set_grad(b, {grads_b[s]});
      opt->step(torch::Tensor());
      if (s == 0) {
        check_close(w, e.w1);
        check_close(b, e.b1);
      }
    }
    check_close(w, e.w8);
    check_close(b, e.b8);
  }
}

TEST_CASE("a skipped step leaves parameters and state unchanged, without a host decision") {
  for (const std::string name : {"sgd", "adam", "adamw", "nadam", "radam", "adamax", "rmsprop"}) {
    CAPTURE(name);
    auto w = param({1.f, -2.f, 3.f});
    auto b = param({0.5f});
    auto opt = make(name);
    opt->setup(two_groups(w, b), OptimizerSetup{});
    set_grad(w, {0.5f, 0.1f, -0.3f});
    set_grad(b, {0.2f});
    opt->step(torch::Tensor());
    const auto w_before = w.detach().clone(), b_before = b.detach().clone();
    const auto state_before = clone_state(opt->state());

    const float inf = std::numeric_limits<float>::infinity();
    set_grad(w, {inf, std::nanf(""), 1.f});
    set_grad(b, {-inf});
    opt->step(torch::ones({}));
    CHECK(torch::equal(w.detach(), w_before));
    CHECK(torch::equal(b.detach(), b_before));
    for (const auto& [k, v] : opt->state()) {
      CAPTURE(k);
      CHECK(torch::equal(v, state_before.at(k)));
    }

    // A skipped first step too (NAdam's momentum product is still 1 then).
    auto w0 = param({1.f, -2.f, 3.f});
    auto b0 = param({0.5f});
    auto fresh = make(name);
    fresh->setup(two_groups(w0, b0), OptimizerSetup{});
    set_grad(w0, {inf, 1.f, 1.f});
    set_grad(b0, {1.f});
    fresh->step(torch::ones({}));
    CHECK(torch::equal(w0.detach(), torch::tensor({1.f, -2.f, 3.f})));
    CHECK(torch::equal(b0.detach(), torch::tensor({0.5f})));
    for (const auto& [k, v] : fresh->state()) {
      CAPTURE(k);
      CHECK(torch::isfinite(v).all().item<bool>());
    }

    // A zero flag steps exactly like no flag.
    auto w2 = param({1.f, -2.f, 3.f});
    auto b2 = param({0.5f});
    auto ref = make(name);
    ref->setup(two_groups(w2, b2), OptimizerSetup{});
    for (int s = 0; s < 2; ++s) {
      set_grad(w, {0.5f, 0.1f, -0.3f});
      set_grad(b, {0.2f});
      set_grad(w2, {0.5f, 0.1f, -0.3f});
      set_grad(b2, {0.2f});
      if (s == 1) opt->step(torch::zeros({}));
      ref->step(torch::Tensor());
    }
    CHECK(torch::allclose(w.detach(), w2.detach(), 1e-6, 1e-7));
    CHECK(torch::allclose(b.detach(), b2.detach(), 1e-6, 1e-7));
  }
}

TEST_CASE("auto follows Ultralytics' rule") {
  auto w = param({1.f});
  ParamGroup g;
  g.name = "weights";
  g.params = {w};
  SUBCASE("long runs get SGD lr 0.01 momentum 0.9") {
    auto opt = make("auto", {{"lr0", 0.05}});
    OptimizerSetup s;
    s.total_iterations = 20000;
    opt->setup({g}, s);
    CHECK(opt->groups()[0].initial_lr == doctest::Approx(0.01));
    CHECK(opt->groups()[0].momentum == doctest::Approx(0.9));
    CHECK(opt->description().find("SGD(lr=0.01, momentum=0.9, nesterov=True)") == 0);
    CHECK(opt->description().find("20000 iterations > 10000") != std::string::npos);
    // Ultralytics' auto drops the bias warmup whatever it picks; SGD's momentum still warms up.
    CHECK_FALSE(opt->warmup_traits().bias_lr);
    CHECK(opt->warmup_traits().momentum);
  }
  SUBCASE("short runs get AdamW lr round(0.002 * 5 / (4 + nc), 6), beta1 0.9") {
    auto opt = make("auto");
    OptimizerSetup s;
    s.total_iterations = 10000;
    s.nc = 80;
    opt->setup({g}, s);
    CHECK(opt->groups()[0].initial_lr == doctest::Approx(0.000119).epsilon(1e-9));
    CHECK(opt->groups()[0].lr == doctest::Approx(0.000119).epsilon(1e-9));
    CHECK(opt->groups()[0].momentum == doctest::Approx(0.9));
    CHECK(opt->description().find("AdamW(lr=0.000119, betas=(0.9, 0.999))") == 0);
    CHECK_FALSE(opt->warmup_traits().bias_lr);
    CHECK_FALSE(opt->warmup_traits().momentum);
    set_grad(w, {1.f});
    opt->step(torch::Tensor());
    CHECK(w.item<float>() == doctest::Approx(1.0 - 0.000119).epsilon(1e-6));  // first Adam step = lr
  }
}

TEST_CASE("optimizer state round trip continues identically") {
  for (const std::string name : {"sgd", "adamw", "nadam", "radam", "adamax", "rmsprop"}) {
    CAPTURE(name);
    auto w = param({1.f, -2.f, 3.f});
    auto b = param({0.5f});
    auto a = make(name);
    a->setup(two_groups(w, b), OptimizerSetup{});
    for (int s = 0; s < 2; ++s) {
      set_grad(w, {0.5f * (s + 1), 0.1f, -0.3f});
      set_grad(b, {0.2f});
      a->step(torch::Tensor());
    }
    auto saved = clone_state(a->state());
    if (name == "nadam") CHECK(saved.count("weights.mu_product") == 1);  // its momentum schedule travels too
    auto w2 = w.detach().clone().set_requires_grad(true);
    auto b2 = b.detach().clone().set_requires_grad(true);
    auto c = make(name);
    c->setup(two_groups(w2, b2), OptimizerSetup{});
    c->load_state(saved);
    set_grad(w, {0.7f, -0.4f, 0.2f});
    set_grad(w2, {0.7f, -0.4f, 0.2f});
    set_grad(b, {0.1f});
    set_grad(b2, {0.1f});
    a->step(torch::Tensor());
    c->step(torch::Tensor());
    CHECK(torch::equal(w.detach(), w2.detach()));
    CHECK(torch::equal(b.detach(), b2.detach()));
    saved.erase("weights.step");
    CHECK_THROWS_WITH(c->load_state(saved), doctest::Contains("weights.step"));
  }
}
