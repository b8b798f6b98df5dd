#include "training/step/captured_step.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>
#include <sstream>

#include "training/components/batch_targets.h"
#include "yoloflow/log.h"
#include "yoloflow/torch_compat.h"

#ifdef YOLOFLOW_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>
#endif

namespace yoloflow::core {

namespace {

std::string shape_key(const torch::Tensor& pixels, const LossTargets& targets, const std::string& key) {
  std::ostringstream os;
  os << pixels.sizes() << target_shapes(targets) << '|' << key;
  return os.str();
}

}  // namespace

bool CapturedStep::fits_graph(c10::IntArrayRef images, const std::vector<std::int64_t>& graph) {
  if (images.empty() || images.size() != graph.size() || images[0] > graph[0]) return false;
  return std::equal(images.begin() + 1, images.end(), graph.begin() + 1);
}

struct CapturedStep::Impl {
  struct Entry {
    torch::Tensor pixels;  // static device inputs
    LossTargets targets;
    int eager = 0;
#ifdef YOLOFLOW_WITH_CUDA
    std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
  };
  torch::Device device;
  int eager_runs;
  std::size_t max_graphs;
  std::map<std::string, Entry> entries;
  std::vector<std::int64_t> graph_pixels;  // image shape of the captured graphs
#ifdef YOLOFLOW_WITH_CUDA
  decltype(std::declval<at::cuda::CUDAGraph&>().pool()) pool{0, 0};
  bool have_pool = false;
  std::optional<at::cuda::CUDAStream> side;
  // Pinned batches whose copy to the device may still be in flight, oldest first.
  struct Held {
    at::cuda::CUDAEvent copied;
    std::shared_ptr<const void> owner;
  };
  std::deque<Held> held;

  void hold(std::shared_ptr<const void> owner, const at::cuda::CUDAStream& stream) {
    while (!held.empty() && held.front().copied.query()) held.pop_front();
    // A few batches in flight at most: the step has waited on each long before.
    if (held.size() >= 4) {
      held.front().copied.synchronize();
      held.pop_front();
    }
    held.emplace_back();
    held.back().copied.record(stream);
    held.back().owner = std::move(owner);
  }

  // A replayed step's pixels cross to the GPU on their own stream into one of two device
  // buffers, while the previous step still computes; only a device-to-device copy into the
  // graph's static input is left on the compute stream (it must wait for the previous
  // replay, which reads that input).
  std::optional<at::cuda::CUDAStream> copy_stream;
  struct Staging {
    torch::Tensor buffer;
    at::cuda::CUDAEvent arrived, consumed;
  };
  Staging staging[2];
  int next_staging = 0;

  void stage(const torch::Tensor& host, const torch::Tensor& input, const at::cuda::CUDAStream& compute) {
    if (!copy_stream) copy_stream = at::cuda::getStreamFromPool(false, compute.device_index());
    auto& slot = staging[next_staging];
    next_staging ^= 1;
    if (!slot.buffer.defined() || slot.buffer.sizes() != input.sizes()) slot.buffer = torch::empty_like(input);
    {
      c10::cuda::CUDAStreamGuard guard(*copy_stream);
      slot.consumed.block(*copy_stream);  // the buffer's previous batch has been read
      slot.buffer.copy_(host, /*non_blocking=*/true);
      slot.arrived.record(*copy_stream);
    }
    slot.arrived.block(compute);
    input.copy_(slot.buffer, /*non_blocking=*/true);
    slot.consumed.record(compute);
  }

  ~Impl() {
    if (copy_stream) copy_stream->synchronize();  // before the staging buffers go back
  }

  static std::int64_t allocated_bytes(c10::DeviceIndex index) {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0].current;
  }

  // Allocations on the side stream go to the graphs' pool while it lives (see
  // run_between_replays). Ends on destruction, also when the work throws.
  class InPool {
   public:
    InPool(Impl& impl) : impl_(impl) {
#if YOLOFLOW_TORCH_AT_LEAST(2, 3)
      const cudaStream_t stream = impl_.side->stream();
      c10::cuda::CUDACachingAllocator::beginAllocateToPool(impl_.device.index(), impl_.pool,
                                                           [stream](cudaStream_t s) { return s == stream; });
      active_ = true;
#endif
      before_ = allocated_bytes(impl_.device.index());
    }
    ~InPool() { end(); }
    void end() {
#if YOLOFLOW_TORCH_AT_LEAST(2, 3)
      if (active_) c10::cuda::CUDACachingAllocator::endAllocateToPool(impl_.device.index(), impl_.pool);
#endif
      active_ = false;
    }
    // Bytes allocated in the scope and still allocated.
    std::int64_t left() const { return allocated_bytes(impl_.device.index()) - before_; }

   private:
    Impl& impl_;
    bool active_ = false;
    std::int64_t before_ = 0;
  };

