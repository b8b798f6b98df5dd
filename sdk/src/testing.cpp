#include "yoloflow/testing.h"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include <opencv2/imgproc.hpp>

#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"

namespace yoloflow::testing {

using detail::returns;

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  // Never closed: components it made, and their vtables, may outlive this object.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw Error("cannot load plugin '" + path + "': " + dlerror());
  auto fn = reinterpret_cast<yoloflow_plugin_descriptor_fn>(dlsym(handle, YOLOFLOW_DESCRIPTOR_SYMBOL));
  if (fn == nullptr) throw Error("'" + path + "' is not a yoloflow plugin: it exports no " YOLOFLOW_DESCRIPTOR_SYMBOL);
  const yoloflow_plugin_descriptor_t* d = fn();
  if (d == nullptr || d->abi_version != YOLOFLOW_SDK_ABI_VERSION) {
    throw Error("'" + path + "' was built for SDK ABI " + (d ? std::to_string(d->abi_version) : std::string("?")) +
                ", this SDK is ABI " + std::to_string(YOLOFLOW_SDK_ABI_VERSION) + ": rebuild it against this SDK");
  }
  plugin_name_ = d->name;
  d->register_components(*this);
}

PluginLibrary::~PluginLibrary() = default;

void PluginLibrary::add(ComponentInfo info) {
  for (const auto& c : components_) {
    if (c.kind == info.kind && c.name == info.name) {
      throw Error("'" + path_ + "' registers " + kind_name(info.kind) + " '" + info.name + "' twice");
    }
  }
  components_.push_back(std::move(info));
}

const ComponentInfo& PluginLibrary::info(Kind kind, const std::string& name) const {
  std::string have;
  for (const auto& c : components_) {
    if (c.kind == kind && c.name == name) return c;
    have += (have.empty() ? "" : ", ") + std::string(kind_name(c.kind)) + " '" + c.name + "'";
  }
  throw Error("'" + path_ + "' has no " + kind_name(kind) + " '" + name + "' (it registers " +
              (have.empty() ? std::string("nothing") : have) + ")");
}

Component* PluginLibrary::create(Kind kind, const std::string& name, const json& params,
                                 const StageContext& context) {
  const ComponentInfo& c = info(kind, name);
  Diagnostics problems;
  c.schema.validate(params, "params", problems, nullptr, "plugin '" + name + "'");
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p.path + ": " + p.message;
    throw InvalidInput(text);
  }
  std::unique_ptr<Component> component(c.factory());
  StageContext ctx = context;
  if (ctx.node.empty()) ctx.node = name;
  component->configure(Params(c.schema.resolve(params, ctx.epoch, ctx.epochs), "params"), ctx);
  return component.release();
}

Sample SampleList::load(std::size_t index) {
  if (index >= samples_.size()) throw InvalidInput("sample " + std::to_string(index) + " of " + std::to_string(samples_.size()));
  Sample s = samples_[index];
  s.image = s.image.clone();
  return s;
}

Sample augmented(Augmentation& augmentation, const Sample& sample, std::uint64_t seed, int imgsz, SampleLoader& loader,
                 RecentSamples recent) {
  Sample out = sample;
  out.image = sample.image.clone();
  Rng rng(seed);
  AugmentContext context{rng, loader, imgsz, 0, recent};
  augmentation.apply(out, context);
  return out;
}

namespace {
// The loader as the host hands it to an augmentation: its samples without the fields it does not keep.
class KeptFieldsLoader final : public SampleLoader {
 public:
  KeptFieldsLoader(SampleLoader& loader, Fields keeps) : loader_(loader), keeps_(keeps) {}
  std::size_t size() const override { return loader_.size(); }
  Sample load(std::size_t index) override {
    Sample s = loader_.load(index);
    remove_fields(s, keeps_);
    return s;
  }

 private:
  SampleLoader& loader_;
  Fields keeps_;
};
}  // namespace

Sample augmented(Augmentation& augmentation, const Sample& sample, std::uint64_t seed, int imgsz, SampleLoader& loader,
                 Fields keeps, RecentSamples recent) {
  Sample out = sample;
  out.image = sample.image.clone();
  remove_fields(out, keeps);
  KeptFieldsLoader kept(loader, keeps);
  Rng rng(seed);
  AugmentContext context{rng, kept, imgsz, 0, recent};
  augmentation.apply(out, context);
  return out;
}

