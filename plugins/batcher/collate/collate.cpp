// collate: stacks samples into a Batch. add() keeps each sample's image (a reference, no
// copy) and writes its targets, normalised by the batch's width and height, into the target
// arrays of yoloflow/sample.h: boxes [batch_idx, cls, cx, cy, w, h] always, the instances'
// keypoints [x, y, visible] when the batch's samples carry them, and each image's class when
// any sample has one; with `masks`, the instances' outlines rasterised as Ultralytics' segmentation
// targets (mask_raster.h). When the batch is complete, every image is converted BGR -> RGB straight
// into the batch buffer (one pass each), in parallel across the samples: add() runs on the
// graph's one serial batcher node, so a per-sample copy there would cap the whole data path.
// Samples whose pixels are planned (yoloflow/pixel_plan.h) make a batch of plans, which carries
// the decoded images they read (no pixel is copied here).
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <opencv2/imgproc.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "mask_raster.h"
#include "pixel_buffer_pool.h"

#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/fields.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

class Collate final : public Batcher {
 public:
  static Schema schema() {
    Schema s;
    s.add_int("batch", 16).range(1, 65536).accepts("auto").accepts_fraction().doc(
        "Samples per batch; may follow a per-epoch schedule. \"auto\" or a fraction in (0, 1): `yoloflow "
        "train` profiles the training step on the CUDA device before the run and picks the largest batch "
        "whose predicted peak memory stays within that fraction of the device's memory (\"auto\" = 0.60; "
        "16 on the CPU); the chosen number is written to the run's pipeline.json.");
    s.add_bool("drop_last", false).doc("Drop the last, partial batch of an epoch.");
    s.add_bool("masks", false).fixed().doc(
        "Rasterise the instances' outlines (polygons) into mask targets, as a segmentation loss reads them: "
        "with overlap_mask, one plane per image, 'image_masks' (B, H/r, W/r), holding k + 1 where the image's "
        "instance k is on top (larger instances drawn first); without, one plane per instance, 'masks' "
        "(N, H/r, W/r), 1 inside. r = mask_ratio. An instance without an outline has an empty mask.");
    s.add_bool("overlap_mask", true).fixed().doc(
        "With masks: one plane per image rather than one per instance (Ultralytics' overlap_mask).");
    s.add_int("mask_ratio", 4).range(1, 32).fixed().doc(
        "With masks: the masks' downsampling from the image size (Ultralytics' mask_ratio; 4 matches YOLO11-seg's "
        "prototypes).");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    const json& batch = p.get_json("batch");
    if (batch.is_string() || (batch.is_number() && batch.get<double>() < 1.0)) {
      // The host replaces "auto" or a fraction with a number before the graph is built.
      throw Error("collate '" + context.node + "': batch " + batch.dump() +
                  " must be resolved to a number of samples before the batcher is built (`yoloflow train` "
                  "and `yoloflow run` do it)");
    }
    batch_ = p.get_int("batch");
    drop_last_ = p.get_bool("drop_last");
    masks_ = p.get_bool("masks");
    overlap_mask_ = p.get_bool("overlap_mask");
    mask_ratio_ = static_cast<int>(p.get_int("mask_ratio"));
    epoch_ = context.epoch;
    where_ = context.node;
  }

  std::int64_t batch_size() const override { return batch_; }

  bool collates_pixel_plans() const override { return true; }

