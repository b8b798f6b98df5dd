#include "training/device/oom_guard.h"

#include <new>

#include <c10/util/Exception.h>

#include "yoloflow/error.h"

namespace yoloflow::core {

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const ComponentOutOfMemory*>(&e) != nullptr) return true;
  // c10::OutOfMemoryError exists since LibTorch 1.13 (the oldest supported here).
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  if (dynamic_cast<const c10::Error*>(&e) != nullptr) {
    const std::string what = e.what();
    // alloc_cpu.cpp's messages (posix_memalign and malloc paths), 1.13 and 2.x.
    return what.find("DefaultCPUAllocator: can't allocate memory") != std::string::npos ||
           what.find("DefaultCPUAllocator: not enough memory") != std::string::npos;
  }
  return false;
}

std::string short_message(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string what = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  const auto newline = what.find('\n');
  if (newline != std::string::npos) what.resize(newline);
  return what;
}

std::int64_t halved_micro_batch(std::int64_t micro_batch, std::int64_t batch, const std::string& cause) {
  const std::int64_t current = (micro_batch <= 0 || micro_batch > batch) ? batch : micro_batch;
  const std::int64_t next = current / 2;
  if (next < 1) {
    throw Error("train: out of memory with a micro-batch of " + std::to_string(current) +
                " image" + (current == 1 ? "" : "s") +
                "; cannot split further. Lower imgsz, use a smaller model or amp precision, "
                "checkpoint_backbone/checkpoint_neck, or free the device. Cause: " + cause);
  }
  return next;
}

}  // namespace yoloflow::core