namespace {

// Image and boxes problems of one sample, each line starting with `what`.
void check_sample(const Sample& s, const std::string& what, std::vector<std::string>& out) {
  if (s.image.empty() || s.image.type() != CV_8UC3) out.push_back(what + ": the image is not 8-bit with 3 channels");
  if (!s.image.isContinuous()) out.push_back(what + ": the image is not continuous");
  const float w = static_cast<float>(s.image.cols), h = static_cast<float>(s.image.rows);
  constexpr float kSlack = 1e-3f;  // float rounding at the edges
  for (std::size_t i = 0; i < s.boxes.size(); ++i) {
    const Box& b = s.boxes[i];
    std::ostringstream os;
    os << what << ": box " << i << " (" << b.x1 << ", " << b.y1 << ", " << b.x2 << ", " << b.y2 << ") ";
    if (!(std::isfinite(b.x1) && std::isfinite(b.y1) && std::isfinite(b.x2) && std::isfinite(b.y2))) {
      out.push_back(os.str() + "is not finite");
    } else if (b.x1 > b.x2 || b.y1 > b.y2) {
      out.push_back(os.str() + "has x1 > x2 or y1 > y2");
    } else if (b.x1 < -kSlack || b.y1 < -kSlack || b.x2 > w + kSlack || b.y2 > h + kSlack) {
      os << "leaves the " << s.image.cols << "x" << s.image.rows << " image";
      out.push_back(os.str());
    }
  }
}

bool same(const Sample& a, const Sample& b) {
  if (a.image.size() != b.image.size() || a.image.type() != b.image.type() || a.boxes.size() != b.boxes.size()) return false;
  if (!a.image.empty() && cv::norm(a.image, b.image, cv::NORM_INF) != 0) return false;
  for (std::size_t i = 0; i < a.boxes.size(); ++i) {
    const Box &p = a.boxes[i], &q = b.boxes[i];
    if (p.x1 != q.x1 || p.y1 != q.y1 || p.x2 != q.x2 || p.y2 != q.y2 || p.cls != q.cls) return false;
  }
  if (a.polygons != b.polygons || a.keypoints.size() != b.keypoints.size() || a.masks.size() != b.masks.size() ||
      a.image_class != b.image_class) {
    return false;
  }
  for (std::size_t i = 0; i < a.keypoints.size(); ++i) {
    if (a.keypoints[i].size() != b.keypoints[i].size()) return false;
    for (std::size_t j = 0; j < a.keypoints[i].size(); ++j) {
      const Keypoint &p = a.keypoints[i][j], &q = b.keypoints[i][j];
      if (p.x != q.x || p.y != q.y || p.visible != q.visible) return false;
    }
  }
  for (std::size_t i = 0; i < a.masks.size(); ++i) {
    if (a.masks[i].size() != b.masks[i].size()) return false;
    if (!a.masks[i].empty() && cv::norm(a.masks[i], b.masks[i], cv::NORM_INF) != 0) return false;
  }
  return true;
}

}  // namespace

