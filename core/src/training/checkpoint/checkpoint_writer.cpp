#include "training/checkpoint/checkpoint_writer.h"

#include <exception>
#include <utility>

#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

TensorList cpu_copy(const TensorList& list) {
  TensorList out;
  out.reserve(list.size());
  for (const auto& [name, t] : list) {
    // copy=true: a CPU tensor would otherwise come back as itself, which training changes.
    out.emplace_back(name, t.detach().to(t.options().device(torch::kCPU), /*non_blocking=*/false, /*copy=*/true)
                               .contiguous());
  }
  return out;
}

// Writes every file, then `after`; a failure names what could not be kept.
void write_all(const Checkpoint& c, const std::vector<std::string>& paths, const std::vector<std::string>& deployable,
               const std::string& what, const std::function<void()>& after) {
  try {
    if (!paths.empty()) {
      const std::vector<char> bytes = serialize_checkpoint(c);
      for (const auto& path : paths) write_checkpoint_bytes(path, bytes);
    }
    if (!deployable.empty()) {
      const std::vector<char> bytes = serialize_checkpoint(deployable_checkpoint(c));
      for (const auto& path : deployable) write_checkpoint_bytes(path, bytes);
    }
  } catch (const std::exception& e) {
    throw Error(what + " could not be written: " + e.what() + "; the files and results.csv keep what was saved before");
  }
  if (after) after();
}

}  // namespace

Checkpoint snapshot_on_cpu(const Checkpoint& c) {
  Checkpoint s = c;  // the scalars and meta
  s.model = cpu_copy(c.model);
  s.ema = cpu_copy(c.ema);
  s.optimizer = cpu_copy(c.optimizer);
  s.precision = cpu_copy(c.precision);
  s.grads = cpu_copy(c.grads);
  for (auto& [name, list] : s.callbacks) list = cpu_copy(list);
  return s;
}

CheckpointWriter::~CheckpointWriter() {
  try {
    wait();
  } catch (const std::exception& e) {
    YF_LOG_ERROR("checkpoint: " << e.what());
  }
}

void CheckpointWriter::save(const Checkpoint& c, std::vector<std::string> paths, std::string what,
                            std::function<void()> after, std::vector<std::string> deployable_paths) {
  wait();
  if (!background_) {
    write_all(c, paths, deployable_paths, what, after);
    return;
  }
  failed_ = std::make_shared<std::atomic<bool>>(false);
  pending_ = std::async(std::launch::async, [snapshot = snapshot_on_cpu(c), paths = std::move(paths),
                                             deployable = std::move(deployable_paths), what = std::move(what),
                                             after = std::move(after), failed = failed_] {
    try {
      write_all(snapshot, paths, deployable, what, after);
    } catch (...) {
      failed->store(true);
      throw;
    }
  });
}

void CheckpointWriter::wait() {
  if (!pending_.valid()) return;
  auto done = std::move(pending_);
  failed_.reset();
  done.get();  // rethrows the write's exception
}

}  // namespace yoloflow::core
