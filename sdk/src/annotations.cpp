#include "yoloflow/annotations.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <opencv2/imgproc.hpp>

#include "yoloflow/error.h"

namespace yoloflow {

namespace {
constexpr Field kFields[] = {Field::Boxes, Field::Polygons, Field::Keypoints, Field::Masks, Field::ImageClass};
}

const char* field_name(Field f) {
  switch (f) {
    case Field::Boxes: return "boxes";
    case Field::Polygons: return "polygons";
    case Field::Keypoints: return "keypoints";
    case Field::Masks: return "masks";
    case Field::ImageClass: return "image_class";
  }
  return "unknown";
}

std::vector<Field> all_fields() { return {std::begin(kFields), std::end(kFields)}; }

std::string Fields::names() const {
  std::string out;
  for (Field f : kFields) {
    if (has(f)) out += (out.empty() ? "" : ", ") + std::string(field_name(f));
  }
  return out.empty() ? "nothing" : out;
}

AnnotationContract gives(Fields fields) {
  AnnotationContract c;
  c.gives = fields;
  c.declared = true;
  return c;
}
AnnotationContract keeps(Fields fields) {
  AnnotationContract c;
  c.keeps = fields;
  c.declared = true;
  return c;
}
AnnotationContract needs(Fields fields) {
  AnnotationContract c;
  c.needs = fields;
  c.declared = true;
  return c;
}

Fields fields_of(const Sample& s) {
  Fields f = Field::Boxes;
  if (!s.polygons.empty()) f = f | Field::Polygons;
  if (!s.keypoints.empty()) f = f | Field::Keypoints;
  if (!s.masks.empty()) f = f | Field::Masks;
  if (s.image_class >= 0) f = f | Field::ImageClass;
  return f;
}

std::string instance_problem(const Sample& s) {
  const std::size_t n = s.boxes.size();
  auto count = [&](std::size_t k, const char* what) -> std::string {
    if (k == 0 || k == n) return {};
    return std::to_string(k) + " " + what + " for " + std::to_string(n) + (n == 1 ? " box" : " boxes");
  };
  for (const std::string& p : {count(s.polygons.size(), "polygons"), count(s.keypoints.size(), "keypoint sets"),
                               count(s.masks.size(), "masks")}) {
    if (!p.empty()) return p;
  }
  for (std::size_t i = 1; i < s.keypoints.size(); ++i) {
    if (s.keypoints[i].size() != s.keypoints[0].size()) {
      return "instance " + std::to_string(i) + " has " + std::to_string(s.keypoints[i].size()) +
             " keypoints, instance 0 has " + std::to_string(s.keypoints[0].size());
    }
  }
  for (std::size_t i = 0; i < s.masks.size(); ++i) {
    const cv::Mat& m = s.masks[i];
    if (m.empty()) continue;  // this instance has no mask
    if (m.type() != CV_8UC1 || m.rows != s.image.rows || m.cols != s.image.cols) {
      return "mask " + std::to_string(i) + " is not an 8-bit single-channel image of the image's size (" +
             std::to_string(s.image.cols) + "x" + std::to_string(s.image.rows) + ")";
    }
  }
  return {};
}

void remove_fields(Sample& s, Fields keep) {
  if (!keep.has(Field::Polygons)) s.polygons.clear();
  if (!keep.has(Field::Keypoints)) s.keypoints.clear();
  if (!keep.has(Field::Masks)) s.masks.clear();
  if (!keep.has(Field::ImageClass)) s.image_class = -1;
}

namespace {
template <class T>
void select(std::vector<T>& v, const std::vector<bool>& keep) {
  if (v.empty()) return;
  std::size_t j = 0;
  for (std::size_t i = 0; i < v.size() && i < keep.size(); ++i) {
    if (keep[i]) {
      if (i != j) v[j] = std::move(v[i]);
      ++j;
    }
  }
  v.resize(j);
}
}  // namespace

void keep_instances(Sample& s, const std::vector<bool>& keep) {
  select(s.boxes, keep);
  select(s.polygons, keep);
  select(s.keypoints, keep);
  select(s.masks, keep);
}

void append_instance(Sample& to, const Sample& from, std::size_t i) {
  const std::size_t before = to.boxes.size();
  to.boxes.push_back(from.boxes.at(i));
  if (!from.polygons.empty() || !to.polygons.empty()) {
    to.polygons.resize(before);  // instances `to` had without a polygon: none
    to.polygons.push_back(from.polygons.empty() ? Polygon() : from.polygons.at(i));
  }
  if (!from.keypoints.empty() || !to.keypoints.empty()) {
    const std::size_t k = !from.keypoints.empty() ? from.keypoints.at(i).size() : to.keypoints.front().size();
    to.keypoints.resize(before, std::vector<Keypoint>(k));
    to.keypoints.push_back(from.keypoints.empty() ? std::vector<Keypoint>(k) : from.keypoints.at(i));
  }
  if (!from.masks.empty() || !to.masks.empty()) {
    to.masks.resize(before);
    to.masks.push_back(from.masks.empty() ? cv::Mat() : from.masks.at(i));
  }
}

Polygon resample_polygon(const Polygon& polygon, int n) {
  const std::size_t m = polygon.size();
  if (m == 0 || static_cast<int>(m) == n || n <= 0) return polygon;
  // The closed outline: vertex j at position j, the first repeated at position m.
  std::vector<double> xs, ys;
  xs.reserve(m + 1);
  ys.reserve(m + 1);
  for (const auto& p : polygon) xs.push_back(p.x), ys.push_back(p.y);
  xs.push_back(polygon[0].x), ys.push_back(polygon[0].y);
  const std::size_t len = m + 1;
  // Positions: evenly spaced over [0, len - 1] (n - len of them when fewer points than n
  // are wanted, so that with the vertices inserted there are n), then the vertex positions
  // inserted where they sort (before equal positions, as numpy's searchsorted(side='left')).
  const bool grow = static_cast<int>(len) < n;
  const std::size_t count = grow ? static_cast<std::size_t>(n) - len : static_cast<std::size_t>(n);
  std::vector<double> pos;
  pos.reserve(count + len);
  const double last = static_cast<double>(len - 1);
  for (std::size_t k = 0; k < count; ++k) {
    // numpy.linspace: start + k * step, the last one exactly the end.
    if (count == 1) {
      pos.push_back(0.0);
    } else {
      const double step = last / static_cast<double>(count - 1);
      pos.push_back(k + 1 == count ? last : static_cast<double>(k) * step);
    }
  }
  if (grow) {
    std::vector<double> merged;
    merged.reserve(count + len);
    std::size_t a = 0;
    for (std::size_t v = 0; v < len; ++v) {
      const double vp = static_cast<double>(v);
      while (a < pos.size() && pos[a] < vp) merged.push_back(pos[a++]);
      merged.push_back(vp);
    }
    while (a < pos.size()) merged.push_back(pos[a++]);
    pos.swap(merged);
  }
  Polygon out;
  out.reserve(pos.size());
  for (double t : pos) {
    // numpy.interp on the integer grid 0..len-1.
    std::size_t j = static_cast<std::size_t>(std::floor(t));
    if (j >= len - 1) {
      out.emplace_back(static_cast<float>(xs[len - 1]), static_cast<float>(ys[len - 1]));
      continue;
    }
    const double f = t - static_cast<double>(j);
    const double x = xs[j] + (xs[j + 1] - xs[j]) * f;
    const double y = ys[j] + (ys[j + 1] - ys[j]) * f;
    out.emplace_back(static_cast<float>(x), static_cast<float>(y));
  }
  return out;
}

void resample_polygons(std::vector<Polygon>& polygons) {
  std::size_t longest = 0;
  for (const auto& p : polygons) longest = std::max(longest, p.size());
  if (longest == 0) return;
  const int n = longest > 1000 ? static_cast<int>(longest) + 1 : 1000;
  for (auto& p : polygons) {
    if (!p.empty()) p = resample_polygon(p, n);
  }
}

Box polygon_box(const Polygon& polygon, double width, double height) {
  Box b;
  if (polygon.empty()) return b;
  double xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
  for (const auto& p : polygon) {
    xmin = std::min<double>(xmin, p.x), xmax = std::max<double>(xmax, p.x);
    ymin = std::min<double>(ymin, p.y), ymax = std::max<double>(ymax, p.y);
  }
  const int outside = (xmin < 0) + (ymin < 0) + (xmax > width) + (ymax > height);
  const bool clip = outside >= 3;
  double x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
  bool any = false;
  for (const auto& p : polygon) {
    double x = p.x, y = p.y;
    if (clip) x = std::clamp(x, 0.0, width), y = std::clamp(y, 0.0, height);
    if (!(x > 0 && y > 0 && x < width && y < height)) continue;
    any = true;
    x1 = std::min(x1, x), x2 = std::max(x2, x);
    y1 = std::min(y1, y), y2 = std::max(y2, y);
  }
  if (!any) return b;
  b.x1 = static_cast<float>(x1), b.y1 = static_cast<float>(y1);
  b.x2 = static_cast<float>(x2), b.y2 = static_cast<float>(y2);
  return b;
}

OrientedBox oriented_box(const Polygon& corners) {
  OrientedBox o;
  if (corners.empty()) return o;
  const cv::RotatedRect r = cv::minAreaRect(corners);
  o.cx = r.center.x, o.cy = r.center.y;
  o.w = r.size.width, o.h = r.size.height;
  o.angle = static_cast<float>(r.angle * CV_PI / 180.0);
  return o;
}

bool keep_box(const Box& before, const Box& after, double min_area_ratio, const InstanceFilter& f) {
  constexpr double eps = 1e-16;
  const double w1 = before.width(), h1 = before.height();
  const double w2 = after.width(), h2 = after.height();
  const double aspect = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return w2 > f.min_side && h2 > f.min_side && w2 * h2 / (w1 * h1 + eps) > min_area_ratio && aspect < f.max_aspect;
}

namespace {
inline cv::Point2d map_point(const PixelMap& m, double x, double y) {
  const double u = m.M(0, 0) * x + m.M(0, 1) * y + m.M(0, 2);
  const double v = m.M(1, 0) * x + m.M(1, 1) * y + m.M(1, 2);
  if (!m.projective) return {u, v};
  const double w = m.M(2, 0) * x + m.M(2, 1) * y + m.M(2, 2);
  return {u / w, v / w};
}
}  // namespace

void move_instances(Sample& s, const PixelMap& map, const InstanceFilter* filter) {
  if (const std::string p = instance_problem(s); !p.empty()) throw Error("annotations out of step: " + p);
  const double W = map.size.width, H = map.size.height;
  const cv::Rect2d clip = map.clip.area() > 0 ? map.clip : cv::Rect2d(0, 0, W, H);
  const std::size_t n = s.boxes.size();
  std::vector<bool> keep(n, true);
  bool dropped = false;
  for (std::size_t i = 0; i < n; ++i) {
    const Box before = s.boxes[i];
    Box after = before;
    const bool outlined = !s.polygons.empty() && !s.polygons[i].empty();
    if (outlined) {
      Polygon& poly = s.polygons[i];
      for (auto& p : poly) {
        const cv::Point2d q = map_point(map, p.x, p.y);
        p.x = static_cast<float>(q.x), p.y = static_cast<float>(q.y);
      }
      after = polygon_box(poly, W, H);
      after.cls = before.cls;
      for (auto& p : poly) {
        p.x = std::clamp(p.x, after.x1, after.x2);
        p.y = std::clamp(p.y, after.y1, after.y2);
      }
    } else {
      double x1 = INFINITY, y1 = INFINITY, x2 = -INFINITY, y2 = -INFINITY;
      const double xs[4] = {before.x1, before.x2, before.x1, before.x2};
      const double ys[4] = {before.y1, before.y2, before.y2, before.y1};
      for (int k = 0; k < 4; ++k) {
        const cv::Point2d q = map_point(map, xs[k], ys[k]);
        x1 = std::min(x1, q.x), x2 = std::max(x2, q.x);
        y1 = std::min(y1, q.y), y2 = std::max(y2, q.y);
      }
      after.x1 = static_cast<float>(std::clamp(x1, clip.x, clip.x + clip.width));
      after.x2 = static_cast<float>(std::clamp(x2, clip.x, clip.x + clip.width));
      after.y1 = static_cast<float>(std::clamp(y1, clip.y, clip.y + clip.height));
      after.y2 = static_cast<float>(std::clamp(y2, clip.y, clip.y + clip.height));
    }
    if (!s.keypoints.empty()) {
      for (auto& k : s.keypoints[i]) {
        const cv::Point2d q = map_point(map, k.x, k.y);
        k.x = static_cast<float>(q.x), k.y = static_cast<float>(q.y);
        if (k.x < 0 || k.y < 0 || k.x > W || k.y > H) k.visible = 0;
        k.x = static_cast<float>(std::clamp<double>(k.x, 0.0, W));
        k.y = static_cast<float>(std::clamp<double>(k.y, 0.0, H));
      }
    }
    if (filter != nullptr) {
      // The box before the change with its sides times the map's scale.
      const Box scaled{0, 0, static_cast<float>(before.width() * map.scale),
                       static_cast<float>(before.height() * map.scale), before.cls};
      const double ratio = outlined ? filter->min_area_ratio_polygon : filter->min_area_ratio;
      keep[i] = keep_box(scaled, after, ratio, *filter);
      dropped = dropped || !keep[i];
    }
    s.boxes[i] = after;
  }
  for (cv::Mat& m : s.masks) {
    if (m.empty()) continue;
    cv::Mat out;
    if (map.projective) {
      cv::warpPerspective(m, out, cv::Mat(map.M), map.size, cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
    } else {
      const cv::Matx23d A(map.M(0, 0), map.M(0, 1), map.M(0, 2), map.M(1, 0), map.M(1, 1), map.M(1, 2));
      cv::warpAffine(m, out, cv::Mat(A), map.size, cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
    }
    m = out;
  }
  if (dropped) keep_instances(s, keep);
}

void scale_instances(Sample& s, double sx, double sy, double dx, double dy, cv::Size size) {
  for (auto& b : s.boxes) {
    b.x1 = static_cast<float>(b.x1 * sx + dx);
    b.x2 = static_cast<float>(b.x2 * sx + dx);
    b.y1 = static_cast<float>(b.y1 * sy + dy);
    b.y2 = static_cast<float>(b.y2 * sy + dy);
  }
  for (auto& poly : s.polygons) {
    for (auto& p : poly) {
      p.x = static_cast<float>(p.x * sx + dx);
      p.y = static_cast<float>(p.y * sy + dy);
    }
  }
  for (auto& kp : s.keypoints) {
    for (auto& k : kp) {
      k.x = static_cast<float>(k.x * sx + dx);
      k.y = static_cast<float>(k.y * sy + dy);
    }
  }
  for (cv::Mat& m : s.masks) {
    if (m.empty()) continue;
    const cv::Matx23d A(sx, 0, dx, 0, sy, dy);
    cv::Mat out;
    cv::warpAffine(m, out, cv::Mat(A), size, cv::INTER_NEAREST, cv::BORDER_CONSTANT, 0);
    m = out;
  }
}

void flip_instances_lr(Sample& s, float width, const std::vector<std::int64_t>& flip_idx) {
  for (auto& b : s.boxes) {
    const float x1 = width - b.x2, x2 = width - b.x1;
    b.x1 = x1, b.x2 = x2;
  }
  for (auto& poly : s.polygons) {
    for (auto& p : poly) p.x = width - p.x;
  }
  if (!s.keypoints.empty()) {
    const std::size_t k = s.keypoints.front().size();
    std::vector<bool> seen(k, false);
    bool valid = flip_idx.size() == k;
    for (std::size_t j = 0; valid && j < k; ++j) {
      const std::int64_t v = flip_idx[j];
      valid = v >= 0 && static_cast<std::size_t>(v) < k && !seen[static_cast<std::size_t>(v)];
      if (valid) seen[static_cast<std::size_t>(v)] = true;
    }
    if (!valid) {
      throw Error("a left-right flip of keypoints needs flip_idx, a reordering of the " + std::to_string(k) +
                  " keypoint indexes (data.yaml's flip_idx); it has " + std::to_string(flip_idx.size()) +
                  " entries" + (flip_idx.size() == k ? " that are not each index once" : ""),
                  kExitInvalid);
    }
    for (auto& kp : s.keypoints) {
      std::vector<Keypoint> moved(k);
      for (std::size_t j = 0; j < k; ++j) {
        moved[j] = kp[static_cast<std::size_t>(flip_idx[j])];
        moved[j].x = width - moved[j].x;
      }
      kp.swap(moved);
    }
  }
  for (cv::Mat& m : s.masks) {
    if (m.empty()) continue;
    cv::Mat flipped;  // a new image: the mask's pixels may be shared with another sample
    cv::flip(m, flipped, 1);
    m = flipped;
  }
}

void flip_instances_ud(Sample& s, float height) {
  for (auto& b : s.boxes) {
    const float y1 = height - b.y2, y2 = height - b.y1;
    b.y1 = y1, b.y2 = y2;
  }
  for (auto& poly : s.polygons) {
    for (auto& p : poly) p.y = height - p.y;
  }
  for (auto& kp : s.keypoints) {
    for (auto& k : kp) k.y = height - k.y;
  }
  for (cv::Mat& m : s.masks) {
    if (m.empty()) continue;
    cv::Mat flipped;
    cv::flip(m, flipped, 0);
    m = flipped;
  }
}

const TargetArray& Batch::boxes() const {
  static const TargetArray kEmpty{{0, 6}, {}};
  const auto it = targets.find(targets::kBoxes);
  return it == targets.end() ? kEmpty : it->second;
}

TargetArray& Batch::boxes() {
  auto it = targets.find(targets::kBoxes);
  if (it == targets.end()) it = targets.emplace(targets::kBoxes, TargetArray{{0, 6}, {}}).first;
  return it->second;
}

const TargetArray& Batch::target(const std::string& name) const {
  const auto it = targets.find(name);
  if (it != targets.end()) return it->second;
  std::string have;
  for (const auto& [k, v] : targets) have += (have.empty() ? "" : ", ") + k;
  throw Error("the batch has no target array '" + name + "' (it has " + (have.empty() ? "none" : have) +
                  "): the batcher does not pack it",
              kExitInvalid);
}

std::int64_t TargetArray::row_size() const {
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return shape.empty() ? 0 : n;
}

}  // namespace yoloflow