Sample with_fields(const Sample& sample, Fields fields) {
  Sample s = sample;
  remove_fields(s, fields);
  const std::size_t n = s.boxes.size();
  // A diamond touching the box's sides, resampled as a source resamples outlines (so that a
  // box taken from the points left inside an image is that of the visible part).
  auto diamond = [](const Box& b) {
    const float cx = 0.5f * (b.x1 + b.x2), cy = 0.5f * (b.y1 + b.y2);
    return Polygon{{cx, b.y1}, {b.x2, cy}, {cx, b.y2}, {b.x1, cy}};
  };
  if (fields.has(Field::Polygons) && s.polygons.empty() && n > 0) {
    for (const Box& b : s.boxes) s.polygons.push_back(diamond(b));
    resample_polygons(s.polygons);
  }
  if (fields.has(Field::Keypoints) && s.keypoints.empty() && n > 0) {
    for (const Box& b : s.boxes) {
      const float cy = 0.5f * (b.y1 + b.y2), w = b.x2 - b.x1;
      s.keypoints.push_back({{b.x1 + 0.5f * w, cy, 2}, {b.x1 + 0.25f * w, cy, 2}, {b.x1 + 0.75f * w, cy, 2}});
    }
  }
  if (fields.has(Field::Masks) && s.masks.empty() && n > 0 && !s.image.empty()) {
    for (const Box& b : s.boxes) {
      // The diamond filled, so the mask lies inside whichever box a stage takes (its corners'
      // or its outline's).
      cv::Mat m = cv::Mat::zeros(s.image.rows, s.image.cols, CV_8UC1);
      std::vector<cv::Point> corners;
      for (const auto& p : diamond(b)) corners.emplace_back(static_cast<int>(std::lround(p.x)), static_cast<int>(std::lround(p.y)));
      cv::fillConvexPoly(m, corners, cv::Scalar(255));
      s.masks.push_back(m);
    }
  }
  if (fields.has(Field::ImageClass) && s.image_class < 0) s.image_class = 7;
  return s;
}

namespace {

// Field problems of one augmented sample, each line starting with `what`.
void check_fields(const Sample& s, Fields keeps, int image_class, const std::string& what,
                  std::vector<std::string>& out) {
  if (const std::string p = instance_problem(s); !p.empty()) {
    out.push_back(what + ": annotations out of step: " + p);
    return;
  }
  for (Field f : all_fields()) {
    if (f != Field::Boxes && fields_of(s).has(f) && !keeps.has(f)) {
      out.push_back(what + ": gives " + field_name(f) + ", which it does not declare to keep");
    }
  }
  for (std::size_t i = 0; i < s.boxes.size(); ++i) {
    const Box& b = s.boxes[i];
    const std::string inst = what + ": instance " + std::to_string(i);
    if (i < s.polygons.size() && !s.polygons[i].empty()) {
      float x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
      for (const auto& p : s.polygons[i]) {
        x1 = std::min(x1, p.x), x2 = std::max(x2, p.x), y1 = std::min(y1, p.y), y2 = std::max(y2, p.y);
      }
      if (std::abs(x1 - b.x1) > 1 || std::abs(y1 - b.y1) > 1 || std::abs(x2 - b.x2) > 1 || std::abs(y2 - b.y2) > 1) {
        std::ostringstream os;
        os << inst << ": its polygon spans (" << x1 << ", " << y1 << ", " << x2 << ", " << y2 << "), its box ("
           << b.x1 << ", " << b.y1 << ", " << b.x2 << ", " << b.y2 << "): the polygon did not move with the box";
        out.push_back(os.str());
      }
    }
    // A box taken from an outline cut by the image's edge stops at the last point inside, up to
    // one step of the outline short of the edge: that much more slack.
    float slack = 2;
    if (i < s.polygons.size()) {
      const Polygon& poly = s.polygons[i];
      for (std::size_t j = 0; j < poly.size(); ++j) {
        slack = std::max(slack, 2 + static_cast<float>(cv::norm(poly[j] - poly[(j + 1) % poly.size()])));
      }
    }
    if (i < s.keypoints.size()) {
      const auto& k = s.keypoints[i];
      for (std::size_t j = 0; j < k.size(); ++j) {
        if (k[j].visible > 0 &&
            (k[j].x < b.x1 - slack || k[j].x > b.x2 + slack || k[j].y < b.y1 - slack || k[j].y > b.y2 + slack)) {
          out.push_back(inst + ": visible keypoint " + std::to_string(j) + " lies outside its box");
        }
      }
      if (k.size() == 3 && k[1].visible > 0 && k[2].visible > 0 && k[1].x > k[2].x + 1e-3f) {
        out.push_back(inst + ": the left keypoint is right of the right one (a left-right flip must reorder "
                             "keypoints by flip_idx)");
      }
    }
    if (i < s.masks.size() && !s.masks[i].empty()) {
      const cv::Rect r = cv::boundingRect(s.masks[i]);
      // Masks move by whole pixels (nearest neighbour), which a scaled-up warp makes wider: 2 px more.
      const float m = slack + 2;
      if (r.area() > 0 && (r.x < b.x1 - m || r.y < b.y1 - m || r.x + r.width > b.x2 + m || r.y + r.height > b.y2 + m)) {
        std::ostringstream os;
        os << inst << ": its mask spans (" << r.x << ", " << r.y << ", " << r.x + r.width << ", " << r.y + r.height
           << "), outside its box (" << b.x1 << ", " << b.y1 << ", " << b.x2 << ", " << b.y2 << ")";
        out.push_back(os.str());
      }
    }
  }
  if (keeps.has(Field::ImageClass) && image_class >= 0 && s.image_class != image_class) {
    out.push_back(what + ": the image class changed from " + std::to_string(image_class) + " to " +
                  std::to_string(s.image_class));
  }
}

}  // namespace

