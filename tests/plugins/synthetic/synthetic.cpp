// Test plugin for pipeline and graph tests: a synthetic source of small in-memory images
// with boxes, a marking augmentation (that throws on request), a simple batcher, a sink
// that can be slow and that measures how many samples are alive, and a monitor (a plugin
// of a non-graph kind).
//
// Liveness is measured, not assumed: the source counts every sample it hands out, the sink
// every sample it consumed; their difference at each load is the number of samples alive
// between source and sink, and its peak is reported in the sink's summary.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/monitor.h"
#include "yoloflow/plugin.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

namespace {

using namespace yoloflow;

struct Liveness {
  std::atomic<long> loaded{0}, consumed{0}, peak{0};
  void reset() {
    loaded = 0;
    consumed = 0;
    peak = 0;
  }
  void on_load() {
    const long alive = ++loaded - consumed.load();
    for (long p = peak.load(); alive > p && !peak.compare_exchange_weak(p, alive);) {
    }
  }
};
Liveness& liveness() {
  static Liveness l;
  return l;
}

class SyntheticSource final : public DataSource {
 public:
  void configure(const Params& p, const StageContext& ctx) override {
    count_ = static_cast<std::size_t>(p.get_int("count"));
    size_ = static_cast<int>(p.get_int("size"));
    const auto bad = p.get_ints("fail");
    fail_.assign(bad.begin(), bad.end());
    delay_us_ = p.get_int("delay_us");
    if (p.get_bool("missing_data")) {
      throw InvalidInput("data file " + p.get_string("data") + " does not exist");
    }
    if (ctx.epoch == 0) liveness().reset();
  }
  std::size_t size() const override { return count_; }
  Sample load(std::size_t index) override {
    const std::string path = "synthetic/" + std::to_string(index) + ".png";
    if (std::find(fail_.begin(), fail_.end(), static_cast<std::int64_t>(index)) != fail_.end()) {
      std::lock_guard<std::mutex> lock(mutex_);
      issues_.push_back({path, "corrupt image", "skipped image"});
      throw std::runtime_error("corrupt image " + path);
    }
    if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
    Sample s;
    s.index = index;
    s.path = path;
    s.image = cv::Mat(size_, size_, CV_8UC3, cv::Scalar(index % 256, (index / 256) % 256, 7));
    const float c = static_cast<float>(size_) / 2.0f;
    s.boxes.push_back({c - 4, c - 4, c + 4, c + 4, static_cast<int>(index % 3)});
    s.geometry.original_width = s.geometry.original_height = size_;
    liveness().on_load();
    return s;
  }
  DatasetInfo info() const override {
    DatasetInfo i;
    i.root = "synthetic";
    i.names = {"a", "b", "c"};
    i.images = count_ - fail_.size();
    i.boxes = i.images;
    return i;
  }
  std::vector<DataIssue> issues() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return issues_;
  }

 private:
  std::size_t count_ = 0;
  int size_ = 8;
  std::vector<std::int64_t> fail_;
  std::int64_t delay_us_ = 0;
  mutable std::mutex mutex_;
  std::vector<DataIssue> issues_;
};

// Writes a random byte from the sample's generator into pixel (0,0), so batches show
// whether every sample got the same random numbers in two runs.
class SyntheticMark final : public Augmentation {
 public:
  void configure(const Params& p, const StageContext&) override {
    throw_on_ = p.get_int("throw_on");
    strength_ = p.get_float("strength");
  }
  void apply(Sample& s, AugmentContext& ctx) override {
    if (throw_on_ >= 0 && s.index == static_cast<std::size_t>(throw_on_)) {
      throw std::runtime_error("mark failed on purpose");
    }
    s.image.at<cv::Vec3b>(0, 0)[2] = static_cast<std::uint8_t>(ctx.rng.integer(0, 255));
    s.image.at<cv::Vec3b>(0, 1)[2] = static_cast<std::uint8_t>(strength_ * 100.0);
  }

 private:
  std::int64_t throw_on_ = -1;
  double strength_ = 1.0;
};

class SyntheticBatcher final : public Batcher {
 public:
  void configure(const Params& p, const StageContext&) override { batch_ = p.get_int("batch"); }
  std::int64_t batch_size() const override { return batch_; }
  std::optional<Batch> add(Sample&& s) override {
    pending_.push_back(std::move(s));
    if (static_cast<std::int64_t>(pending_.size()) < batch_) return std::nullopt;
    return make();
  }
  std::optional<Batch> flush() override {
    if (pending_.empty()) return std::nullopt;
    return make();
  }
  void set_allocator(PixelAllocator a) override { allocator_ = std::move(a); }

