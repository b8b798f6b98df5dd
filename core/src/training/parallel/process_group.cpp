#include "training/parallel/process_group.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef YOLOFLOW_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(YOLOFLOW_WITH_CUDA) && defined(YOLOFLOW_HAVE_NCCL)
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include "runtime/dist/runtime.h"
#include "training/parallel/store_watchdog.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/torch_compat.h"

namespace yoloflow::core::dist {
namespace {

// LibTorch 2 split process groups into a dispatcher (c10d::ProcessGroup) and per-device
// backends (c10d::Backend) that ProcessGroupGloo/NCCL now derive from; 1.13's derive from
// ProcessGroup. Both bases offer the same allreduce/broadcast calls used here.
#if YOLOFLOW_TORCH_AT_LEAST(2, 0)
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

std::chrono::milliseconds seconds_var(const char* name, std::chrono::milliseconds fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v, &end);
  if (errno != 0 || end == v || *end != '\0' || !(s > 0)) {
    throw InvalidInput(std::string("environment variable ") + name + "='" + v + "' is not a number of seconds > 0");
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
}

class Pending final : public PendingWork {
 public:
  Pending(c10::intrusive_ptr<c10d::Work> work, std::string what) : work_(std::move(work)), what_(std::move(what)) {}
  void wait() override {
    try {
      work_->wait();
    } catch (const std::exception& e) {
      throw Error(what_ + " failed (another rank died, failed or timed out): " +
                  std::string(e.what()).substr(0, 300));
    }
  }

 private:
  c10::intrusive_ptr<c10d::Work> work_;
  std::string what_;
};

}  // namespace

GroupOptions group_options_from_env() {
  GroupOptions o;
  o.timeout = seconds_var("YOLOFLOW_DIST_TIMEOUT", o.timeout);
  o.heartbeat_timeout = seconds_var("YOLOFLOW_DIST_HEARTBEAT_TIMEOUT", o.heartbeat_timeout);
  return o;
}

struct ProcessGroup::Impl {
  DistEnv env;
  torch::Device device{torch::kCPU};
  std::string backend;
  std::string address;
  GroupOptions options;
  c10::intrusive_ptr<BackendBase> pg;
  std::unique_ptr<StoreWatchdog> watchdog;
  bool finished = false;

  // A TCPStore connection; the server lives on rank 0 unless torchrun's agent serves one.
  c10::intrusive_ptr<c10d::Store> open_store(bool server, const std::string& prefix) const {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(env.master_port);
    o.isServer = server;
    o.timeout = options.timeout;
    if (server || prefix == "yoloflow/pg") {
      // The main connections count in: the server waits until every rank connected.
      o.numWorkers = static_cast<std::size_t>(env.world_size);
      o.waitWorkers = !env.agent_store;
    } else {
      o.waitWorkers = false;
    }
    c10::intrusive_ptr<c10d::Store> store;
    try {
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, o);
    } catch (const std::exception& e) {
      throw Error("rank " + std::to_string(env.rank) + ": rendezvous at " + address + " failed within " +
                  std::to_string(options.timeout.count() / 1000) + " s (did every rank start? is MASTER_PORT free on rank 0?): " +
                  std::string(e.what()).substr(0, 300));
    }
    std::string full = prefix;
    // torchrun's agent store is shared by restarts: PyTorch's own workers use this prefix.
    if (env.agent_store) full = "/worker/attempt_" + std::to_string(env.restart_count) + "/" + prefix;
    return c10::make_intrusive<c10d::PrefixStore>(full, store);
  }

  void connect() {
    const bool server = env.rank == 0 && !env.agent_store;
    auto store = open_store(server, "yoloflow/pg");
    if (device.is_cuda()) {
#if defined(YOLOFLOW_WITH_CUDA) && defined(YOLOFLOW_HAVE_NCCL)
      backend = "nccl";
      c10::cuda::set_device(device.index());
      auto o = c10d::ProcessGroupNCCL::Options::create();
      o->timeout = options.timeout;
      pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, o);
#else
      throw Error("device " + device.str() + " needs the NCCL backend, which this build lacks (LibTorch " +
                  std::string(TORCH_VERSION) + " without CUDA, or nccl.h was not found at configure time)");
#endif
    } else {
#ifdef YOLOFLOW_HAVE_GLOO
      backend = "gloo";
      auto o = c10d::ProcessGroupGloo::Options::create(options.timeout);
      const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
      if (iface != nullptr && *iface != '\0') {
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
      } else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
        // Every rank is on this host: loopback avoids resolving the host name.
        o->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        o->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      try {
        pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, o);
      } catch (const std::exception& e) {
        throw Error("rank " + std::to_string(env.rank) + ": connecting the Gloo group through " + address +
                    " failed: " + std::string(e.what()).substr(0, 300));
      }
#else
      throw Error("device cpu needs the Gloo backend, which this build lacks (its headers were not found "
                  "next to LibTorch " + std::string(TORCH_VERSION) + "'s at configure time)");
#endif
    }
    watchdog = std::make_unique<StoreWatchdog>(open_store(false, "yoloflow/watchdog"), env.rank,
                                               env.world_size, options.heartbeat_timeout, address);
  }
};

