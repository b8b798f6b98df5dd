#include "mask_raster.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <numeric>

#include <opencv2/imgproc.hpp>

namespace yoloflow::plugins {
namespace {

// Truncated toward zero, as a float array cast to int32 is.
std::vector<cv::Point> truncated(const Polygon& polygon) {
  std::vector<cv::Point> points;
  points.reserve(polygon.size());
  for (const auto& p : polygon) points.emplace_back(static_cast<int>(p.x), static_cast<int>(p.y));
  return points;
}

void fill(cv::Mat& image, const std::vector<cv::Point>& points, cv::Point offset) {
  const cv::Point* pts = points.data();
  const int n = static_cast<int>(points.size());
  cv::fillPoly(image, &pts, &n, 1, cv::Scalar(1), cv::LINE_8, 0, offset);
}

const Polygon& outline(const std::vector<Polygon>& polygons, std::size_t i) {
  static const Polygon none;
  return i < polygons.size() ? polygons[i] : none;
}

// Output pixels of margin around an outline's extent: bilinear resizing by `ratio` reads source
// pixels within one output pixel of the one it makes, so two keep every read inside the window.
constexpr int kMargin = 2;

}  // namespace

cv::Mat instance_mask_reference(const Polygon& polygon, int height, int width, int ratio) {
  cv::Mat full = cv::Mat::zeros(height, width, CV_8UC1);
  if (polygon.size() >= 3) fill(full, truncated(polygon), cv::Point(0, 0));
  if (ratio == 1) return full;
  cv::Mat small;
  cv::resize(full, small, cv::Size(width / ratio, height / ratio), 0, 0, cv::INTER_LINEAR);
  return small;
}

WindowedMask instance_mask(const Polygon& polygon, int height, int width, int ratio) {
  WindowedMask out;
  if (polygon.size() < 3) return out;
  const auto points = truncated(polygon);
  int x0 = INT_MAX, y0 = INT_MAX, x1 = INT_MIN, y1 = INT_MIN;
  for (const auto& p : points) {
    x0 = std::min(x0, p.x);
    y0 = std::min(y0, p.y);
    x1 = std::max(x1, p.x);
    y1 = std::max(y1, p.y);
  }
  const int w = width / ratio, h = height / ratio;
  // The window in output pixels, clamped to the plane (where it meets the image's edge, the
  // resize clamps there as it does on the whole image).
  auto down = [&](int v) { return v >= 0 ? v / ratio : -((-v + ratio - 1) / ratio); };
  const int X0 = std::clamp(down(x0) - kMargin, 0, w), X1 = std::clamp(down(x1) + 1 + kMargin, 0, w);
  const int Y0 = std::clamp(down(y0) - kMargin, 0, h), Y1 = std::clamp(down(y1) + 1 + kMargin, 0, h);
  if (X1 <= X0 || Y1 <= Y0) return out;  // wholly outside the image
  out.window = cv::Rect(X0, Y0, X1 - X0, Y1 - Y0);
  cv::Mat full = cv::Mat::zeros(out.window.height * ratio, out.window.width * ratio, CV_8UC1);
  fill(full, points, cv::Point(-X0 * ratio, -Y0 * ratio));
  if (ratio == 1) {
    out.mask = full;
  } else {
    cv::resize(full, out.mask, out.window.size(), 0, 0, cv::INTER_LINEAR);
  }
  return out;
}

void write_instance_masks(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width,
                          int ratio, float* out) {
  const int w = width / ratio;
  const std::size_t plane = static_cast<std::size_t>(height / ratio) * static_cast<std::size_t>(w);
  for (std::size_t i = 0; i < instances; ++i) {
    const WindowedMask m = instance_mask(outline(polygons, i), height, width, ratio);
    for (int y = 0; y < m.window.height; ++y) {
      const std::uint8_t* row = m.mask.ptr<std::uint8_t>(y);
      float* dst = out + i * plane + static_cast<std::size_t>(m.window.y + y) * static_cast<std::size_t>(w) +
                   static_cast<std::size_t>(m.window.x);
      for (int x = 0; x < m.window.width; ++x) dst[x] = static_cast<float>(row[x]);
    }
  }
}

void write_overlap_mask(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width, int ratio,
                        float* out) {
  std::vector<WindowedMask> masks;
  std::vector<double> areas;
  masks.reserve(instances);
  for (std::size_t i = 0; i < instances; ++i) {
    masks.push_back(instance_mask(outline(polygons, i), height, width, ratio));
    areas.push_back(masks.back().mask.empty() ? 0.0 : cv::sum(masks.back().mask)[0]);
  }
  std::vector<std::size_t> order(instances);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return areas[a] > areas[b]; });
  cv::Mat plane(height / ratio, width / ratio, CV_32FC1, out);
  for (std::size_t k : order) {
    if (masks[k].mask.empty()) continue;
    plane(masks[k].window).setTo(static_cast<float>(k + 1), masks[k].mask);
  }
}

void append_instance_masks(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width,
                           int ratio, std::vector<float>& out) {
  const std::size_t at = out.size();
  out.resize(at + instances * static_cast<std::size_t>(height / ratio) * static_cast<std::size_t>(width / ratio), 0.0f);
  write_instance_masks(polygons, instances, height, width, ratio, out.data() + at);
}

void append_overlap_mask(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width, int ratio,
                         std::vector<float>& out) {
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(height / ratio) * static_cast<std::size_t>(width / ratio), 0.0f);
  write_overlap_mask(polygons, instances, height, width, ratio, out.data() + at);
}

}  // namespace yoloflow::plugins