std::vector<std::string> augmentation_contract(Augmentation& augmentation, const std::vector<Sample>& given, int imgsz,
                                               int seeds, Fields keeps) {
  std::vector<std::string> out;
  if (given.empty()) return {"no samples to check with"};
  std::vector<Sample> samples;
  for (const auto& s : given) samples.push_back(with_fields(s, keeps));
  std::set<int> classes;
  for (const auto& s : samples) {
    for (const auto& b : s.boxes) classes.insert(b.cls);
  }
  SampleList loader(samples);
  std::vector<std::size_t> all(samples.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    for (int seed = 0; seed < seeds; ++seed) {
      const std::string what = "sample " + std::to_string(i) + ", seed " + std::to_string(seed);
      Sample a, b;
      try {
        const RecentSamples recent{all.data(), all.size()};
        a = augmented(augmentation, samples[i], static_cast<std::uint64_t>(seed), imgsz, loader, recent);
        b = augmented(augmentation, samples[i], static_cast<std::uint64_t>(seed), imgsz, loader, recent);
      } catch (const std::exception& e) {
        out.push_back(what + ": threw: " + e.what());
        continue;
      }
      check_sample(a, what, out);
      check_fields(a, keeps, samples[i].image_class, what, out);
      for (const auto& box : a.boxes) {
        if (classes.count(box.cls) == 0) out.push_back(what + ": a box of class " + std::to_string(box.cls) + ", which no input had");
      }
      if (!same(a, b)) out.push_back(what + ": another output for the same seed");
    }
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!same(loader.load(i), samples[i])) out.push_back("the loader's sample " + std::to_string(i) + " was changed");
  }
  return out;
}

std::vector<std::string> source_contract(DataSource& source, int imgsz, std::size_t count) {
  std::vector<std::string> out;
  const std::size_t n = source.size();
  if (n == 0) return {"size() is 0"};
  for (std::size_t i = 0; i < std::min(n, count); ++i) {
    const std::string what = "sample " + std::to_string(i);
    Sample a, b;
    try {
      a = source.load(i);
      b = source.load(i);
    } catch (const std::exception& e) {
      out.push_back(what + ": threw: " + e.what());
      continue;
    }
    check_sample(a, what, out);
    if (std::max(a.image.cols, a.image.rows) > imgsz) {
      out.push_back(what + ": " + std::to_string(a.image.cols) + "x" + std::to_string(a.image.rows) +
                    " is larger than imgsz " + std::to_string(imgsz));
    }
    if (a.index != i) out.push_back(what + ": index " + std::to_string(a.index));
    if (a.path.empty()) out.push_back(what + ": no path");
    if (!same(a, b)) out.push_back(what + ": another sample when loaded again");
    // labels(), where the source gives them: the loaded sample's classes and boxes, normalised.
    SampleLabels labels;
    bool given = false;
    try {
      given = source.labels(i, labels);
    } catch (const std::exception& e) {
      out.push_back(what + ": labels() threw: " + e.what());
    }
    if (!given) continue;
    if (labels.classes.size() != a.boxes.size() || labels.boxes.size() != a.boxes.size()) {
      out.push_back(what + ": labels() gives " + std::to_string(labels.classes.size()) + " classes and " +
                    std::to_string(labels.boxes.size()) + " boxes where load() gives " + std::to_string(a.boxes.size()));
      continue;
    }
    const float w = static_cast<float>(a.image.cols), h = static_cast<float>(a.image.rows);
    constexpr float kTol = 1e-3f;  // the loaded boxes are rounded to the resized image's pixels
    for (std::size_t k = 0; k < a.boxes.size(); ++k) {
      const Box& box = a.boxes[k];
      const auto& l = labels.boxes[k];
      if (labels.classes[k] != box.cls || std::fabs(l[0] - (box.x1 + box.x2) * 0.5f / w) > kTol ||
          std::fabs(l[1] - (box.y1 + box.y2) * 0.5f / h) > kTol || std::fabs(l[2] - box.width() / w) > kTol ||
          std::fabs(l[3] - box.height() / h) > kTol) {
        out.push_back(what + ": labels() box " + std::to_string(k) + " is not load()'s, normalised");
        break;
      }
    }
  }
  try {
    source.load(n);
    out.push_back("load(size()) returned instead of throwing");
  } catch (const std::exception&) {
  }
  return out;
}