  std::optional<Batch> add(Sample&& sample) override {
    const cv::Mat& im = sample.image;
    const bool planned = sample.pixel_plan != nullptr;
    if (!planned && (im.empty() || im.type() != CV_8UC3)) {
      throw Error("collate '" + where_ + "': sample '" + sample.path +
                  "' is not an 8-bit 3-channel image");
    }
    const cv::Size size = image_size(sample);
    if (!pending_) start_batch(size.height, size.width, planned);
    Batch& b = *pending_;
    if (planned != planned_) {
      throw Error("collate '" + where_ + "': sample '" + sample.path + "' has its pixels " +
                  (planned ? "planned" : "made") + " but this batch's other samples have theirs " +
                  (planned_ ? "planned" : "made"));
    }
    if (size.height != b.height || size.width != b.width) {
      std::ostringstream s;
      s << "collate '" << where_ << "': image '" << sample.path << "' is " << size.width << "x"
        << size.height << " but this batch's images are " << b.width << "x" << b.height
        << "; all images in a batch must have the same size: add a letterbox stage before "
           "the batcher";
      throw Error(s.str());
    }
    // Before anything is written: a refused sample leaves the batch as it was.
    check_keypoints(sample);
    if (masks_ && (b.height % mask_ratio_ != 0 || b.width % mask_ratio_ != 0)) {
      throw Error("collate '" + where_ + "': images of " + std::to_string(b.width) + "x" + std::to_string(b.height) +
                  " do not divide by mask_ratio " + std::to_string(mask_ratio_));
    }
    const std::int64_t i = b.size;
    if (planned) {
      plans_.push_back(std::move(sample.pixel_plan));
    } else {
      images_.push_back(im);
    }
    const float W = static_cast<float>(b.width), H = static_cast<float>(b.height);
    const std::size_t n = sample.boxes.size();
    // One resize per sample (growing geometrically), rows written in place: no allocation per box.
    const std::size_t at = boxes_.size();
    boxes_.resize(at + 6 * n);
    float* row = boxes_.data() + at;
    for (const auto& box : sample.boxes) {
      row[0] = static_cast<float>(i);
      row[1] = static_cast<float>(box.cls);
      row[2] = (box.x1 + box.x2) * 0.5f / W;
      row[3] = (box.y1 + box.y2) * 0.5f / H;
      row[4] = box.width() / W;
      row[5] = box.height() / H;
      row += 6;
    }
    if (!sample.keypoints.empty()) {
      const std::size_t k = static_cast<std::size_t>(keypoints_per_box_);
      const std::size_t kat = keypoints_.size();
      keypoints_.resize(kat + 3 * k * n);
      float* p = keypoints_.data() + kat;
      for (const auto& points : sample.keypoints) {
        for (const Keypoint& q : points) {
          p[0] = q.x / W;
          p[1] = q.y / H;
          p[2] = q.visible;
          p += 3;
        }
      }
    } else if (n > 0 && bare_ == kNone) {
      bare_ = b.samples.size();  // this sample's boxes have no keypoints
    }
    if (masks_) {
      // Rasterised when the batch is finished, the samples in parallel (as their pixels are copied).
      polygons_.push_back(std::move(sample.polygons));
      instances_.push_back(n);
    }
    image_classes_.push_back(static_cast<float>(sample.image_class >= 0 ? sample.image_class : -1));
    if (sample.image_class >= 0) any_image_class_ = true;
    b.samples.push_back(SampleInfo{sample.index, std::move(sample.path), sample.geometry, sample.sequence});
    ++b.size;
    if (b.size < capacity_) return std::nullopt;
    return finish();
  }

  std::optional<Batch> flush() override {
    std::optional<Batch> out;
    if (pending_ && pending_->size > 0 && !drop_last_) out = finish();
    pending_.reset();
    images_.clear();
    plans_.clear();
    clear_targets();
    // The epoch is over: numbering restarts, and configure() is only called again when a
    // scheduled value changes, so the epoch count advances here.
    next_index_ = 0;
    ++epoch_;
    return out;
  }

  void set_allocator(PixelAllocator allocator) override { allocator_ = std::move(allocator); }

 private:
  void start_batch(int height, int width, bool planned) {
    pending_.emplace();
    planned_ = planned;
    plans_.clear();
    Batch& b = *pending_;
    capacity_ = batch_;
    b.height = height;
    b.width = width;
    b.epoch = epoch_;
    b.index = next_index_;
    b.samples.reserve(static_cast<std::size_t>(capacity_));
    images_.clear();
    images_.reserve(static_cast<std::size_t>(capacity_));
    clear_targets();
    // Room for as many rows as the last batch had: batches of an epoch hold similar counts, so
    // the rows are rarely moved while the batch fills.
    boxes_.reserve(rows_hint_ * 6);
    image_classes_.reserve(static_cast<std::size_t>(capacity_));
  }

  void clear_targets() {
    boxes_.clear();
    keypoints_.clear();
    image_classes_.clear();
    polygons_.clear();
    instances_.clear();
    keypoints_per_box_ = -1;
    bare_ = kNone;
    any_image_class_ = false;
  }

