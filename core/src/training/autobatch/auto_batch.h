#pragma once
// Auto batch, the arithmetic: from the peak memory of a few profiled training steps, the
// largest batch whose predicted peak stays within a target. Pure (no LibTorch, no device), so
// the choice is tested with measured-looking numbers; auto_batch_profiler.h measures.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace yoloflow::core {

// The fraction of the device's memory `batch` asks for: "auto" = 0.60 (Ultralytics' batch=-1),
// a number in (0, 1) = itself; 0 for anything else (a plain batch size: nothing to resolve).
double auto_batch_fraction(const nlohmann::json& batch);

struct BatchMemory {
  std::int64_t batch = 0;
  double bytes = 0;  // peak reserved by one forward + loss + backward of `batch` images
};

struct AutoBatchChoice {
  std::int64_t batch = 1;
  double per_image = 0;   // fit: step peak = per_image * batch + fixed
  double fixed = 0;
  double persistent = 0;  // state outside the profiled step (optimizer moments, EMA), added
  double target = 0;      // bytes the chosen batch must stay within
  double predicted = 0;   // per_image * batch + fixed + persistent
  std::string warning;    // set when the fit could not be used as is (and why)
};

// Least-squares line through `points` (at least one, batches ascending), then the largest batch
// in [1, max_batch] whose prediction fits `target_bytes`, and below `oom_batch` (> 0: the
// profiled batch that ran out of memory). A single point is read as per-image memory only
// (fixed 0, conservative); a flat or falling fit keeps the largest profiled batch within the
// target; when even one image is predicted above the target, batch 1 with a warning. Throws
// yoloflow::Error when `points` is empty (not even one image fits the device).
AutoBatchChoice choose_auto_batch(const std::vector<BatchMemory>& points, double target_bytes,
                                  double persistent_bytes, std::int64_t max_batch, std::int64_t oom_batch = 0);

// The fit extrapolates from small batches; a real step at the chosen batch says how far off it
// is. From the line through `profiled` (the largest profiled batch) and `checked` (the step at the
// chosen batch), the largest batch in [1, max_batch] whose peak plus `persistent_bytes` fits
// `target_bytes`. `checked.batch` itself when its peak is within 90-100% of the target.
std::int64_t refine_auto_batch(const BatchMemory& profiled, const BatchMemory& checked, double target_bytes,
                               double persistent_bytes, std::int64_t max_batch);

// The log line: "auto batch: peak reserved 1.10 GiB @1, 1.60 @2, ... (OOM @16) -> 0.502 GiB/image +
// 0.60 GiB + 0.03 GiB optimizer/EMA state; target 0.60 x 139.8 GiB = 83.9 GiB -> batch 165
// (predicted 83.4 GiB)".
std::string describe_auto_batch(const std::vector<BatchMemory>& points, std::int64_t oom_batch,
                                const AutoBatchChoice& choice, double fraction, double capacity_bytes);

}  // namespace yoloflow::core