namespace {

// Whether boxes row `t` ([batch_idx, cls, cx, cy, w, h]) and, when given, keypoints row `kp`
// (K x [x, y, visible]) are instance j of `s` normalised by the batch's width and height.
bool row_is_instance(const float* t, const float* kp, const Sample& s, std::size_t j, float w, float h) {
  constexpr float kTol = 1e-4f;
  auto near = [](float a, float b) { return std::fabs(a - b) <= kTol; };
  const Box& b = s.boxes[j];
  if (t[1] != static_cast<float>(b.cls) || !near(t[2], (b.x1 + b.x2) * 0.5f / w) ||
      !near(t[3], (b.y1 + b.y2) * 0.5f / h) || !near(t[4], b.width() / w) || !near(t[5], b.height() / h)) {
    return false;
  }
  if (kp == nullptr) return true;
  const auto& points = s.keypoints[j];
  for (std::size_t k = 0; k < points.size(); ++k) {
    const float* p = kp + 3 * k;
    if (!near(p[0], points[k].x / w) || !near(p[1], points[k].y / h) || p[2] != points[k].visible) return false;
  }
  return true;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

// Empty when `a` has shape `want` and as many values; else what is wrong.
std::string array_problem(const TargetArray& a, const std::vector<std::int64_t>& want) {
  if (a.shape != want) return "has shape " + shape_text(a.shape) + ", not " + shape_text(want);
  std::int64_t n = 1;
  for (std::int64_t d : want) n *= d;
  if (static_cast<std::int64_t>(a.values.size()) != n) {
    return "has " + std::to_string(a.values.size()) + " values for shape " + shape_text(want);
  }
  return {};
}

}  // namespace

std::vector<std::string> batcher_contract(Batcher& batcher, const std::vector<Sample>& samples) {
  std::vector<std::string> out;
  const std::int64_t size = batcher.batch_size();
  if (size < 1) return {"batch_size() is " + std::to_string(size)};
  std::vector<Batch> batches;
  for (const auto& s : samples) {
    Sample copy = s;
    copy.image = s.image.clone();
    if (auto b = batcher.add(std::move(copy))) batches.push_back(std::move(*b));
  }
  if (auto b = batcher.flush()) batches.push_back(std::move(*b));
  std::size_t seen = 0;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const Batch& b = batches[k];
    const std::string what = "batch " + std::to_string(k);
    const bool last = k + 1 == batches.size();
    if (b.size != size && !(last && b.size < size)) out.push_back(what + ": " + std::to_string(b.size) + " samples");
    if (static_cast<std::int64_t>(b.samples.size()) != b.size) out.push_back(what + ": samples does not match size");
    // The batch's samples, in batch order (image i of the batch is mine[i]).
    std::vector<const Sample*> mine;
    for (std::int64_t i = 0; i < b.size && seen + static_cast<std::size_t>(i) < samples.size(); ++i) {
      mine.push_back(&samples[seen + static_cast<std::size_t>(i)]);
    }
    std::size_t boxes = 0;
    std::int64_t keypoints_per_box = -1;  // K of the batch's first sample with keypoints
    bool image_classes = false;
    bool sizes_match = true;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const Sample& s = *mine[i];
      boxes += s.boxes.size();
      if (keypoints_per_box < 0 && !s.keypoints.empty()) keypoints_per_box = static_cast<std::int64_t>(s.keypoints[0].size());
      if (s.image_class >= 0) image_classes = true;
      if (b.height != s.image.rows || b.width != s.image.cols) {
        out.push_back(what + ": " + std::to_string(b.width) + "x" + std::to_string(b.height) + " pixels for a " +
                      std::to_string(s.image.cols) + "x" + std::to_string(s.image.rows) + " sample");
        sizes_match = false;
        continue;
      }
      // RGB: the batch's first pixel is the sample's first BGR pixel reversed.
      const cv::Vec3b bgr = s.image.at<cv::Vec3b>(0, 0);
      const std::uint8_t* rgb = b.image_data(static_cast<std::int64_t>(i));
      if (rgb[0] != bgr[2] || rgb[1] != bgr[1] || rgb[2] != bgr[0]) out.push_back(what + ": image " + std::to_string(i) + " is not RGB");
    }
    seen += static_cast<std::size_t>(b.size);
    const auto n = static_cast<std::int64_t>(boxes);
    if (!b.has_target(targets::kBoxes)) {
      out.push_back(what + ": no '" + std::string(targets::kBoxes) + "' target array");
      continue;
    }
    if (const std::string p = array_problem(b.boxes(), {b.num_boxes(), 6}); !p.empty()) {
      out.push_back(what + ": the boxes array " + p);
      continue;
    }
    if (b.num_boxes() != n) {
      out.push_back(what + ": " + std::to_string(b.num_boxes()) + " target rows for " + std::to_string(boxes) + " boxes");
    }
    const float* kp = nullptr;
    if (keypoints_per_box >= 0) {
      if (!b.has_target(targets::kKeypoints)) {
        out.push_back(what + ": its samples carry keypoints but it has no '" + std::string(targets::kKeypoints) +
                      "' target array");
      } else if (const std::string p = array_problem(b.target(targets::kKeypoints), {b.num_boxes(), keypoints_per_box, 3});
                 !p.empty()) {
        out.push_back(what + ": the keypoints array " + p);
      } else {
        kp = b.target(targets::kKeypoints).values.data();
      }
    }
    if (image_classes) {
      if (!b.has_target(targets::kImageClasses)) {
        out.push_back(what + ": its samples carry image classes but it has no '" + std::string(targets::kImageClasses) +
                      "' target array");
      } else if (const std::string p = array_problem(b.target(targets::kImageClasses), {b.size}); !p.empty()) {
        out.push_back(what + ": the image_classes array " + p);
      } else {
        const auto& classes = b.target(targets::kImageClasses).values;
        for (std::size_t i = 0; i < mine.size(); ++i) {
          const float want = mine[i]->image_class >= 0 ? static_cast<float>(mine[i]->image_class) : -1.0f;
          if (classes[i] != want) {
            out.push_back(what + ": image " + std::to_string(i) + " has image class " + std::to_string(classes[i]) +
                          ", its sample " + std::to_string(mine[i]->image_class));
          }
        }
      }
    }
    const float w = static_cast<float>(b.width), h = static_cast<float>(b.height);
    for (std::int64_t r = 0; r < b.num_boxes(); ++r) {
      const float* t = b.boxes().values.data() + 6 * r;
      const std::string row = what + ": target row " + std::to_string(r);
      if (!(t[0] >= 0 && t[0] < static_cast<float>(b.size)) || t[0] != std::floor(t[0])) {
        out.push_back(row + " has image index " + std::to_string(t[0]));
        continue;
      }
      bool in_range = true;
      for (int c = 2; c < 6; ++c) {
        if (!(t[c] >= -1e-4f && t[c] <= 1.0f + 1e-4f)) in_range = false;
      }
      if (!in_range) out.push_back(row + " is not in 0..1");
      const auto i = static_cast<std::size_t>(t[0]);
      if (!sizes_match || i >= mine.size()) continue;
      // Each row is one instance of its image, normalised, with that instance's keypoints.
      const float* row_kp = kp == nullptr ? nullptr : kp + r * keypoints_per_box * 3;
      const Sample& s = *mine[i];
      bool found = false;
      for (std::size_t j = 0; j < s.boxes.size() && !found; ++j) {
        if (row_kp != nullptr && s.keypoints.size() != s.boxes.size()) break;
        found = row_is_instance(t, row_kp, s, j, w, h);
      }
      if (!found) {
        out.push_back(row + (row_kp != nullptr ? " and its keypoints are" : " is") + " not an instance of image " +
                      std::to_string(i) + " normalised by the batch's size");
      }
    }
  }
  if (seen != samples.size()) out.push_back(std::to_string(seen) + " samples came out for " + std::to_string(samples.size()));
  return out;
}

