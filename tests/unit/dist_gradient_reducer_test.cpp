// The data-parallel layer in one process: two ranks on two threads talk through a real
// TCPStore and ProcessGroupGloo on 127.0.0.1. The bucketed reducer must give every rank the
// exact sum of all ranks' accumulated gradients, starting buckets during the backward; a
// collective whose peer has gone must fail with an error within the timeout.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "training/parallel/gradient_reducer.h"
#include "training/parallel/process_group.h"
#include "support/free_port.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using namespace yoloflow::core::dist;

namespace {

DistEnv env_for(int rank, int world, int port) {
  DistEnv e;
  e.rank = rank;
  e.world_size = world;
  e.local_rank = rank;
  e.master_addr = "127.0.0.1";
  e.master_port = port;
  e.launcher = "env";
  return e;
}

struct Net : torch::nn::Module {
  Net() {
    conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)));
    conv2 = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 16, 3).padding(1)));
    fc = register_module("fc", torch::nn::Linear(16, 4));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = torch::relu(conv2(torch::relu(conv(x))));
    return fc(y.mean({2, 3}));
  }
  torch::nn::Conv2d conv{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr};
};

torch::Tensor loss_of(Net& net, const torch::Tensor& x) { return net.forward(x).pow(2).sum() * x.size(0); }

// Runs body(rank) on one thread per rank; rethrows the first exception.
void on_ranks(int world, const std::function<void(int)>& body) {
  std::vector<std::exception_ptr> errors(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

TEST_CASE("gradient reducer: two Gloo ranks get the exact sum of all accumulated gradients") {
  const int world = 2, port = test::free_port();
  torch::manual_seed(1);
  std::vector<std::shared_ptr<Net>> nets{std::make_shared<Net>(), std::make_shared<Net>()};  // different inits
  // Two micro-batches per rank, then one more (a window the backward does not sync).
  std::vector<std::vector<torch::Tensor>> inputs(world);
  for (int r = 0; r < world; ++r) {
    for (int m = 0; m < 3; ++m) inputs[r].push_back(torch::randn({2 + m, 3, 8, 8}));
  }
  // The reference: rank 0's initial weights, every rank's micro-batches in one process.
  auto reference = std::make_shared<Net>();
  {
    torch::NoGradGuard ng;
    auto src = nets[0]->parameters();
    auto dst = reference->parameters();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
  }
  for (int r = 0; r < world; ++r) {
    for (int m = 0; m < 2; ++m) loss_of(*reference, inputs[r][m]).backward();
  }
  std::vector<torch::Tensor> want_window;
  for (auto& p : reference->parameters()) want_window.push_back(p.grad().clone());
  reference->zero_grad();
  for (int r = 0; r < world; ++r) loss_of(*reference, inputs[r][2]).backward();
  std::vector<torch::Tensor> want_partial;
  for (auto& p : reference->parameters()) want_partial.push_back(p.grad().clone());

  std::vector<std::vector<torch::Tensor>> got_window(world), got_partial(world);
  std::vector<std::size_t> buckets(world), started(world);
  on_ranks(world, [&](int r) {
    GroupOptions o;
    o.timeout = std::chrono::seconds(60);
    ProcessGroup group(env_for(r, world, port), torch::Device(torch::kCPU), o);
    auto params = nets[r]->parameters();
    group.broadcast(params, 0);  // rank 1 starts from rank 0's weights
    GradientReducer reducer(group, params, 4096);  // small buckets: several, started in backward
    for (int m = 0; m < 2; ++m) {
      reducer.expect_sync(m == 1);
      loss_of(*nets[r], inputs[r][m]).backward();
    }
    reducer.synchronize();
    for (auto& p : params) got_window[r].push_back(p.grad().clone());
    buckets[r] = reducer.bucket_count();
    started[r] = reducer.buckets_started_in_backward();
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    reducer.expect_sync(false);
    loss_of(*nets[r], inputs[r][2]).backward();
    reducer.synchronize();  // reduces everything now
    for (auto& p : params) got_partial[r].push_back(p.grad().clone());
    group.finish();
  });

  for (int r = 0; r < world; ++r) {
    CHECK(buckets[r] > 1);
    CHECK(started[r] == buckets[r]);  // every bucket started while the backward ran
    REQUIRE(got_window[r].size() == want_window.size());
    for (std::size_t i = 0; i < want_window.size(); ++i) {
      CHECK(torch::allclose(got_window[r][i], want_window[i], 1e-4, 1e-5));
      CHECK(torch::allclose(got_partial[r][i], want_partial[i], 1e-4, 1e-5));
    }
  }
  // Not vacuous: one rank's own gradients differ from the sum.
  CHECK_FALSE(torch::allclose(got_window[0][0], got_window[0][0] * 0.5));
}

TEST_CASE("process group: an all-reduce whose peer has gone fails with an error, not a hang") {
  const int world = 2, port = test::free_port();
  GroupOptions o;
  o.timeout = std::chrono::seconds(10);
  o.heartbeat_timeout = std::chrono::hours(1);  // this test is about the collective itself
  std::string error;
  double seconds = 0;
  on_ranks(world, [&](int r) {
    ProcessGroup group(env_for(r, world, port), torch::Device(torch::kCPU), o);
    group.barrier();
    if (r == 1) return;  // rank 1 leaves: its connections close
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const auto start = std::chrono::steady_clock::now();
    try {
      group.all_reduce_sum(torch::ones({4}));
    } catch (const Error& e) {
      error = e.what();
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  MESSAGE(error);
  CHECK(error.find("rank 0: all-reduce") != std::string::npos);
  CHECK(seconds < 15);
}