 private:
  Batch make() {
    Batch b;
    b.size = static_cast<std::int64_t>(pending_.size());
    b.height = pending_[0].image.rows;
    b.width = pending_[0].image.cols;
    const std::size_t bytes = static_cast<std::size_t>(b.size * b.height * b.width * 3);
    b.pixels = allocator_ ? allocator_(bytes)
                          : std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes],
                                                          std::default_delete<std::uint8_t[]>());
    TargetArray& boxes = b.boxes();
    for (std::int64_t i = 0; i < b.size; ++i) {
      const Sample& s = pending_[static_cast<std::size_t>(i)];
      std::memcpy(b.image_data(i), s.image.data, static_cast<std::size_t>(b.height * b.width * 3));
      for (const auto& box : s.boxes) {
        boxes.values.insert(boxes.values.end(),
                            {static_cast<float>(i), static_cast<float>(box.cls),
                             (box.x1 + box.x2) / 2 / b.width, (box.y1 + box.y2) / 2 / b.height,
                             box.width() / b.width, box.height() / b.height});
      }
      b.samples.push_back({s.index, s.path, s.geometry});
    }
    boxes.shape = {static_cast<std::int64_t>(boxes.values.size() / 6), 6};
    pending_.clear();
    return b;
  }
  std::int64_t batch_ = 4;
  std::vector<Sample> pending_;
  PixelAllocator allocator_;
};

class SyntheticSink final : public Sink {
 public:
  void configure(const Params& p, const StageContext&) override {
    delay_ms_ = p.get_int("delay_ms");
    throw_on_batch_ = p.get_int("throw_on_batch");
  }
  void begin_epoch(int) override {
    ++epochs_begun_;
    epoch_thread_ = std::this_thread::get_id();
  }
  void consume(Batch& b) override {
    // The runner calls begin_epoch and consume on the thread that runs the epoch.
    if (std::this_thread::get_id() != epoch_thread_) ++other_thread_batches_;
    if (throw_on_batch_ >= 0 && b.index == throw_on_batch_) {
      throw std::runtime_error("sink failed on purpose");
    }
    if (delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
    // FNV-1a over what a trainer would see: order, indices, pixels, targets.
    auto mix = [this](const void* data, std::size_t n) {
      const auto* p = static_cast<const unsigned char*>(data);
      for (std::size_t i = 0; i < n; ++i) digest_ = (digest_ ^ p[i]) * 1099511628211ULL;
    };
    mix(&b.index, sizeof(b.index));
    for (const auto& s : b.samples) mix(&s.index, sizeof(s.index));
    mix(b.pixels.get(), static_cast<std::size_t>(b.size * b.height * b.width * 3));
    for (const auto& [name, array] : b.targets) {
      mix(name.data(), name.size());
      mix(array.values.data(), array.values.size() * sizeof(float));
    }
    samples_ += static_cast<std::size_t>(b.size);
    ++batches_;
    liveness().consumed += static_cast<long>(b.size);
  }
  void end_epoch(int) override { ++epochs_ended_; }
  std::string summary() const override {
    std::ostringstream os;
    os << "synthetic_sink: samples=" << samples_ << " batches=" << batches_
       << " peak_alive=" << liveness().peak.load() << " epochs_begun=" << epochs_begun_
       << " epochs_ended=" << epochs_ended_ << " other_thread_batches=" << other_thread_batches_
       << " digest=" << std::hex << digest_;
    return os.str();
  }

 private:
  std::int64_t delay_ms_ = 0, throw_on_batch_ = -1;
  std::size_t samples_ = 0, batches_ = 0, other_thread_batches_ = 0;
  std::thread::id epoch_thread_;
  int epochs_begun_ = 0, epochs_ended_ = 0;
  std::uint64_t digest_ = 1469598103934665603ULL;
};

class SyntheticMonitor final : public Monitor {};

void register_synthetic(Registrar& r) {
  {
    Schema s;
    s.add_int("count", 32).min(0).doc("Number of samples.");
    s.add_int("size", 8).range(2, 4096).doc("Image side in pixels.");
    s.add_int_list("fail", {}).doc("Indices whose load throws (corrupt images).");
    s.add_int("delay_us", 0).min(0).doc("Time each load takes.");
    s.add_path("data").role(ParamRole::Dataset).doc("Unused: a dataset parameter for path-resolution and dataset-sharing tests.");
    s.add_bool("missing_data", false).doc("configure() reports `data` as missing (bad input).");
    r.add_source<SyntheticSource>("synthetic_source", std::move(s),
                                  "Small in-memory images with one box each (test plugin).");
  }
  {
    Schema s;
    s.add_int("throw_on", -1).min(-1).doc("Source index whose augmentation throws; -1 never.");
    s.add_float("strength", 1.0).range(0.0, 2.0).doc("Written into pixel (0,1); schedulable.");
    r.add_augmentation<SyntheticMark>("synthetic_mark", std::move(s),
                                      "Marks pixels with the sample's random numbers (test plugin).");
  }
  {
    Schema s;
    s.add_int("batch", 4).min(1).doc("Samples per batch.");
    r.add_batcher<SyntheticBatcher>("synthetic_batcher", std::move(s),
                                    "Stacks samples of equal size into batches (test plugin).");
  }
  {
    Schema s;
    s.add_int("delay_ms", 0).min(0).doc("Time each batch takes.");
    s.add_int("throw_on_batch", -1).min(-1).doc("Batch index whose consume throws; -1 never.");
    s.add_component("monitor", "monitor", nullptr).doc("A nested component (validation tests).");
    r.add_sink<SyntheticSink>("synthetic_sink", std::move(s),
                              "Counts and digests batches, can be slow (test plugin).");
  }
  r.add_monitor<SyntheticMonitor>("synthetic_monitor", {}, "Observes nothing (test plugin).");
}

}  // namespace

YOLOFLOW_PLUGIN("test_synthetic", "1.0.0", register_synthetic)