namespace {

Batch copy_of(const Batch& b) {
  Batch c = b;
  const auto bytes = static_cast<std::size_t>(b.size * b.height * b.width * 3);
  std::shared_ptr<std::uint8_t> pixels(new std::uint8_t[bytes > 0 ? bytes : 1], std::default_delete<std::uint8_t[]>());
  if (bytes > 0 && b.pixels) std::copy(b.pixels.get(), b.pixels.get() + bytes, pixels.get());
  c.pixels = pixels;
  return c;
}

}  // namespace

std::vector<std::string> sink_contract(Sink& sink, const std::vector<Batch>& batches) {
  std::vector<std::string> out;
  if (batches.empty()) return {"no batches to check with"};
  for (int epoch = 0; epoch < 2; ++epoch) {
    const std::string e = "epoch " + std::to_string(epoch) + ": ";
    if (!returns(e + "begin_epoch", out, [&] { sink.begin_epoch(epoch); })) return out;
    for (std::size_t k = 0; k < batches.size(); ++k) {
      Batch b = copy_of(batches[k]);
      b.epoch = epoch;
      b.index = static_cast<std::int64_t>(k);
      if (!returns(e + "consume(batch " + std::to_string(k) + ")", out, [&] { sink.consume(b); })) return out;
    }
    if (!returns(e + "end_epoch", out, [&] { sink.end_epoch(epoch); })) return out;
  }
  // A stopped epoch: one batch, then interrupted() instead of end_epoch().
  if (!returns("epoch 2: begin_epoch", out, [&] { sink.begin_epoch(2); })) return out;
  Batch b = copy_of(batches.front());
  b.epoch = 2;
  returns("epoch 2: consume(batch 0)", out, [&] { sink.consume(b); });
  returns("epoch 2: interrupted", out, [&] { sink.interrupted(2); });
  returns("summary()", out, [&] { (void)sink.summary(); });
  return out;
}

