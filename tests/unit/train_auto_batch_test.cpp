// Auto batch's choice from profiled peaks (training/autobatch/auto_batch.h): the least-squares fit, the
// largest batch within the target, and every fallback, with numbers shaped like real
// measurements (GiB-sized peaks growing linearly with the batch).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "training/autobatch/auto_batch.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using core::BatchMemory;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Peaks of batches 1, 2, 4, 8, 16 for `per_image` GiB an image over `fixed` GiB, each times
// (1 + noise[i]).
std::vector<BatchMemory> peaks(double per_image, double fixed, const std::vector<double>& noise = {0, 0, 0, 0, 0}) {
  std::vector<BatchMemory> out;
  const std::int64_t batches[] = {1, 2, 4, 8, 16};
  for (std::size_t i = 0; i < noise.size(); ++i) {
    out.push_back({batches[i], (per_image * static_cast<double>(batches[i]) + fixed) * (1.0 + noise[i]) * kGiB});
  }
  return out;
}

}  // namespace

TEST_CASE("auto batch: \"auto\" is 0.60 of the device, a number in (0, 1) itself, anything else nothing to resolve") {
  CHECK(core::auto_batch_fraction("auto") == doctest::Approx(0.60));
  CHECK(core::auto_batch_fraction(0.7) == doctest::Approx(0.7));
  CHECK(core::auto_batch_fraction(16) == 0.0);
  CHECK(core::auto_batch_fraction(1.0) == 0.0);
  CHECK(core::auto_batch_fraction("16") == 0.0);
}

TEST_CASE("auto batch: exact linear peaks give the largest batch within the target, and the log line says how") {
  // 0.5 GiB an image over 1 GiB, 0.1 GiB optimizer/EMA state; target 0.60 x 80 GiB = 48 GiB:
  // (48 - 1 - 0.1) / 0.5 = 93.8 -> 93.
  const auto points = peaks(0.5, 1.0);
  const auto c = core::choose_auto_batch(points, 0.6 * 80 * kGiB, 0.1 * kGiB, 1024);
  CHECK(c.per_image / kGiB == doctest::Approx(0.5));
  CHECK(c.fixed / kGiB == doctest::Approx(1.0));
  CHECK(c.batch == 93);
  CHECK(c.predicted / kGiB == doctest::Approx(47.6));
  CHECK(c.predicted <= c.target);
  CHECK(c.warning.empty());
  CHECK(core::describe_auto_batch(points, 0, c, 0.6, 80 * kGiB) ==
        "auto batch: peak reserved 1.50 GiB @1, 2.00 @2, 3.00 @4, 5.00 @8, 9.00 @16 -> 0.500 GiB/image + 1.00 GiB + "
        "0.10 GiB optimizer/EMA state; target 0.60 x 80.0 GiB = 48.0 GiB -> batch 93 (predicted 47.6 GiB)");
}

TEST_CASE("auto batch: noisy peaks fit close to the true line and the choice stays within the target") {
  const auto points = peaks(0.5, 1.0, {0.04, -0.03, 0.02, -0.01, 0.01});
  const auto c = core::choose_auto_batch(points, 48 * kGiB, 0.1 * kGiB, 1024);
  CHECK(c.per_image / kGiB == doctest::Approx(0.5).epsilon(0.03));
  CHECK(c.batch >= 88);
  CHECK(c.batch <= 98);
  CHECK(c.predicted <= c.target);
  CHECK(c.warning.empty());
}

TEST_CASE("auto batch: an out-of-memory error at 8 leaves three points and caps the batch below 8") {
  auto points = peaks(0.5, 1.0, {0, 0, 0});
  REQUIRE(points.size() == 3);
  // The fit alone would allow 93; the device failed at 8.
  auto c = core::choose_auto_batch(points, 48 * kGiB, 0.1 * kGiB, 1024, 8);
  CHECK(c.per_image / kGiB == doctest::Approx(0.5));
  CHECK(c.batch == 7);
  // A target the fit puts below 7 wins: (4 - 1 - 0.1) / 0.5 = 5.8 -> 5.
  c = core::choose_auto_batch(points, 4 * kGiB, 0.1 * kGiB, 1024, 8);
  CHECK(c.batch == 5);
  CHECK(core::describe_auto_batch(points, 8, c, 0.6, 4 / 0.6 * kGiB).find("3.00 @4, out of memory @8 -> ") !=
        std::string::npos);
}

