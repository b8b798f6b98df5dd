// The standard precision strategies, loaded from their plugin library: fp16 loss scaling on
// synthetic overflows, bf16 autocast on CPU, fp32.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "support/plugin_set.h"
#include "yoloflow/precision.h"
#include "yoloflow/torch_compat.h"

using namespace yoloflow;

namespace {

std::unique_ptr<PrecisionStrategy> make(const std::string& name, const json& params = json::object()) {
  return plugin_test::make_component<PrecisionStrategy>(plugin_test::plugins_with("precision_standard"), Kind::Precision, name,
                                                 params, {640, "", "precision_standard"});
}

const float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("amp_fp16: scaled loss, unscaled gradients, overflow skips and halves the scale") {
  auto fp16 = make("amp_fp16");
  CHECK((fp16->compute_dtype() == torch::kHalf));
  CHECK(fp16->scale() == 65536.0);
  CHECK(fp16->scale_loss(torch::tensor(2.0f)).item<float>() == 131072.0f);

  // Clean gradients come back divided by the scale; no overflow.
  auto g1 = torch::tensor({65536.f * 1.5f, -65536.f});
  auto g2 = torch::tensor({32768.f});
  auto found = fp16->unscale({g1, g2, torch::Tensor()});
  CHECK(found.item<float>() == 0);
  CHECK(g1[0].item<float>() == 1.5f);
  CHECK(g1[1].item<float>() == -1.f);
  CHECK(g2[0].item<float>() == 0.5f);
  fp16->update(found);
  CHECK(fp16->scale() == 65536.0);

  // An inf (or a NaN) anywhere: the flag is set and the scale backs off by half.
  auto bad = torch::tensor({1.f, kInf});
  found = fp16->unscale({g1, bad});
  CHECK(found.item<float>() == 1);
  fp16->update(found);
  CHECK(fp16->scale() == 32768.0);
  auto nan = torch::tensor({std::numeric_limits<float>::quiet_NaN()});
  found = fp16->unscale({nan});
  CHECK(found.item<float>() == 1);
  fp16->update(found);
  CHECK(fp16->scale() == 16384.0);
}

TEST_CASE("amp_fp16: the scale doubles after growth_interval clean steps, state round trip") {
  auto fp16 = make("amp_fp16");
  auto clean = torch::zeros({}, torch::kFloat);
  for (int i = 0; i < 1999; ++i) fp16->update(clean);
  CHECK(fp16->scale() == 65536.0);
  fp16->update(clean);  // the 2000th clean step
  CHECK(fp16->scale() == 131072.0);

  // Save mid-interval; a fresh strategy continues the same count.
  for (int i = 0; i < 1500; ++i) fp16->update(clean);
  std::map<std::string, torch::Tensor> saved;
  for (const auto& [k, v] : fp16->state()) saved[k] = v.clone();
  REQUIRE(saved.count("scale"));
  REQUIRE(saved.count("growth_tracker"));
  auto other = make("amp_fp16");
  other->load_state(saved);
  CHECK(other->scale() == 131072.0);
  for (int i = 0; i < 499; ++i) other->update(clean);
  CHECK(other->scale() == 131072.0);
  other->update(clean);
  CHECK(other->scale() == 262144.0);

  // An overflow restarts the count.
  auto small = make("amp_fp16", {{"growth_interval", 3}, {"init_scale", 8.0}});
  small->update(clean);
  small->update(clean);
  small->update(torch::ones({}));
  CHECK(small->scale() == 4.0);
  small->update(clean);
  small->update(clean);
  CHECK(small->scale() == 4.0);
  small->update(clean);
  CHECK(small->scale() == 8.0);
  saved.erase("scale");
  CHECK_THROWS_WITH(other->load_state(saved), doctest::Contains("scale"));
}

TEST_CASE("amp_fp16 refuses the CPU with a reason") {
  auto fp16 = make("amp_fp16");
  std::string why;
  CHECK_FALSE(fp16->supports(torch::Device(torch::kCPU), why));
  CHECK(why.find("CUDA") != std::string::npos);
  CHECK(why.find("amp_bf16") != std::string::npos);
  CHECK_THROWS(fp16->autocast(torch::Device(torch::kCPU)));
}

TEST_CASE("amp_bf16: autocast makes linear and conv bf16 on CPU, restored afterwards") {
  auto bf16 = make("amp_bf16");
  std::string why;
  CHECK(bf16->supports(torch::Device(torch::kCPU), why));
  CHECK((bf16->compute_dtype() == torch::kBFloat16));
  torch::nn::Linear fc(4, 3);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 2, 3));
  auto x = torch::randn({2, 4});
  auto img = torch::randn({1, 3, 8, 8});
  const bool was_enabled = compat::autocast_enabled(c10::DeviceType::CPU);
  {
    auto scope = bf16->autocast(torch::Device(torch::kCPU));
    CHECK(compat::autocast_enabled(c10::DeviceType::CPU));
    CHECK((fc(x).scalar_type() == torch::kBFloat16));
    CHECK((conv(img).scalar_type() == torch::kBFloat16));
    {
      // An fp32 region inside switches autocast off, then gives it back.
      auto fp32 = make("fp32");
      auto inner = fp32->autocast(torch::Device(torch::kCPU));
      CHECK((fc(x).scalar_type() == torch::kFloat));
    }
    CHECK((fc(x).scalar_type() == torch::kBFloat16));
  }
  CHECK(compat::autocast_enabled(c10::DeviceType::CPU) == was_enabled);
  CHECK((fc(x).scalar_type() == torch::kFloat));
  CHECK_FALSE(bf16->unscale({torch::ones({2})}).defined());
  CHECK(bf16->scale_loss(torch::tensor(3.f)).item<float>() == 3.f);
}

