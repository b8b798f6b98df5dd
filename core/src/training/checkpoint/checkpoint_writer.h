#pragma once
// Checkpoints written on a background thread, so that the device does not idle while a file
// is pickled and fsynced at every epoch end (0.57-0.73 s for yolo11n's 42 MB on the 2-core
// dev machine, docs/performance.md "Epoch boundaries"; an epoch of coco128 x20 trains in ~2.2 s
// on the H200). The sink keeps training on its own tensors:
// save() first copies every tensor to the CPU, and the thread writes that copy. One write at
// a time, in order: a save waits for the one before it. Each file is still written atomically,
// so a kill during a write leaves the previous checkpoint whole.
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "training/checkpoint/checkpoint.h"

namespace yoloflow::core {

// Every tensor of `c` copied to the CPU (contiguous), detached from what training changes.
Checkpoint snapshot_on_cpu(const Checkpoint& c);

class CheckpointWriter {
 public:
  // `background` false: save() writes before it returns (what a caller gets after wait()).
  explicit CheckpointWriter(bool background) : background_(background) {}
  // Waits for a write in progress; a failure nobody collected is logged, not thrown.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Writes `c` to every path in `paths` (the same bytes: last.pt, best.pt, epochN.pt), then
  // runs `after` (on the writing thread; null for nothing): what may be recorded only once the
  // checkpoint is on disk, such as the epoch's results row. Waits for the previous write first
  // and rethrows its failure. A failure is a yoloflow::Error naming the file, `what` (e.g.
  // "epoch 3's checkpoint") and that `after` did not run.
  // `deployable_paths` get deployable_checkpoint(c) instead (best.pt), written before `after`
  // as the others.
  void save(const Checkpoint& c, std::vector<std::string> paths, std::string what = "the checkpoint",
            std::function<void()> after = nullptr, std::vector<std::string> deployable_paths = {});
  // Returns once every save so far is on disk; rethrows a failed write's error.
  void wait();
  // True once a background write has failed (its error is still to be collected by wait()):
  // polled between steps so that a run stops at the epoch whose checkpoint it could not keep.
  bool failed() const { return failed_ != nullptr && failed_->load(); }

 private:
  bool background_;
  std::future<void> pending_;
  std::shared_ptr<std::atomic<bool>> failed_;  // the pending write's outcome
};

}  // namespace yoloflow::core
