#pragma once
// Out-of-memory recovery in the train sink: which exceptions are an allocation failure, and
// the micro-batch to retry with.
//
// What the step engine does on one (step/step_engine.cpp):
//  - the failed attempt's autograd graph and activations are freed as the exception unwinds;
//  - every gradient of the accumulation window is dropped (.grad undefined, window restarted):
//    an OOM inside backward leaves some parameters with the failed chunk's contribution and
//    some without, which cannot be told apart afterwards. Keeping a copy of .grad before each
//    batch would allow an exact undo, but costs a parameter-sized buffer every batch exactly
//    when memory is short; an OOM happens at most log2(batch) times a run, and dropping the
//    window only loses the up to accumulate - 1 batches already in it (the next optimizer step
//    sees fewer images, as at an epoch's end);
//  - the CUDA caching allocator's cached blocks are returned to the driver, so the retry starts
//    from the least fragmented state;
//  - the micro-batch is halved and the same batch is retried; the new value holds for the rest
//    of the run and is saved in checkpoints, so a resume keeps it.
// Only the forward and backward passes are guarded: the optimizer step's memory (gradients,
// optimizer state) does not shrink with the micro-batch, so an error there ends the run.
// Under data-parallel training a rank cannot retry alone (the others would wait in a gradient
// all-reduce), so the error is rethrown with advice instead.
#include <cstdint>
#include <exception>
#include <string>

#include "yoloflow/error.h"

namespace yoloflow::core {

// An out-of-memory error raised in a plugin component's code, its message naming the component
// (component_guard.h): still an allocation failure for is_out_of_memory.
class ComponentOutOfMemory final : public Error {
 public:
  using Error::Error;
};

// True for an allocation failure: c10::OutOfMemoryError (the CUDA caching allocator, LibTorch
// 1.13 and later), the CPU allocator's c10::Error ("DefaultCPUAllocator: can't allocate
// memory" / "not enough memory"; LibTorch 1.13 raises a plain c10::Error there), std::bad_alloc,
// and any of those raised in a component's code (ComponentOutOfMemory).
bool is_out_of_memory(const std::exception& e);

// The error's message without LibTorch's backtrace, first line only (for a log line).
std::string short_message(const std::exception& e);

// The micro-batch after an out-of-memory error at `micro_batch` (0 = the whole `batch`): half of
// it. Throws yoloflow::Error, quoting `cause`, when that is below one image.
std::int64_t halved_micro_batch(std::int64_t micro_batch, std::int64_t batch, const std::string& cause);

}  // namespace yoloflow::core
