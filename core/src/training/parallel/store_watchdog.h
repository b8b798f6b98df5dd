#pragma once
// A heartbeat through the rendezvous store, so that no rank waits forever for a peer that
// is gone: every second each rank bumps its counter and checks the others'. A rank whose
// counter stops for `timeout` (killed, hung), a rank that reported a failure, or a store
// that vanished (rank 0 ended) ends this process with exit code 1 and a message naming the
// rank. Collectives have timeouts too, but a dead peer can leave NCCL waiting for them.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace yoloflow::core::dist {

class StoreWatchdog {
 public:
  // `store` must be a connection of its own: a TCPStore client is not shared across threads.
  StoreWatchdog(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                std::chrono::milliseconds timeout, std::string store_address);
  ~StoreWatchdog();
  StoreWatchdog(const StoreWatchdog&) = delete;
  StoreWatchdog& operator=(const StoreWatchdog&) = delete;

  // Marks this rank finished (others stop watching it) and stops the thread.
  void stop();
  // Publishes why this rank stops (unless another rank's failure came first), and stops
  // watching: the others' watchdogs end their processes with that reason.
  void report_failure(const std::string& reason);

 private:
  void run();
  [[noreturn]] void fatal(const std::string& message);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_, world_;
  std::chrono::milliseconds timeout_;
  std::string address_;
  std::mutex mutex_;  // the store connection and stop_
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace yoloflow::core::dist
