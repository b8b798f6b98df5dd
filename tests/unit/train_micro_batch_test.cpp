// Micro-batch chunking (and its loss normaliser) and the out-of-memory guard's pieces: which errors count as out of
// memory (a real failed allocation of LibTorch's CPU allocator), how the micro-batch halves and
// where it stops.
#include <doctest/doctest.h>

#include <new>
#include <string>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "loss/yolo11_detection/detection_loss.h"
#include "training/components/batch_targets.h"
#include "training/step/micro_batches.h"
#include "training/device/oom_guard.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using namespace yoloflow::core;
using yoloflow::yolo11_loss::DetectionLoss;

namespace {

std::string sizes_of(const std::vector<MicroBatch>& chunks) {
  std::string s;
  std::int64_t next = 0;
  for (const auto& c : chunks) {
    CHECK(c.start == next);  // consecutive, no gap or overlap
    next = c.start + c.size;
    s += (s.empty() ? "" : ",") + std::to_string(c.size);
  }
  return s;
}

}  // namespace

TEST_CASE("micro_batches covers the batch in even chunks of at most micro_batch images") {
  CHECK(sizes_of(micro_batches(16, 0)) == "16");   // 0: the whole batch
  CHECK(sizes_of(micro_batches(16, 32)) == "16");  // above the batch: the whole batch
  CHECK(sizes_of(micro_batches(16, 8)) == "8,8");
  CHECK(sizes_of(micro_batches(16, 1)) == "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1");
  CHECK(sizes_of(micro_batches(10, 4)) == "4,3,3");  // no 2-image remainder chunk
  CHECK(sizes_of(micro_batches(7, 2)) == "2,2,2,1");
  CHECK(micro_batches(0, 4).empty());
}

TEST_CASE("a failed allocation of LibTorch's CPU allocator counts as out of memory") {
  bool thrown = false;
  try {
    // 1 PiB: more than any address space allows, so the allocator itself fails.
    auto t = torch::empty({std::int64_t{1} << 50}, torch::kUInt8);
    (void)t;
  } catch (const std::exception& e) {
    thrown = true;
    INFO(e.what());
    CHECK(is_out_of_memory(e));
    const auto message = short_message(e);
    CHECK(message.find("DefaultCPUAllocator") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK(thrown);
  CHECK(is_out_of_memory(std::bad_alloc()));
  CHECK(is_out_of_memory(c10::OutOfMemoryError(c10::SourceLocation{"f", "file.cpp", 1}, "CUDA out of memory. Tried to allocate 2.00 GiB")));
  // Other LibTorch errors (a shape mismatch) and plain errors are not retried.
  bool other = false;
  try {
    (void)torch::ones({2, 3}).matmul(torch::ones({2, 3}));
  } catch (const std::exception& e) {
    other = true;
    CHECK_FALSE(is_out_of_memory(e));
  }
  CHECK(other);
  CHECK_FALSE(is_out_of_memory(yoloflow::Error("not enough memory")));
}

TEST_CASE("the micro-batch halves from the batch and stops below one image with a clear error") {
  CHECK(halved_micro_batch(0, 16, "x") == 8);
  CHECK(halved_micro_batch(8, 16, "x") == 4);
  CHECK(halved_micro_batch(5, 16, "x") == 2);
  CHECK(halved_micro_batch(64, 16, "x") == 8);  // above the batch: the batch is what ran
  CHECK(halved_micro_batch(2, 16, "x") == 1);
  try {
    halved_micro_batch(1, 16, "CUDA out of memory");
    FAIL("no error below one image");
  } catch (const yoloflow::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("micro-batch of 1 image") != std::string::npos);
    CHECK(what.find("CUDA out of memory") != std::string::npos);
  }
}

namespace {

struct LossCase {
  HeadDescription head{4, 16, {8, 16, 32}};
  std::vector<torch::Tensor> levels;
  torch::Tensor targets;
  LossCase(const torch::Tensor& rows, std::int64_t fixed_rows) {
    torch::manual_seed(11);
    for (std::int64_t s : {8, 16, 32}) levels.push_back(torch::randn({4, 64 + 4, 64 / s, 64 / s}).set_requires_grad(true));
    targets = pad_targets(rows, 4, fixed_rows);
  }
  std::vector<torch::Tensor> take_grads() {
    std::vector<torch::Tensor> g;
    for (auto& l : levels) {
      g.push_back(l.grad().clone());
      l.mutable_grad() = torch::Tensor();
    }
    return g;
  }
  std::vector<torch::Tensor> chunk(const MicroBatch& c) const {
    std::vector<torch::Tensor> part;
    for (const auto& l : levels) part.push_back(l.narrow(0, c.start, c.size));
    return part;
  }
};

// Largest difference of two gradient lists relative to the largest entry of `ref`.
double relative_difference(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& ref) {
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    worst = std::max(worst, (a[i] - ref[i]).abs().max().item<double>());
    scale = std::max(scale, ref[i].abs().max().item<double>());
  }
  REQUIRE(scale > 0);
  return worst / scale;
}

}  // namespace

