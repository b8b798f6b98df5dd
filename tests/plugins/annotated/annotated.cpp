// Test plugin for annotation contracts (yoloflow/fields.h): components that give, keep and need
// fields besides boxes, for the pipeline checks and the host's enforcement in the graph.
//
//   annotated_source   gives boxes, polygons, keypoints, masks: two instances per image, each
//                      with its outline, 3 keypoints and a mask; `mismatch` names a sample given
//                      with one keypoint set for its two boxes (a source's bug)
//   box_source         the same images with boxes only, declaring nothing (a source's default)
//   unsteady_polygons  keeps boxes, polygons, keypoints, masks; on sample `on` it forgets the last
//                      instance's polygon (an augmentation's bug: polygons out of step)
//   masks_only         keeps boxes and masks, and refuses a sample, its own or the one it loads
//                      as mosaic loads its other images, that carries any other field
//   annotated_batcher  keeps boxes, keypoints, masks: target arrays "boxes", "keypoints", "masks"
//   box_batcher        packs boxes only, declaring nothing (a batcher's default)
//   annotated_sink     needs boxes and masks: refuses a batch with boxes but no masks; its summary
//                      names the target arrays it got; a nested `loss` for validation tests
//   keypoint_probe     a loss that needs boxes and keypoints (keypoint_loss.cpp)
//   keypoint_net       a model of a 'pose' head with a keypoints output (keypoint_task.cpp)
//   keypoint_eval      an evaluator of keypoints (keypoint_task.cpp)
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>

#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

namespace yoloflow::test_annotated {

void register_keypoint_loss(Registrar& r);
void register_keypoint_task(Registrar& r);

namespace {

class AnnotatedSource : public DataSource {
 public:
  AnnotatedSource() : AnnotatedSource(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks) {}
  void configure(const Params& p, const StageContext&) override {
    count_ = static_cast<std::size_t>(p.get_int("count"));
    size_ = static_cast<int>(p.get_int("size"));
    mismatch_ = p.get_int("mismatch");
  }
  std::size_t size() const override { return count_; }
  Sample load(std::size_t index) override {
    if (index >= count_) throw std::out_of_range("sample " + std::to_string(index) + " of " + std::to_string(count_));
    Sample s;
    s.index = index;
    s.path = "annotated/" + std::to_string(index) + ".png";
    s.image = cv::Mat(size_, size_, CV_8UC3, cv::Scalar(static_cast<double>(index % 256), 40, 90));
    s.geometry.original_width = s.geometry.original_height = size_;
    const float q = static_cast<float>(size_) / 4;
    for (int i = 0; i < 2; ++i) {
      const float x1 = q * static_cast<float>(i * 2), y1 = q, x2 = x1 + q, y2 = 2 * q;
      s.boxes.push_back({x1, y1, x2, y2, i});
      if (fields_.has(Field::Polygons)) s.polygons.push_back({{x1, y1}, {x2, y1}, {x2, y2}, {x1, y2}});
      if (fields_.has(Field::Keypoints)) {
        s.keypoints.push_back({{x1, y1, 2}, {(x1 + x2) / 2, (y1 + y2) / 2, 2}, {x2, y2, 1}});
      }
      if (fields_.has(Field::Masks)) {
        cv::Mat mask = cv::Mat::zeros(size_, size_, CV_8UC1);
        mask(cv::Rect(cv::Point(static_cast<int>(x1), static_cast<int>(y1)), cv::Point(static_cast<int>(x2), static_cast<int>(y2))))
            .setTo(1);
        s.masks.push_back(mask);
      }
    }
    if (mismatch_ >= 0 && index == static_cast<std::size_t>(mismatch_) && !s.keypoints.empty()) s.keypoints.pop_back();
    return s;
  }
  DatasetInfo info() const override {
    DatasetInfo i;
    i.root = "annotated";
    i.names = {"left", "right"};
    i.images = count_;
    i.boxes = 2 * count_;
    return i;
  }
  std::vector<DataIssue> issues() const override { return {}; }

