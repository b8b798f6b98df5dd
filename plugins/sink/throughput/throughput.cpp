// throughput: the sink of inspect pipelines. Measures images/s and batches/s and the
// label statistics a user checks before training (empty images, boxes per image, classes,
// box sizes), all from the batches themselves: a sink cannot see the source.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "yoloflow/log.h"
#include "yoloflow/plugin.h"
#include "yoloflow/sink.h"

namespace yoloflow::plugins {
namespace {

using Clock = std::chrono::steady_clock;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(std::size_t part, std::size_t whole) {
  return fixed(whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0, 1) + "%";
}

class Throughput final : public Sink {
 public:
  // COCO's size classes, by box area in pixels.
  static constexpr double kSmallArea = 32.0 * 32.0;
  static constexpr double kLargeArea = 96.0 * 96.0;

  static Schema schema() {
    Schema s;
    s.add_int("top_classes", 10).min(0).fixed().doc("How many of the most frequent classes to list.");
    s.add_json("names", json::array()).fixed().doc(
        "Class names, index = class id (e.g. copied from data.yaml); ids are shown without.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    std::lock_guard<std::mutex> lock(mutex_);
    top_classes_ = static_cast<std::size_t>(p.get_int("top_classes"));
    names_.clear();
    for (const auto& n : p.get_json("names")) names_.push_back(n.is_string() ? n.get<std::string>() : n.dump());
    where_ = context.node;
  }

  void begin_epoch(int epoch) override {
    std::lock_guard<std::mutex> lock(mutex_);
    epoch_start_ = Clock::now();
    first_batch_images_ = rate_batches_offset_ = 0;
  }

  void consume(Batch& batch) override {
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!epoch_start_) {
      // No begin_epoch: time runs from this first batch, which therefore is not counted
      // in the rate (its production time is unknown).
      epoch_start_ = now;
      first_batch_images_ = static_cast<std::size_t>(batch.size);
      rate_batches_offset_ = 1;
    }
    last_batch_ = now;
    ++batches_;
    images_ += static_cast<std::size_t>(batch.size);
    epoch_images_ += static_cast<std::size_t>(batch.size);
    ++epoch_batches_;
    std::vector<std::size_t> per_image(static_cast<std::size_t>(batch.size), 0);
    const double W = static_cast<double>(batch.width), H = static_cast<double>(batch.height);
    const TargetArray& boxes = std::as_const(batch).boxes();
    // Rows the values hold in full: a batcher's malformed array is not read past its end.
    const auto rows = std::min<std::int64_t>(boxes.rows(), static_cast<std::int64_t>(boxes.values.size() / 6));
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* t = boxes.values.data() + r * 6;
      const auto image = static_cast<std::size_t>(t[0]);
      if (image < per_image.size()) ++per_image[image];
      ++class_counts_[static_cast<int>(t[1])];
      const double area = t[4] * W * t[5] * H;
      if (area < kSmallArea) {
        ++small_;
      } else if (area < kLargeArea) {
        ++medium_;
      } else {
        ++large_;
      }
      ++boxes_;
    }
    for (std::size_t n : per_image) {
      if (n == 0) ++empty_images_;
      max_boxes_per_image_ = std::max(max_boxes_per_image_, n);
    }
    sizes_seen_.insert({batch.width, batch.height});
  }

  void end_epoch(int epoch) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (epoch_start_ && last_batch_) {
      timed_seconds_ += std::chrono::duration<double>(*last_batch_ - *epoch_start_).count();
      timed_images_ += epoch_images_ - first_batch_images_;
      timed_batches_ += epoch_batches_ - rate_batches_offset_;
    }
    ++epochs_;
    epoch_start_.reset();
    last_batch_.reset();
    epoch_images_ = epoch_batches_ = first_batch_images_ = rate_batches_offset_ = 0;
    YF_LOG_INFO("throughput '" << where_ << "': epoch " << epoch << " done, " << images_
                               << " images so far");
  }

  std::string summary() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    // Include an epoch still open (end_epoch not called yet).
    double seconds = timed_seconds_;
    std::size_t timed_images = timed_images_, timed_batches = timed_batches_;
    if (epoch_start_ && last_batch_) {
      seconds += std::chrono::duration<double>(*last_batch_ - *epoch_start_).count();
      timed_images += epoch_images_ - first_batch_images_;
      timed_batches += epoch_batches_ - rate_batches_offset_;
    }
    std::ostringstream s;
    s << "throughput: " << images_ << " images in " << batches_ << " batches";
    if (seconds > 0) {
      s << ", " << fixed(timed_images / seconds, 1) << " images/s, "
        << fixed(timed_batches / seconds, 2) << " batches/s (over " << fixed(seconds, 3) << " s)";
    } else {
      s << ", too few batches to time";
    }
    s << "\n";
    s << "images: " << images_ << ", empty (no boxes): " << empty_images_ << " ("
      << percent(empty_images_, images_) << ")\n";
    s << "boxes: " << boxes_ << ", per image mean "
      << fixed(images_ ? static_cast<double>(boxes_) / images_ : 0.0, 2) << ", max "
      << max_boxes_per_image_ << "\n";
    s << "box sizes (COCO areas in batch pixels: small < 32^2, medium < 96^2, large): small "
      << small_ << " (" << percent(small_, boxes_) << "), medium " << medium_ << " ("
      << percent(medium_, boxes_) << "), large " << large_ << " (" << percent(large_, boxes_)
      << ")\n";
    std::vector<std::pair<int, std::size_t>> classes(class_counts_.begin(), class_counts_.end());
    std::stable_sort(classes.begin(), classes.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    s << "classes: " << classes.size() << " distinct ids";
    const std::size_t shown = std::min(top_classes_, classes.size());
    if (shown > 0) {
      s << "; top " << shown << " by instances:";
      for (std::size_t i = 0; i < shown; ++i) {
        const int id = classes[i].first;
        s << (i ? ", " : " ") << id;
        if (id >= 0 && static_cast<std::size_t>(id) < names_.size()) s << " " << names_[static_cast<std::size_t>(id)];
        s << ": " << classes[i].second;
      }
    }
    s << "\n";
    s << "batch image sizes:";
    for (const auto& [w, h] : sizes_seen_) s << " " << w << "x" << h;
    return s.str();
  }

 private:
  mutable std::mutex mutex_;
  std::size_t top_classes_ = 10;
  std::vector<std::string> names_;
  std::string where_;
  std::optional<Clock::time_point> epoch_start_, last_batch_;
  std::size_t first_batch_images_ = 0, rate_batches_offset_ = 0;
  std::size_t epoch_images_ = 0, epoch_batches_ = 0;
  double timed_seconds_ = 0;
  std::size_t timed_images_ = 0, timed_batches_ = 0;
  int epochs_ = 0;
  std::size_t images_ = 0, batches_ = 0, boxes_ = 0, empty_images_ = 0, max_boxes_per_image_ = 0;
  std::size_t small_ = 0, medium_ = 0, large_ = 0;
  std::map<int, std::size_t> class_counts_;
  std::set<std::pair<std::int64_t, std::int64_t>> sizes_seen_;
};

void register_throughput(Registrar& r) {
  r.add_sink<Throughput>(
      "throughput", Throughput::schema(),
      "Measures images/s and batches/s and summarises the labels delivered (empty images, "
      "boxes per image, classes, COCO box sizes).");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("throughput", "1.0.0", yoloflow::plugins::register_throughput)
