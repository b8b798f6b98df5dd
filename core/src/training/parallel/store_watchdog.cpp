#include "training/parallel/store_watchdog.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core::dist {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBeat = std::chrono::seconds(1);

std::vector<std::uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

StoreWatchdog::StoreWatchdog(c10::intrusive_ptr<c10d::Store> store, int rank, int world,
                             std::chrono::milliseconds timeout, std::string store_address)
    : store_(std::move(store)), rank_(rank), world_(world), timeout_(timeout), address_(std::move(store_address)) {
  thread_ = std::thread([this] { run(); });
}

StoreWatchdog::~StoreWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StoreWatchdog::stop() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stop_) return;
  stop_ = true;
  try {
    store_->set("done/" + std::to_string(rank_), bytes("1"));
  } catch (const std::exception&) {
    // The store is gone: every rank is past its last barrier, nobody watches any more.
  }
  lock.unlock();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StoreWatchdog::report_failure(const std::string& reason) {
  std::unique_lock<std::mutex> lock(mutex_);
  try {
    // The first failure is the cause; later ones are its consequences.
    if (!store_->check({"failed"})) {
      store_->set("failed", bytes("rank " + std::to_string(rank_) + " failed: " + reason));
    }
  } catch (const std::exception&) {
    // Cannot tell the others; their heartbeat check notices this rank's end instead.
  }
  // This rank is on its way out with its own error: its watchdog must not end it first.
  stop_ = true;
  lock.unlock();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StoreWatchdog::fatal(const std::string& message) {
  // Called from the watchdog thread while the main thread may sit in a collective that will
  // never complete: print and end the process (std::_Exit runs no destructors that could block).
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(kExitFailure);
}

void StoreWatchdog::run() {
  std::vector<std::int64_t> last(world_, -1);
  std::vector<Clock::time_point> changed(world_, Clock::now());
  std::vector<bool> done(world_, false);
  const std::string me = std::to_string(rank_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    try {
      store_->add("hb/" + me, 1);
      if (store_->check({"failed"})) {
        const auto v = store_->get("failed");
        fatal(std::string(v.begin(), v.end()) + "; rank " + me + " stops too");
      }
      const auto now = Clock::now();
      for (int r = 0; r < world_; ++r) {
        if (r == rank_ || done[r]) continue;
        if (store_->check({"done/" + std::to_string(r)})) {
          done[r] = true;
          continue;
        }
        const std::int64_t beats = store_->add("hb/" + std::to_string(r), 0);
        if (beats != last[r]) {
          last[r] = beats;
          changed[r] = now;
        } else if (now - changed[r] > timeout_) {
          fatal("rank " + std::to_string(r) + " sent no heartbeat for " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout_).count()) +
                " s: it died or hangs; rank " + me + " stops");
        }
      }
    } catch (const std::exception& e) {
      if (stop_) break;
      fatal("rank " + me + " lost the rendezvous store at " + address_ +
            " (rank 0 or torchrun, which serves it, ended?): " + std::string(e.what()).substr(0, 200));
    }
    cv_.wait_for(lock, kBeat, [this] { return stop_; });
  }
}

}  // namespace yoloflow::core::dist
