// The augmentation contract and what it is built from: applying an augmentation as the graph
// does (with the host's removal of the fields it does not keep), giving samples the fields an
// augmentation declares, and checking that every output keeps those fields in step with its boxes.
#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <sstream>

#include <opencv2/imgproc.hpp>

#include "testing_sample_checks.h"
#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"
#include "yoloflow/testing.h"

namespace yoloflow::testing {

using detail::check_sample;
using detail::same_sample;

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
      if (!same_sample(a, b)) out.push_back(what + ": another output for the same seed");
    }
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (!same_sample(loader.load(i), samples[i])) out.push_back("the loader's sample " + std::to_string(i) + " was changed");
  }
  return out;
}

}  // namespace yoloflow::testing