  // A batch's keypoints array has a row for every box, so either every sample of the batch
  // that has boxes carries keypoints, the same number per instance, or none does. Sets the
  // batch's keypoint count from its first sample with keypoints.
  void check_keypoints(const Sample& s) {
    const Batch& b = *pending_;
    if (s.keypoints.empty()) {
      if (keypoints_per_box_ >= 0 && !s.boxes.empty()) {
        throw Error("collate '" + where_ + "': sample '" + s.path + "' has " + std::to_string(s.boxes.size()) +
                    " box(es) without keypoints in a batch whose other samples carry keypoints; every sample "
                    "must carry keypoints for its boxes or none must (check the source's labels and that every "
                    "augmentation keeps keypoints)");
      }
      return;
    }
    if (s.keypoints.size() != s.boxes.size()) {
      throw Error("collate '" + where_ + "': sample '" + s.path + "' has " + std::to_string(s.keypoints.size()) +
                  " keypoint sets for " + std::to_string(s.boxes.size()) + " box(es); it needs one per box");
    }
    const auto k = static_cast<std::int64_t>(s.keypoints.front().size());
    for (std::size_t j = 0; j < s.keypoints.size(); ++j) {
      const auto kj = static_cast<std::int64_t>(s.keypoints[j].size());
      const std::int64_t want = keypoints_per_box_ >= 0 ? keypoints_per_box_ : k;
      if (kj != want) {
        throw Error("collate '" + where_ + "': sample '" + s.path + "' has " + std::to_string(kj) +
                    " keypoints on instance " + std::to_string(j) + " where " +
                    (keypoints_per_box_ >= 0 ? "this batch's instances have " : "its instance 0 has ") +
                    std::to_string(want) + "; every instance of a batch needs the same number");
      }
    }
    if (bare_ != kNone) {
      throw Error("collate '" + where_ + "': sample '" + b.samples[bare_].path +
                  "' has box(es) without keypoints in a batch whose other samples (such as '" + s.path +
                  "') carry keypoints; every sample must carry keypoints for its boxes or none must (check the "
                  "source's labels and that every augmentation keeps keypoints)");
    }
    keypoints_per_box_ = k;
  }

  Batch finish() {
    Batch b = std::move(*pending_);
    pending_.reset();
    const auto rows = static_cast<std::int64_t>(boxes_.size() / 6);
    rows_hint_ = static_cast<std::size_t>(rows);
    b.targets[targets::kBoxes] = TargetArray{{rows, 6}, std::move(boxes_)};
    if (keypoints_per_box_ >= 0) {
      b.targets[targets::kKeypoints] = TargetArray{{rows, keypoints_per_box_, 3}, std::move(keypoints_)};
    }
    if (any_image_class_) b.targets[targets::kImageClasses] = TargetArray{{b.size}, std::move(image_classes_)};
    // With masks: each sample's planes' place in the array (one per image, or one per instance).
    const std::int64_t mh = b.height / mask_ratio_, mw = b.width / mask_ratio_;
    std::vector<std::size_t> mask_at(polygons_.size(), 0);
    std::vector<float> mask_values;
    if (masks_) {
      std::size_t planes = 0;
      for (std::size_t k = 0; k < polygons_.size(); ++k) {
        mask_at[k] = planes * static_cast<std::size_t>(mh * mw);
        planes += overlap_mask_ ? 1 : instances_[k];
      }
      mask_values.assign(planes * static_cast<std::size_t>(mh * mw), 0.0f);
    }
    auto rasterise = [&](std::size_t k) {
      if (!masks_) return;
      if (overlap_mask_) {
        write_overlap_mask(polygons_[k], instances_[k], static_cast<int>(b.height), static_cast<int>(b.width),
                           mask_ratio_, mask_values.data() + mask_at[k]);
      } else {
        write_instance_masks(polygons_[k], instances_[k], static_cast<int>(b.height), static_cast<int>(b.width),
                             mask_ratio_, mask_values.data() + mask_at[k]);
      }
    };
    if (planned_) {
      finish_plans(b, rasterise);
    } else {
      finish_pixels(b, rasterise);
    }
    if (masks_) {
      if (overlap_mask_) {
        b.targets["image_masks"] = TargetArray{{b.size, mh, mw}, std::move(mask_values)};
      } else {
        b.targets["masks"] = TargetArray{{rows, mh, mw}, std::move(mask_values)};
      }
    }
    clear_targets();
    ++next_index_;
    return b;
  }