TEST_CASE("auto batch: a target below what one image needs gives batch 1 with a warning") {
  const auto c = core::choose_auto_batch(peaks(0.5, 1.0), 1.2 * kGiB, 0.1 * kGiB, 1024);
  CHECK(c.batch == 1);
  CHECK(c.predicted > c.target);
  CHECK(c.warning.find("even one image is predicted to need 1.60 GiB, above the target of 1.20 GiB") !=
        std::string::npos);
}

TEST_CASE("auto batch: the batch is clamped to the most allowed (1024, or the training samples)") {
  const auto points = peaks(0.01, 0.5);
  CHECK(core::choose_auto_batch(points, 80 * kGiB, 0, 1024).batch == 1024);
  CHECK(core::choose_auto_batch(points, 80 * kGiB, 0, 128).batch == 128);
}

TEST_CASE("auto batch: one point is read as per-image memory only; flat peaks keep the largest profiled batch") {
  // Out of memory at 2: 2 GiB at batch 1, all of it taken per image.
  auto c = core::choose_auto_batch({{1, 2 * kGiB}}, 10 * kGiB, 0, 1024, 2);
  CHECK(c.per_image / kGiB == doctest::Approx(2.0));
  CHECK(c.fixed == 0.0);
  CHECK(c.batch == 1);  // 5 by the fit, but 2 did not fit the device
  c = core::choose_auto_batch({{1, 2 * kGiB}}, 10 * kGiB, 0, 1024);
  CHECK(c.batch == 5);
  // Peaks that do not grow (measurement noise around a fixed cost): only what was measured.
  c = core::choose_auto_batch(peaks(0.0, 3.0, {0.01, 0, -0.01, 0, 0}), 10 * kGiB, 0, 1024);
  CHECK(c.batch == 16);
  CHECK_FALSE(c.warning.empty());
  c = core::choose_auto_batch(peaks(0.0, 3.0, {0.01, 0, -0.01, 0, 0}), 2 * kGiB, 0, 1024);
  CHECK(c.batch == 1);
}

TEST_CASE("auto batch: no profiled point (one image ran out of memory) is an error that says so") {
  CHECK_THROWS_WITH_AS(core::choose_auto_batch({}, 10 * kGiB, 0, 1024, 1),
                       doctest::Contains("a training step of one image ran out of device memory"), Error);
}

TEST_CASE("auto batch: a checked step above the fit corrects the batch along the measured line") {
  // Numbers measured on an H200 (yolo11n fp32): 5.08 GiB at 16 profiled, and the fit's batch
  // 175 really needing 46.8 GiB against a 35.0 GiB target. The line through both: 0.2624
  // GiB/image, so (35.0 - 0.03 - 5.08) / 0.2624 = 113.9 images above 16 -> 129.
  const BatchMemory profiled{16, 5.08 * kGiB};
  const BatchMemory checked{175, 46.8 * kGiB};
  const auto next = core::refine_auto_batch(profiled, checked, 35.0 * kGiB, 0.03 * kGiB, 1024);
  CHECK(next == 129);
  // That batch on the same line: within the target and above 90% of it.
  const double at_next = 5.08 + 0.03 + (46.8 - 5.08) / (175 - 16) * static_cast<double>(next - 16);
  CHECK(at_next <= 35.0);
  CHECK(at_next >= 0.9 * 35.0);
  // A checked peak within 90-100% of the target keeps the batch; one well below raises it.
  CHECK(core::refine_auto_batch(profiled, {129, 34.0 * kGiB}, 35.0 * kGiB, 0.03 * kGiB, 1024) == 129);
  CHECK(core::refine_auto_batch(profiled, {100, 20.0 * kGiB}, 35.0 * kGiB, 0.03 * kGiB, 1024) > 100);
  // Never past the most allowed, never below one image.
  CHECK(core::refine_auto_batch(profiled, {100, 20.0 * kGiB}, 35.0 * kGiB, 0.03 * kGiB, 120) == 120);
  CHECK(core::refine_auto_batch({1, 5.0 * kGiB}, {10, 50.0 * kGiB}, 0.1 * kGiB, 0.03 * kGiB, 1024) == 1);
}
