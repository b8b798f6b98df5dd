#include "mask_raster.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <opencv2/imgproc.hpp>

namespace yoloflow::plugins {

cv::Mat instance_mask(const Polygon& polygon, int height, int width, int ratio) {
  cv::Mat full = cv::Mat::zeros(height, width, CV_8UC1);
  if (polygon.size() >= 3) {
    std::vector<cv::Point> points;
    points.reserve(polygon.size());
    // Truncated toward zero, as a float array cast to int32 is.
    for (const auto& p : polygon) points.emplace_back(static_cast<int>(p.x), static_cast<int>(p.y));
    const cv::Point* pts = points.data();
    const int n = static_cast<int>(points.size());
    cv::fillPoly(full, &pts, &n, 1, cv::Scalar(1));
  }
  if (ratio == 1) return full;
  cv::Mat small;
  cv::resize(full, small, cv::Size(width / ratio, height / ratio), 0, 0, cv::INTER_LINEAR);
  return small;
}

namespace {

const Polygon& outline(const std::vector<Polygon>& polygons, std::size_t i) {
  static const Polygon none;
  return i < polygons.size() ? polygons[i] : none;
}

}  // namespace

void append_instance_masks(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width,
                           int ratio, std::vector<float>& out) {
  const std::size_t plane = static_cast<std::size_t>(height / ratio) * static_cast<std::size_t>(width / ratio);
  for (std::size_t i = 0; i < instances; ++i) {
    const cv::Mat m = instance_mask(outline(polygons, i), height, width, ratio);
    const std::size_t at = out.size();
    out.resize(at + plane);
    std::transform(m.datastart, m.dataend, out.begin() + static_cast<std::ptrdiff_t>(at),
                   [](std::uint8_t v) { return static_cast<float>(v); });
  }
}

void append_overlap_mask(const std::vector<Polygon>& polygons, std::size_t instances, int height, int width, int ratio,
                         std::vector<float>& out) {
  const int h = height / ratio, w = width / ratio;
  std::vector<cv::Mat> masks;
  std::vector<double> areas;
  masks.reserve(instances);
  for (std::size_t i = 0; i < instances; ++i) {
    masks.push_back(instance_mask(outline(polygons, i), height, width, ratio));
    areas.push_back(cv::sum(masks.back())[0]);
  }
  std::vector<std::size_t> order(instances);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return areas[a] > areas[b]; });
  cv::Mat plane = cv::Mat::zeros(h, w, CV_32FC1);
  for (std::size_t k : order) plane.setTo(static_cast<float>(k + 1), masks[k]);
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
  std::copy(plane.ptr<float>(), plane.ptr<float>() + static_cast<std::ptrdiff_t>(h) * w,
            out.begin() + static_cast<std::ptrdiff_t>(at));
}

}  // namespace yoloflow::plugins