  // The samples' images converted to RGB into the batch buffer, in parallel.
  template <class Rasterise>
  void finish_pixels(Batch& b, Rasterise& rasterise) {
    // A full batch's bytes even for the epoch's partial last batch: buffers of one size are
    // reused for every batch.
    const std::size_t bytes = static_cast<std::size_t>(capacity_) * b.height * b.width * 3;
    if (allocator_) {
      b.pixels = allocator_(bytes);
      if (!b.pixels) throw Error("collate '" + where_ + "': the pixel allocator returned no memory");
    } else {
      b.pixels = pool_->take(bytes);
    }
    auto copy = [&](std::size_t k) {
      cv::Mat dst(b.height, b.width, CV_8UC3, b.image_data(static_cast<std::int64_t>(k)));
      cv::cvtColor(images_[k], dst, cv::COLOR_BGR2RGB);
      rasterise(k);
    };
    for_each_sample(images_.size(), copy);
    images_.clear();  // the samples' pixels go now, not at the next batch
  }

  // A batch of plans: the plans gathered with the decoded images they read (no pixel copied).
  template <class Rasterise>
  void finish_plans(Batch& b, Rasterise& rasterise) {
    std::vector<const PixelPlan*> plans;
    for (const auto& p : plans_) plans.push_back(p.get());
    try {
      b.planned = std::make_shared<const PlannedPixels>(
          plan_batch(plans, static_cast<int>(b.width), static_cast<int>(b.height)));
    } catch (const Error& e) {
      throw Error("collate '" + where_ + "': " + e.what());
    }
    if (masks_) for_each_sample(plans_.size(), rasterise);
    plans_.clear();
  }

  // fn(k) for each of the batch's n samples, in parallel from kParallelFrom on. Isolated: while
  // this thread waits for them it runs only these, not another sample's augmentations, which
  // would hold the batch back.
  template <class Fn>
  static void for_each_sample(std::size_t n, Fn& fn) {
    if (n < kParallelFrom) {
      for (std::size_t k = 0; k < n; ++k) fn(k);
      return;
    }
    tbb::this_task_arena::isolate([&] {
      tbb::parallel_for(tbb::blocked_range<std::size_t>(0, n, 1), [&](const auto& r) {
        for (std::size_t k = r.begin(); k != r.end(); ++k) fn(k);
      });
    });
  }

  // Below this many images a batch is copied on the calling thread (tasks would cost more).
  static constexpr std::size_t kParallelFrom = 4;

  std::int64_t batch_ = 16, capacity_ = 16;
  bool drop_last_ = false;
  bool masks_ = false, overlap_mask_ = true;
  int mask_ratio_ = 4;
  int epoch_ = 0;
  std::int64_t next_index_ = 0;
  std::string where_;
  std::optional<Batch> pending_;
  std::vector<cv::Mat> images_;  // the pending batch's images, BGR
  bool planned_ = false;          // the pending batch's samples have their pixels planned
  std::vector<std::shared_ptr<PixelPlan>> plans_;  // and their plans
  // The pending batch's target arrays, filled by add() and moved into the batch by finish().
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<float> boxes_;          // rows of 6
  std::vector<float> keypoints_;      // rows of keypoints_per_box_ x 3
  std::vector<float> image_classes_;  // one per sample, -1 for none
  std::vector<std::vector<Polygon>> polygons_;  // with masks: each sample's outlines, rasterised in finish()
  std::vector<std::size_t> instances_;           // and its instance count
  std::int64_t keypoints_per_box_ = -1;  // -1: no sample of the batch has keypoints yet
  std::size_t bare_ = kNone;             // the batch's first sample with boxes but no keypoints
  bool any_image_class_ = false;
  std::size_t rows_hint_ = 0;  // the last batch's box rows
  PixelAllocator allocator_;
  // Up to two returned buffers wait for reuse: batches come back one at a time, each as the
  // sink finishes it, and the next batch takes one (the graph's limiter bounds how many exist).
  std::shared_ptr<PixelBufferPool> pool_ = std::make_shared<PixelBufferPool>(2);
};

void register_collate(Registrar& r) {
  r.add_batcher<Collate>(
      "collate", Collate::schema(),
      "Stacks same-size samples into NHWC RGB uint8 batches with targets normalised to the batch size: "
      "boxes [batch_idx, cls, cx, cy, w, h] (N, 6); keypoints [x, y, visible] (N, K, 3) when the samples "
      "carry keypoints; image_classes (B,) when they carry image classes (-1 where an image has none); with "
      "masks, the outlines rasterised as Ultralytics' segmentation targets (image_masks or masks).",
      keeps(Field::Boxes | Field::Keypoints | Field::ImageClass | Field::Polygons));
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("collate", "1.0.0", yoloflow::plugins::register_collate)