std::vector<std::string> monitor_contract(Monitor& monitor, const std::string& run_dir, int epochs, int steps,
                                          double max_call_ms) {
  std::vector<std::string> out;
  double slowest = 0.0;
  std::string slowest_call;
  auto timed = [&](const std::string& what, auto&& call) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = returns(what, out, call);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > slowest) {
      slowest = ms;
      slowest_call = what;
    }
    return ok;
  };
  RunEvent run;
  run.run_dir = run_dir;
  run.pipeline_name = "contract";
  run.epochs = epochs;
  run.steps_per_epoch = steps;
  run.device = "cpu";
  if (!timed("on_run_start", [&] { monitor.on_run_start(run); })) return out;
  std::int64_t global = 0;
  for (int e = 0; e < epochs; ++e) {
    for (int k = 0; k < steps; ++k) {
      StepEvent step;
      step.epoch = e;
      step.step = k;
      step.steps_in_epoch = steps;
      step.global_step = global++;
      step.images_per_second = 100.0;
      step.eta_seconds = 1.0;
      step.values = {{"train/box_loss", 1.0 / (1 + global)}, {"lr/pg0", 0.01}};
      if (!timed("on_step(epoch " + std::to_string(e) + ", step " + std::to_string(k) + ")",
                 [&] { monitor.on_step(step); })) {
        return out;
      }
    }
    std::string summary;
    timed("epoch_summary", [&] { summary = monitor.epoch_summary(); });
    if (summary.find('\n') != std::string::npos) out.push_back("epoch_summary() is more than one line: " + summary);
    EpochEvent epoch;
    epoch.epoch = e;
    epoch.epochs = epochs;
    epoch.seconds = 1.0;
    epoch.values = {{"train/box_loss", 1.0}, {"metrics/mAP50-95(B)", 0.1 * e}};
    epoch.summary = summary;
    if (!timed("on_epoch(" + std::to_string(e) + ")", [&] { monitor.on_epoch(epoch); })) return out;
  }
  timed("on_run_end", [&] { monitor.on_run_end(run); });
  if (slowest > max_call_ms) {
    std::ostringstream os;
    os << slowest_call << " took " << slowest << " ms (at most " << max_call_ms << ": the run waits for monitors)";
    out.push_back(os.str());
  }
  return out;
}

