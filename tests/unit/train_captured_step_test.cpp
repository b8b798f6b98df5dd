// The captured training step's contract where no CUDA graph can run (this CPU build, or a CPU
// device): it says why, and still trains every batch eagerly on the inputs it was given.
// The capture and replay themselves run only on a CUDA build: bench/gpu/train_step_bench.cpp
// compares eager and captured losses there (docs/performance.md).
#include <doctest/doctest.h>

#include <torch/torch.h>

#include "training/step/captured_step.h"
#include "training/step/step_engine.h"

using namespace yoloflow::core;

TEST_CASE("captured step: a CPU device gets the reason and eager steps on its own inputs") {
  const torch::Device cpu(torch::kCPU);
  const std::string why = CapturedStep::unavailable_reason(cpu);
  CHECK_FALSE(why.empty());
  CHECK(why.find("cpu") != std::string::npos);

  CapturedStep step(cpu, /*eager_runs=*/2, /*max_graphs=*/1);
  auto pixels = torch::randint(0, 256, {2, 8, 8, 3}, torch::kUInt8);
  auto targets = yoloflow::LossTargets{{{"boxes", torch::rand({2, 4, 5})}, {"keypoints", torch::rand({2, 4, 3, 3})}}};
  int calls = 0;
  torch::Tensor seen_pixels, seen_targets, seen_keypoints;
  const auto body = [&](const torch::Tensor& px, const yoloflow::LossTargets& tg) {
    ++calls;
    seen_pixels = px.clone();
    seen_targets = tg.boxes().clone();
    seen_keypoints = tg.get("keypoints").clone();
  };
  for (int i = 0; i < 5; ++i) {
    pixels = torch::randint(0, 256, {2, 8, 8, 3}, torch::kUInt8);
    step.run(pixels, targets, "gains", body, {});
    // Each batch's own values reach the body (the static inputs are refilled every time).
    CHECK(torch::equal(seen_pixels, pixels));
    CHECK(torch::equal(seen_targets, targets.boxes()));
    CHECK(torch::equal(seen_keypoints, targets.get("keypoints")));
  }
  CHECK(calls == 5);
  CHECK(step.eager_steps() == 5);
  CHECK(step.graphs() == 0);
  CHECK(step.replays() == 0);
  CHECK_FALSE(step.failed());

  // Another shape (more target rows) is another static input, also filled from the batch.
  auto wide = yoloflow::LossTargets{{{"boxes", torch::rand({2, 9, 5})}, {"keypoints", torch::rand({2, 9, 3, 3})}}};
  step.run(pixels, wide, "gains", body, {});
  CHECK(seen_targets.sizes() == wide.boxes().sizes());
  CHECK(torch::equal(seen_targets, wide.boxes()));
  CHECK(torch::equal(seen_keypoints, wide.get("keypoints")));
}

TEST_CASE("captured step: an epoch's last, smaller batch keeps the graph; another image size or more images start over") {
  const std::vector<std::int64_t> graph = {32, 640, 640, 3};
  CHECK(CapturedStep::fits_graph(std::vector<std::int64_t>{32, 640, 640, 3}, graph));
  CHECK(CapturedStep::fits_graph(std::vector<std::int64_t>{18, 640, 640, 3}, graph));  // 1,298 images at batch 32
  CHECK_FALSE(CapturedStep::fits_graph(std::vector<std::int64_t>{64, 640, 640, 3}, graph));  // a batch schedule
  CHECK_FALSE(CapturedStep::fits_graph(std::vector<std::int64_t>{32, 320, 320, 3}, graph));  // an image size schedule
  CHECK_FALSE(CapturedStep::fits_graph(std::vector<std::int64_t>{32, 640, 480, 3}, graph));
  CHECK_FALSE(CapturedStep::fits_graph(std::vector<std::int64_t>{18, 640, 640, 3}, {}));  // nothing captured yet
}

TEST_CASE("cuda_graph \"auto\" asks for a capture on CUDA only; true and false mean what they say") {
  const torch::Device cpu(torch::kCPU), cuda(torch::kCUDA, 0);
  CHECK(capture_requested("auto", cuda));
  CHECK_FALSE(capture_requested("auto", cpu));
  CHECK(capture_requested(true, cpu));  // asked for: the engine then says why it cannot
  CHECK_FALSE(capture_requested(false, cuda));
  // Where a capture is asked for but cannot be made, the reason names the device.
  CHECK(capture_unavailable_reason(cpu, false, false).find("cpu") != std::string::npos);
}