TEST_CASE("micro-batches rescaled by the batch's score sum give the whole batch's losses and gradient") {
  // What the train sink does in one process (step/step_engine.cpp), on the loss alone.
  LossCase t(torch::tensor({0.f, 2.f, 0.3f, 0.4f, 0.3f, 0.2f,   //
                            1.f, 1.f, 0.6f, 0.6f, 0.5f, 0.4f,   //
                            2.f, 3.f, 0.5f, 0.5f, 0.9f, 0.9f,   //
                            3.f, 0.f, 0.2f, 0.7f, 0.2f, 0.3f,   //
                            3.f, 1.f, 0.7f, 0.3f, 0.3f, 0.3f}).view({5, 6}), 0);
  DetectionLoss loss(t.head);
  auto whole = loss(t.levels, t.targets);
  whole.total.backward();
  const auto whole_grads = t.take_grads();

  torch::Tensor sums = torch::zeros({3}), score_sum = torch::zeros({}), k;
  const auto chunks = micro_batches(4, 2);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const double share = chunks[c].size / 4.0;
    auto r = loss(t.chunk(chunks[c]), t.targets.narrow(0, chunks[c].start, chunks[c].size), share);
    const auto used = r.score_sum.clamp_min(share);
    if (c == 0) k = (r.score_sum / share).clamp_min(1.0);
    (r.total * (used / (share * k))).backward();
    sums += r.items * used;
    score_sum += r.score_sum;
  }
  CHECK(std::abs(score_sum.item<double>() - whole.score_sum.item<double>()) < 1e-4 * whole.score_sum.item<double>());
  const auto normaliser = score_sum.clamp_min(1.0);
  auto grads = t.take_grads();
  for (auto& g : grads) g.mul_(k / normaliser);
  CHECK(relative_difference(grads, whole_grads) < 1e-4);
  CHECK(((sums / normaliser) - whole.items).abs().max().item<double>() < 1e-4 * whole.items.abs().max().item<double>());
}

TEST_CASE("data parallel: chunks with the floor scaled to their share add up exactly while below it") {
  // Background images only (every row padding): no target scores, the floor decides, as in
  // early training. The whole batch divides by 1; chunks must divide by their share.
  LossCase t(torch::zeros({0, 6}), 2);
  DetectionLoss loss(t.head);
  auto whole = loss(t.levels, t.targets);
  whole.total.backward();
  const auto whole_grads = t.take_grads();
  auto chunked = [&](bool share_floor) {
    torch::Tensor items = torch::zeros({3});
    for (const auto& c : micro_batches(4, 2)) {
      const double share = c.size / 4.0;
      auto r = loss(t.chunk(c), t.targets.narrow(0, c.start, c.size), share_floor ? share : 1.0);
      r.total.backward();
      items += r.items * share;
    }
    const double item_diff = (items - whole.items).abs().max().item<double>() / whole.items.abs().max().item<double>();
    return std::make_pair(relative_difference(t.take_grads(), whole_grads), item_diff);
  };
  const auto [grad_diff, item_diff] = chunked(true);
  CHECK(grad_diff < 1e-4);
  CHECK(item_diff < 1e-4);
  // A fixed floor of 1 per chunk (Ultralytics' per batch) would halve each chunk's weight.
  const auto [old_grad_diff, old_item_diff] = chunked(false);
  CHECK(old_grad_diff > 0.3);
  CHECK(old_item_diff > 0.3);
}