std::vector<std::string> scheduler_contract(const Scheduler& scheduler) {
  std::vector<std::string> out;
  for (int epochs : {1, 2, 10, 300}) {
    for (int e = 0; e < epochs; ++e) {
      std::ostringstream what;
      what << "lr_factor(" << e << ", " << epochs << ")";
      double a = 0, b = 0;
      if (!returns(what.str(), out, [&] { a = scheduler.lr_factor(e, epochs); b = scheduler.lr_factor(e, epochs); })) {
        return out;
      }
      if (!std::isfinite(a) || a <= 0.0 || a > 100.0) {
        what << " is " << a << ", not a factor in (0, 100]";
        out.push_back(what.str());
        return out;
      }
      if (a != b) {
        what << " gave " << a << ", then " << b;
        out.push_back(what.str());
        return out;
      }
    }
  }
  return out;
}

std::vector<std::string> callback_contract(Callback& callback, Callback& fresh, const Batch& batch,
                                           const std::string& run_dir, int epochs, int steps) {
  std::vector<std::string> out;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(run_dir) / "weights", ec);
  RecordingControl control;
  TrainRun run;
  run.run_dir = run_dir;
  run.names = {"person", "bicycle", "car"};
  run.epochs = epochs;
  if (!returns("on_train_start", out, [&] { callback.on_train_start(run, control); })) return out;
  TrainProgress progress;
  progress.epochs = epochs;
  progress.steps_in_epoch = steps;
  int epoch = 0;
  for (; epoch < epochs && control.stops.empty(); ++epoch) {
    progress.epoch = epoch;
    const std::string e = "epoch " + std::to_string(epoch) + ": ";
    for (int k = 0; k < steps; ++k) {
      progress.step = k;
      progress.optimizer_stepped = false;
      Batch b = copy_of(batch);
      b.epoch = epoch;
      b.index = k;
      if (!returns(e + "on_batch_start", out, [&] { callback.on_batch_start(b, progress, control); })) return out;
      progress.step = k + 1;
      progress.optimizer_stepped = true;
      ++progress.global_step;
      if (!returns(e + "on_batch_end", out, [&] { callback.on_batch_end(progress, control); })) return out;
    }
    EpochSummary summary;
    summary.validated = true;
    summary.fitness = 0.1 + 0.05 * epoch;
    summary.last = epoch + 1 == epochs;
    summary.values = {{"metrics/mAP50-95(B)", summary.fitness}};
    if (!returns(e + "on_epoch_end", out, [&] { callback.on_epoch_end(summary, progress, control); })) return out;
    // What a checkpoint written now holds, and what a resumed run gets back from it.
    json state;
    if (!returns(e + "state()", out, [&] { state = callback.state(); })) return out;
    json again;
    if (!returns(e + "load_state() of another instance", out, [&] { fresh.load_state(state); })) return out;
    if (!returns(e + "state() of the loaded instance", out, [&] { again = fresh.state(); })) return out;
    if (again != state) {
      out.push_back(e + "state() " + state.dump() + " comes back from load_state() as " + again.dump());
    }
  }
  returns("on_train_end", out, [&] { callback.on_train_end(progress, control); });
  for (const auto& file : control.saved) {
    if (file.empty() || file.find('/') != std::string::npos || file == "." || file == "..") {
      out.push_back("save_checkpoint(\"" + file + "\"): not a file name in the weights folder");
    }
  }
  for (const auto& reason : control.stops) {
    if (reason.empty()) out.push_back("request_stop() without a reason");
  }
  return out;
}

}  // namespace yoloflow::testing