ProcessGroup::ProcessGroup(const DistEnv& env, const torch::Device& device, const GroupOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->env = env;
  impl_->device = device;
  impl_->options = options;
  impl_->address = env.master_addr + ":" + std::to_string(env.master_port);
  impl_->connect();
  YF_LOG_INFO("distributed: " << env.describe() << ", backend " << impl_->backend << " on " << device.str()
                              << ", timeout " << options.timeout.count() / 1000 << " s");
}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->env.rank; }
int ProcessGroup::size() const { return impl_->env.world_size; }
const std::string& ProcessGroup::backend() const { return impl_->backend; }
const torch::Device& ProcessGroup::device() const { return impl_->device; }

std::unique_ptr<PendingWork> ProcessGroup::all_reduce_sum_async(torch::Tensor tensor) {
  std::vector<at::Tensor> v{std::move(tensor)};
  c10d::AllreduceOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  o.timeout = impl_->options.timeout;
  const std::string what = "rank " + std::to_string(rank()) + ": all-reduce";
  try {
    return std::make_unique<Pending>(impl_->pg->allreduce(v, o), what);
  } catch (const std::exception& e) {
    throw Error(what + " failed to start (another rank died?): " + std::string(e.what()).substr(0, 300));
  }
}

void ProcessGroup::all_reduce_sum(torch::Tensor tensor) { all_reduce_sum_async(std::move(tensor))->wait(); }

void ProcessGroup::broadcast(const std::vector<torch::Tensor>& tensors, int root) {
  // One flat buffer per dtype: one collective each instead of one per tensor.
  std::map<int, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[static_cast<int>(t.scalar_type())].push_back(t);
  torch::NoGradGuard no_grad;
  for (auto& [dtype, list] : by_dtype) {
    std::vector<torch::Tensor> flat_parts;
    for (const auto& t : list) flat_parts.push_back(t.detach().reshape(-1).to(impl_->device));
    std::vector<at::Tensor> v{torch::cat(flat_parts)};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = impl_->options.timeout;
    const std::string what = "rank " + std::to_string(rank()) + ": broadcast from rank " + std::to_string(root);
    try {
      Pending(impl_->pg->broadcast(v, o), what).wait();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(what + " failed: " + std::string(e.what()).substr(0, 300));
    }
    std::int64_t offset = 0;
    for (auto& t : list) {
      const std::int64_t n = t.numel();
      t.detach().copy_(v[0].narrow(0, offset, n).view(t.sizes()));
      offset += n;
    }
  }
}

void ProcessGroup::barrier() {
  auto t = torch::zeros({1}, torch::TensorOptions().device(impl_->device));
  all_reduce_sum(t);
  // NCCL's wait() only orders the current stream after the collective: reading the value
  // makes the host wait too, so no rank runs past the barrier before the others reached it.
  (void)t.item<float>();
}

void ProcessGroup::report_failure(const std::string& reason) {
  if (impl_->watchdog) impl_->watchdog->report_failure(reason);
  // Rank 0 serves the store: give the others' watchdogs a moment to read the reason.
  if (rank() == 0 && !impl_->env.agent_store) std::this_thread::sleep_for(std::chrono::seconds(3));
}

void ProcessGroup::finish() {
  if (impl_->finished) return;
  impl_->finished = true;
  // Stop watching first: once past the barrier, rank 0 may exit and take the store with it.
  if (impl_->watchdog) impl_->watchdog->stop();
  barrier();
}

// ---- process-wide group ----

namespace {
std::mutex g_mutex;
std::unique_ptr<ProcessGroup> g_group;
}  // namespace

ProcessGroup* process_group_for(const torch::Device& device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const DistEnv& env = current_env();
  if (!env.distributed()) return nullptr;
  if (!g_group) {
    g_group = std::make_unique<ProcessGroup>(env, device, group_options_from_env());
  } else if (g_group->device() != device) {
    throw Error("the distributed process group was created for " + g_group->device().str() +
                ", and is now asked for " + device.str());
  }
  return g_group.get();
}

ProcessGroup* current_process_group() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_group.get();
}

void end_run(bool ok, const std::string& reason) {
  std::unique_ptr<ProcessGroup> group;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    group = std::move(g_group);
  }
  if (!group) return;
  try {
    if (ok) group->finish();
    else group->report_failure(reason);
  } catch (const std::exception& e) {
    YF_LOG_ERROR("distributed: ending the process group failed: " << e.what());
  }
}

}  // namespace yoloflow::core::dist
