#pragma once
// A c10d process group for data-parallel training: Gloo for CPU tensors, NCCL for CUDA
// tensors, rendezvous through a TCPStore (rank 0's, or torchrun's agent store), every
// collective bounded by a timeout, and a store heartbeat (store_watchdog.h) so that a rank
// which dies or fails makes the others stop with a clear error instead of waiting forever.
// The differences between LibTorch 1.13 and 2.x c10d stay inside process_group.cpp.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runtime/dist/dist_env.h"

namespace yoloflow::core::dist {

struct GroupOptions {
  // Rendezvous and every collective (a barrier while rank 0 validates, too).
  // $YOLOFLOW_DIST_TIMEOUT (seconds) overrides.
  std::chrono::milliseconds timeout = std::chrono::minutes(30);
  // A rank whose heartbeat stops this long is declared dead. $YOLOFLOW_DIST_HEARTBEAT_TIMEOUT.
  std::chrono::milliseconds heartbeat_timeout = std::chrono::seconds(60);
};
// The defaults above with the environment's overrides (InvalidInput when malformed).
GroupOptions group_options_from_env();

// A collective in flight.
class PendingWork {
 public:
  virtual ~PendingWork() = default;
  // Blocks until done; throws yoloflow::Error when it failed (a peer died) or timed out.
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  // Connects to the other ranks; the backend follows the device (NCCL for CUDA, Gloo for
  // CPU). Throws yoloflow::Error when that backend is not built in or the rendezvous fails.
  ProcessGroup(const DistEnv& env, const torch::Device& device, const GroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  const std::string& backend() const;  // "gloo" or "nccl"
  const torch::Device& device() const;

  // Sums `tensor` (contiguous, on device()) over all ranks, in place.
  std::unique_ptr<PendingWork> all_reduce_sum_async(torch::Tensor tensor);
  void all_reduce_sum(torch::Tensor tensor);
  // Copies rank `root`'s values of `tensors` into every rank's (any dtypes; flattened per dtype).
  void broadcast(const std::vector<torch::Tensor>& tensors, int root = 0);
  // Waits for every rank (an all-reduce of one element: the same code path on both backends).
  void barrier();
  // Tells the other ranks that this one stops because of `reason` (their watchdogs end them).
  void report_failure(const std::string& reason);
  // The normal end: a last barrier, then the heartbeat stops (rank 0's store outlives the
  // others' use of it).
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The process-wide group the train sink uses: created on the first call from the environment
// the host installed (runtime.h); null when the run is one process. Later calls return the
// same group (the device must not change).
ProcessGroup* process_group_for(const torch::Device& device);
// The group if one was created, else null. (runtime.h's end_run() ends it.)
ProcessGroup* current_process_group();

}  // namespace yoloflow::core::dist
