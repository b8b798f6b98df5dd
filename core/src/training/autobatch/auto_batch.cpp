#include "training/autobatch/auto_batch.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "runtime/util/text_format.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kAutoFraction = 0.60;  // Ultralytics' batch=-1

std::string gib(double bytes, int digits = 2) { return format_fixed(bytes / kGiB, digits); }

}  // namespace

double auto_batch_fraction(const nlohmann::json& batch) {
  if (batch.is_string()) return batch.get<std::string>() == "auto" ? kAutoFraction : 0.0;
  if (batch.is_number() && !batch.is_boolean()) {
    const double v = batch.get<double>();
    if (v > 0.0 && v < 1.0) return v;
  }
  return 0.0;
}

AutoBatchChoice choose_auto_batch(const std::vector<BatchMemory>& points, double target_bytes,
                                  double persistent_bytes, std::int64_t max_batch, std::int64_t oom_batch) {
  if (points.empty()) {
    throw Error("auto batch: a training step of one image ran out of device memory; nothing fits (use a smaller "
                "model or image size, or micro_batch)");
  }
  AutoBatchChoice c;
  c.target = target_bytes;
  c.persistent = persistent_bytes;
  if (points.size() == 1) {
    // One point cannot separate the fixed part from the per-image part: all of it per image
    // over-predicts larger batches, the safe side.
    c.per_image = points[0].bytes / static_cast<double>(std::max<std::int64_t>(points[0].batch, 1));
    c.fixed = 0.0;
  } else {
    double mx = 0, my = 0;
    for (const auto& p : points) {
      mx += static_cast<double>(p.batch);
      my += p.bytes;
    }
    mx /= static_cast<double>(points.size());
    my /= static_cast<double>(points.size());
    double sxy = 0, sxx = 0;
    for (const auto& p : points) {
      sxy += (static_cast<double>(p.batch) - mx) * (p.bytes - my);
      sxx += (static_cast<double>(p.batch) - mx) * (static_cast<double>(p.batch) - mx);
    }
    c.per_image = sxx > 0 ? sxy / sxx : 0.0;
    c.fixed = my - c.per_image * mx;
  }
  std::int64_t upper = std::max<std::int64_t>(max_batch, 1);
  if (oom_batch > 0) upper = std::min(upper, std::max<std::int64_t>(oom_batch - 1, 1));
  const auto predict = [&](std::int64_t b) { return c.per_image * static_cast<double>(b) + c.fixed + persistent_bytes; };
  if (c.per_image <= 0.0) {
    // Memory did not grow with the batch in the profile (noise): trust only what was measured.
    c.warning = "the profiled peaks do not grow with the batch; keeping the largest profiled batch within the target";
    c.batch = 1;
    for (const auto& p : points) {
      if (p.bytes + persistent_bytes <= target_bytes && p.batch <= upper) c.batch = std::max(c.batch, p.batch);
    }
    c.predicted = predict(c.batch);
    return c;
  }
  const double fit = std::floor((target_bytes - c.fixed - persistent_bytes) / c.per_image);
  if (fit < 1.0) {
    c.batch = 1;
    c.predicted = predict(1);
    c.warning = "even one image is predicted to need " + gib(c.predicted) + " GiB, above the target of " +
                gib(target_bytes) + " GiB; using batch 1";
    return c;
  }
  c.batch = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(fit, 1.0e9)), 1, upper);
  c.predicted = predict(c.batch);
  return c;
}

std::string describe_auto_batch(const std::vector<BatchMemory>& points, std::int64_t oom_batch,
                                const AutoBatchChoice& choice, double fraction, double capacity_bytes) {
  std::ostringstream os;
  os << "auto batch: peak reserved ";
  for (std::size_t i = 0; i < points.size(); ++i) {
    os << (i ? ", " : "") << gib(points[i].bytes) << (i ? "" : " GiB") << " @" << points[i].batch;
  }
  if (oom_batch > 0) os << (points.empty() ? "" : ", ") << "out of memory @" << oom_batch;
  os << " -> " << format_fixed(choice.per_image / kGiB, 3) << " GiB/image + " << gib(choice.fixed) << " GiB + "
     << gib(choice.persistent) << " GiB optimizer/EMA state; target " << format_fixed(fraction, 2) << " x "
     << format_fixed(capacity_bytes / kGiB, 1) << " GiB = " << format_fixed(choice.target / kGiB, 1) << " GiB -> batch "
     << choice.batch << " (predicted " << format_fixed(choice.predicted / kGiB, 1) << " GiB)";
  return os.str();
}

std::int64_t refine_auto_batch(const BatchMemory& profiled, const BatchMemory& checked, double target_bytes,
                               double persistent_bytes, std::int64_t max_batch) {
  const double peak = checked.bytes + persistent_bytes;
  if (peak <= target_bytes && peak >= 0.9 * target_bytes) return checked.batch;
  const double per_image =
      checked.batch > profiled.batch ? (checked.bytes - profiled.bytes) / static_cast<double>(checked.batch - profiled.batch) : 0;
  if (per_image <= 0) return checked.batch;  // no growth to go by: keep what was checked
  const double room = target_bytes - persistent_bytes - profiled.bytes;
  const auto batch = profiled.batch + static_cast<std::int64_t>(std::floor(room / per_image));
  return std::clamp<std::int64_t>(batch, 1, std::max<std::int64_t>(max_batch, 1));
}

}  // namespace yoloflow::core