TEST_CASE("fp32 leaves everything fp32 and never skips") {
  auto fp32 = make("fp32");
  std::string why;
  CHECK(fp32->supports(torch::Device(torch::kCPU), why));
  CHECK((fp32->compute_dtype() == torch::kFloat));
  torch::nn::Linear fc(4, 3);
  {
    auto scope = fp32->autocast(torch::Device(torch::kCPU));
    CHECK((fc(torch::randn({2, 4})).scalar_type() == torch::kFloat));
  }
  auto g = torch::tensor({kInf});
  CHECK_FALSE(fp32->unscale({g}).defined());
  CHECK(fp32->scale() == 1.0);
  CHECK(fp32->scale_loss(torch::tensor(3.f)).item<float>() == 3.f);
  CHECK(fp32->state().empty());
}

TEST_CASE("amp: fp32 on the CPU (autocast off even inside an enabled region, loss and gradients unscaled)") {
  auto amp = make("amp");
  std::string why;
  CHECK(amp->supports(torch::Device(torch::kCPU), why));
  torch::nn::Linear fc(4, 3);
  auto x = torch::randn({2, 4});
  {
    // A bf16 region outside: amp's own scope still computes in fp32 on the CPU.
    auto outer = make("amp_bf16")->autocast(torch::Device(torch::kCPU));
    auto scope = amp->autocast(torch::Device(torch::kCPU));
    CHECK((fc(x).scalar_type() == torch::kFloat));
  }
  CHECK(amp->scale_loss(torch::tensor(2.f)).item<float>() == 2.f);
  auto g = torch::tensor({kInf, 1.f});
  CHECK_FALSE(amp->unscale({torch::Tensor(), g}).defined());  // nothing to skip, nothing divided
  CHECK(std::isinf(g[0].item<float>()));
  CHECK(g[1].item<float>() == 1.f);
  amp->update(torch::Tensor());
  // Its loss scaler is kept for CUDA and checkpointed like amp_fp16's; on the CPU nothing is scaled.
  const auto state = amp->state();
  CHECK_FALSE(state.empty());
  CHECK(amp->scale() == 1.0);
}