  // After work that allocated from the pool: when it left memory allocated there, the graphs
  // must not replay over it.
  bool drop_graphs_if_left(const InPool& scope, const char* what, bool& share) {
    const auto left = scope.left();
    if (left <= 0) return false;
    YF_LOG_WARN("train: cuda_graph: " << what << " left " << left << " bytes allocated in the captured step's memory "
                << "pool; the graphs are captured again in a new pool, and such work runs beside it from now on");
    entries.clear();
    have_pool = false;
    share = false;
    return true;
  }
#endif
  Impl(torch::Device d, int e, std::size_t m) : device(d), eager_runs(e), max_graphs(m) {
#ifdef YOLOFLOW_WITH_CUDA
    if (device.is_cuda() && !device.has_index()) device = torch::Device(torch::kCUDA, c10::cuda::current_device());
#endif
  }
};

std::string CapturedStep::unavailable_reason(const torch::Device& device) {
#ifdef YOLOFLOW_WITH_CUDA
  if (!device.is_cuda()) return "CUDA graphs need a CUDA device (training on " + device.str() + ")";
  return {};
#else
  return "this build of LibTorch has no CUDA (training on " + device.str() + ")";
#endif
}

CapturedStep::CapturedStep(torch::Device device, int eager_runs, std::size_t max_graphs)
    : impl_(std::make_unique<Impl>(device, eager_runs, max_graphs)) {}

CapturedStep::~CapturedStep() = default;

std::size_t CapturedStep::graphs() const {
  std::size_t n = 0;
#ifdef YOLOFLOW_WITH_CUDA
  for (const auto& [k, e] : impl_->entries) n += e.graph ? 1 : 0;
#endif
  return n;
}