 protected:
  explicit AnnotatedSource(Fields fields) : fields_(fields) {}

 private:
  Fields fields_;
  std::size_t count_ = 8;
  int size_ = 32;
  std::int64_t mismatch_ = -1;
};

class BoxSource final : public AnnotatedSource {
 public:
  BoxSource() : AnnotatedSource(Field::Boxes) {}
};

class UnsteadyPolygons final : public Augmentation {
 public:
  void configure(const Params& p, const StageContext&) override { on_ = p.get_int("on"); }
  void apply(Sample& s, AugmentContext&) override {
    if (on_ >= 0 && s.index == static_cast<std::size_t>(on_) && !s.polygons.empty()) s.polygons.pop_back();
  }

 private:
  std::int64_t on_ = -1;
};

class MasksOnly final : public Augmentation {
 public:
  void apply(Sample& s, AugmentContext& ctx) override {
    refuse_others(s, "its sample");
    refuse_others(ctx.loader.load((s.index + 1) % ctx.loader.size()), "the sample it loaded");
  }

 private:
  static void refuse_others(const Sample& s, const std::string& which) {
    if (!s.polygons.empty() || !s.keypoints.empty() || s.image_class >= 0) {
      throw Error("masks_only: " + which + " (" + s.path + ") carries a field it does not keep");
    }
  }
};

class AnnotatedBatcher : public Batcher {
 public:
  AnnotatedBatcher() : AnnotatedBatcher(Field::Boxes | Field::Keypoints | Field::Masks) {}
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
  void set_allocator(PixelAllocator allocator) override { allocator_ = std::move(allocator); }

 protected:
  explicit AnnotatedBatcher(Fields packs) : packs_(packs) {}

 private:
  Batch make() {
    Batch b;
    b.size = static_cast<std::int64_t>(pending_.size());
    b.height = pending_[0].image.rows;
    b.width = pending_[0].image.cols;
    const auto plane = static_cast<std::size_t>(b.height * b.width);
    const std::size_t bytes = static_cast<std::size_t>(b.size) * plane * 3;
    b.pixels = allocator_ ? allocator_(bytes)
                          : std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes], std::default_delete<std::uint8_t[]>());
    TargetArray boxes, keypoints, masks;
    std::int64_t n = 0, k = 0;
    bool with_keypoints = false, with_masks = false;
    for (const auto& s : pending_) {
      with_keypoints |= packs_.has(Field::Keypoints) && !s.keypoints.empty();
      with_masks |= packs_.has(Field::Masks) && !s.masks.empty();
      if (!s.keypoints.empty()) k = static_cast<std::int64_t>(s.keypoints[0].size());
    }
    const float w = static_cast<float>(b.width), h = static_cast<float>(b.height);
    for (std::int64_t i = 0; i < b.size; ++i) {
      const Sample& s = pending_[static_cast<std::size_t>(i)];
      // BGR to RGB, as every batcher hands pixels over.
      for (std::size_t p = 0; p < plane; ++p) {
        for (int c = 0; c < 3; ++c) b.image_data(i)[3 * p + c] = s.image.data[3 * p + 2 - c];
      }
      for (std::size_t j = 0; j < s.boxes.size(); ++j, ++n) {
        const Box& box = s.boxes[j];
        boxes.values.insert(boxes.values.end(), {static_cast<float>(i), static_cast<float>(box.cls),
                                                 (box.x1 + box.x2) / 2 / w, (box.y1 + box.y2) / 2 / h,
                                                 box.width() / w, box.height() / h});
        for (std::int64_t m = 0; with_keypoints && m < k; ++m) {
          const Keypoint kp = s.keypoints.empty() ? Keypoint{} : s.keypoints[j][static_cast<std::size_t>(m)];
          keypoints.values.insert(keypoints.values.end(), {kp.x / w, kp.y / h, kp.visible});
        }
        if (with_masks) {
          const cv::Mat mask = s.masks.empty() || s.masks[j].empty() ? cv::Mat::zeros(s.image.size(), CV_8UC1) : s.masks[j];
          masks.values.insert(masks.values.end(), mask.data, mask.data + plane);
        }
      }
      b.samples.push_back({s.index, s.path, s.geometry, s.sequence});
    }
    boxes.shape = {n, 6};
    b.targets[targets::kBoxes] = std::move(boxes);
    if (with_keypoints) {
      keypoints.shape = {n, k, 3};
      b.targets[targets::kKeypoints] = std::move(keypoints);
    }
    if (with_masks) {
      masks.shape = {n, b.height, b.width};
      b.targets["masks"] = std::move(masks);
    }
    pending_.clear();
    return b;
  }
  Fields packs_;
  std::int64_t batch_ = 4;
  std::vector<Sample> pending_;
  PixelAllocator allocator_;
};

class BoxBatcher final : public AnnotatedBatcher {
 public:
  BoxBatcher() : AnnotatedBatcher(Field::Boxes) {}
};

class AnnotatedSink final : public Sink {
 public:
  void configure(const Params&, const StageContext&) override {}
  void consume(Batch& b) override {
    if (b.num_boxes() > 0 && !b.has_target("masks")) {
      throw Error("batch " + std::to_string(b.index) + " has " + std::to_string(b.num_boxes()) + " boxes and no masks");
    }
    samples_ += static_cast<std::size_t>(b.size);
    boxes_ += static_cast<std::size_t>(b.num_boxes());
    for (const auto& [name, array] : b.targets) targets_.insert(name);
  }
  std::string summary() const override {
    std::ostringstream os;
    os << "annotated_sink: samples=" << samples_ << " boxes=" << boxes_ << " targets=";
    for (const auto& name : targets_) os << (&name == &*targets_.begin() ? "" : ",") << name;
    return os.str();
  }

 private:
  std::size_t samples_ = 0, boxes_ = 0;
  std::set<std::string> targets_;
};

void register_annotated(Registrar& r) {
  Schema source;
  source.add_int("count", 8).min(1).doc("Number of samples.");
  source.add_int("size", 32).range(8, 1024).doc("Image side in pixels.");
  source.add_int("mismatch", -1).min(-1).doc("Sample given with one keypoint set for its two boxes; -1 none.");
  r.add_source<AnnotatedSource>("annotated_source", source,
                                "Two instances per image, with polygons, keypoints and masks (test plugin).",
                                gives(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks));
  r.add_source<BoxSource>("box_source", source, "The annotated_source's images with boxes only (test plugin).");
  Schema unsteady;
  unsteady.add_int("on", -1).min(-1).doc("Sample whose last polygon it forgets; -1 none.");
  r.add_augmentation<UnsteadyPolygons>("unsteady_polygons", std::move(unsteady),
                                       "Forgets a polygon on one sample (test plugin).",
                                       keeps(Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks));
  r.add_augmentation<MasksOnly>("masks_only", Schema(), "Refuses samples with fields besides boxes and masks (test plugin).",
                                keeps(Field::Boxes | Field::Masks));
  Schema batcher;
  batcher.add_int("batch", 4).min(1).doc("Samples per batch.");
  r.add_batcher<AnnotatedBatcher>("annotated_batcher", batcher,
                                  "Packs boxes, keypoints and masks (test plugin).",
                                  keeps(Field::Boxes | Field::Keypoints | Field::Masks));
  r.add_batcher<BoxBatcher>("box_batcher", batcher, "Packs boxes only, declaring nothing (test plugin).");
  Schema sink;
  sink.add_component("loss", "loss", nullptr).doc("A nested component (validation tests); not used.");
  r.add_sink<AnnotatedSink>("annotated_sink", std::move(sink), "Needs masks with its boxes (test plugin).",
                            needs(Field::Boxes | Field::Masks));
  register_keypoint_loss(r);
  register_keypoint_task(r);
}

}  // namespace

}  // namespace yoloflow::test_annotated

YOLOFLOW_PLUGIN("test_annotated", "1.0.0", yoloflow::test_annotated::register_annotated)