void CapturedStep::run(const torch::Tensor& pixels, const LossTargets& targets, const std::string& key,
                       const Body& body, const std::function<void()>& prepare, std::shared_ptr<const void> pixels_owner) {
  const std::string k = shape_key(pixels, targets, key);
  // New images shape with the graphs used up (a batch size or image size schedule): start
  // over for it. Other target rows, and an epoch's last, smaller batch of the same images,
  // keep the old graphs (those batches run eagerly in their pool): a dataset whose size is no
  // multiple of the batch would otherwise drop the graph at every epoch's end and capture it
  // again (warm-up steps and all) at the next epoch's start.
  if (impl_->entries.count(k) == 0 && graphs() >= impl_->max_graphs && !fits_graph(pixels.sizes(), impl_->graph_pixels)) {
    impl_->entries.clear();
#ifdef YOLOFLOW_WITH_CUDA
    impl_->have_pool = false;
#endif
  }
  auto& e = impl_->entries[k];
  const auto dev = impl_->device;
  if (!e.pixels.defined()) {
    e.pixels = torch::empty(pixels.sizes(), pixels.options().device(dev));
    for (const auto& [name, t] : targets.tensors) e.targets.tensors[name] = torch::empty(t.sizes(), t.options().device(dev));
  }
#ifdef YOLOFLOW_WITH_CUDA
  const bool on_cuda = dev.is_cuda();
#else
  const bool on_cuda = false;
#endif
  if (!on_cuda) {
    // No CUDA graph here (a CPU build, or a CPU device on a CUDA build): every step eager.
    ++eager_steps_;
    e.pixels.copy_(pixels);
    for (auto& [name, t] : e.targets.tensors) t.copy_(targets.tensors.at(name));
    body(e.pixels, e.targets);
    return;
  }
#ifdef YOLOFLOW_WITH_CUDA
  // Pinned staging (LibTorch's caching host allocator reuses a block only once the copies
  // reading it have finished), so the host never waits for the previous step here. Batches
  // already in pinned memory are read in place and held until their copy has run.
  const auto current = at::cuda::getCurrentCUDAStream(dev.index());
  // Pixels composed on the device (Batch::planned) are already there, on this stream.
  const bool on_device = pixels.is_cuda();
  const bool in_place = !on_device && pixels_owner && pixels.is_pinned();
  const auto host_pixels = on_device || in_place ? pixels : pixels.pin_memory();
  for (auto& [name, t] : e.targets.tensors) t.copy_(targets.tensors.at(name).pin_memory(), /*non_blocking=*/true);
  if (e.graph) {
    if (on_device) {
      e.pixels.copy_(pixels, /*non_blocking=*/true);
    } else {
      impl_->stage(host_pixels, e.pixels, current);
    }
    if (in_place) impl_->hold(std::move(pixels_owner), *impl_->copy_stream);
    e.graph->replay();
    ++replays_;
    return;
  }
  e.pixels.copy_(host_pixels, /*non_blocking=*/true);
  if (in_place) impl_->hold(std::move(pixels_owner), current);
  const bool capture = !failed() && e.eager >= impl_->eager_runs && graphs() < impl_->max_graphs;
  // Capture cannot use the legacy default stream. One side stream for every eager run and the
  // capture: cuBLAS keeps a workspace per stream, which must not be created while capturing.
  if (!impl_->side) impl_->side = at::cuda::getStreamFromPool(false, dev.index());
  const auto side = *impl_->side;
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(side);
  {
    // Every batch that is not replayed trains eagerly here, the one about to be captured
    // too, on this very thread: cuDNN and cuBLAS create their per-thread handles
    // (cudaMalloc, forbidden while capturing) on first use, and the graph runner may call
    // the sink from a thread that has not run a step yet. (Captures made without it failed
    // in training with CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED on the H200.)
    c10::cuda::CUDAStreamGuard guard(side);
    bool dropped = false;
    if (impl_->have_pool && share_pool_ && !capture) {
      // A shape without a graph of its own (more target rows), after the graphs exist: its
      // activations go where the graphs' dead ones are ("ready" above orders it after the
      // last replay, "done" below the next replay after it).
      Impl::InPool scope(*impl_);
      body(e.pixels, e.targets);
      scope.end();
      dropped = impl_->drop_graphs_if_left(scope, "an eager step", share_pool_);
    } else {
      body(e.pixels, e.targets);
    }
    if (dropped) {  // `e` went with the graphs
      ++eager_steps_;
      at::cuda::CUDAEvent done;
      done.record(side);
      done.block(current);
      return;
    }
  }
  ++e.eager;
  ++eager_steps_;
  if (capture) {
    if (prepare) prepare();
    torch::cuda::synchronize(dev.index());
    // The eager runs' cached blocks are not needed by the graph: give them back first, so
    // that what the capture reserves is the graph's own pool.
    c10::cuda::CUDACachingAllocator::emptyCache();
    const auto reserved_before = c10::cuda::CUDACachingAllocator::getDeviceStats(dev.index()).reserved_bytes[0].current;
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    // Autocast's cast cache would keep tensors from the capture's pool past it.
    const bool cache = at::autocast::is_autocast_cache_enabled();
    at::autocast::set_autocast_cache_enabled(false);
    try {
      c10::cuda::CUDAStreamGuard guard(side);
      // Thread-local capture: the batcher allocates pinned host memory on other threads
      // meanwhile (cudaHostAlloc, which a global-mode capture forbids process-wide). This
      // thread's own unsafe calls still invalidate the capture.
#if YOLOFLOW_TORCH_AT_LEAST(2, 1)
      graph->capture_begin(impl_->have_pool ? impl_->pool : decltype(impl_->pool){0, 0}, cudaStreamCaptureModeThreadLocal);
#else
      if (impl_->have_pool) {
        graph->capture_begin(impl_->pool);
      } else {
        graph->capture_begin();
      }
#endif
      try {
        body(e.pixels, e.targets);  // recorded, not run: this batch has trained above
      } catch (...) {
        try {
          graph->capture_end();
        } catch (...) {
        }
        throw;
      }
      graph->capture_end();
    } catch (const std::exception& ex) {
      failure_ = ex.what();
      graph.reset();
      (void)cudaGetLastError();  // an invalidated capture leaves its error pending
    }
    at::autocast::set_autocast_cache_enabled(cache);
    if (graph) {
      if (!impl_->have_pool) {
        impl_->pool = graph->pool();
        impl_->have_pool = true;
      }
      e.graph = std::move(graph);
      impl_->graph_pixels = pixels.sizes().vec();
      const auto reserved = c10::cuda::CUDACachingAllocator::getDeviceStats(dev.index()).reserved_bytes[0].current;
      YF_LOG_INFO("train: cuda_graph: captured the step for inputs " << pixels.sizes() << " + targets " << target_shapes(targets)
                  << "; CUDA memory reserved " << static_cast<double>(reserved_before) / (1 << 30) << " -> "
                  << static_cast<double>(reserved) / (1 << 30) << " GiB");
    }
  }
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(current);
#endif
}

void CapturedStep::run_between_replays(const std::function<void()>& work) {
#ifndef YOLOFLOW_WITH_CUDA
  work();
#else
  if (!share_pool_ || !impl_->have_pool || !impl_->side) {
    work();
    return;
  }
  const auto dev = impl_->device;
  const auto side = *impl_->side;
  const auto current = at::cuda::getCurrentCUDAStream(dev.index());
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(side);
  c10::cuda::CUDAStreamGuard guard(side);
  {
    // This thread's cuBLAS workspaces for the side stream outlive the work: made here, before
    // the pool serves the stream (the first matrix product on a stream and thread makes them).
    const auto a = torch::ones({8, 8}, torch::TensorOptions().device(dev));
    (void)a.mm(a);
    (void)a.to(torch::kHalf).mm(a.to(torch::kHalf));
  }
  Impl::InPool scope(*impl_);
  work();
  scope.end();
  impl_->drop_graphs_if_left(scope, "work between training steps (validation)", share_pool_);
  at::cuda::CUDAEvent done;
  done.record(side);
  done.block(current);
#endif
}

}  // namespace yoloflow::core
