#include "training/trainer/labels_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgproc.hpp>

#include "training/detect/image_file.h"
#include "training/eval/plot_canvas.h"

namespace yoloflow::core {
namespace {

constexpr int kPanel = 800;  // four panels of 800 x 800: 1600 x 1600, Ultralytics' 8 in at 200 dpi
const cv::Scalar kInk(40, 40, 40);

std::string number(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// A panel's plotting frame: room on the left for the y ticks and label, below for the x ones.
cv::Rect frame_of(cv::Point origin, int bottom_room) {
  return {origin.x + 100, origin.y + 30, kPanel - 130, kPanel - 30 - bottom_room};
}

// Five ticks on each axis of a frame showing [x0, x1] x [y0, y1].
void draw_axes(cv::Mat& canvas, const cv::Rect& f, double x0, double x1, double y0, double y1, const std::string& xlabel,
               const std::string& ylabel, int digits) {
  for (int t = 0; t <= 4; ++t) {
    const int gx = f.x + f.width * t / 4, gy = f.y + f.height - f.height * t / 4;
    cv::line(canvas, {gx, f.y + f.height}, {gx, f.y + f.height + 6}, kInk, 1);
    cv::line(canvas, {f.x - 6, gy}, {f.x, gy}, kInk, 1);
    put_centred(canvas, number(x0 + (x1 - x0) * t / 4, digits), {gx, f.y + f.height + 22}, 0.5, kInk);
    put_right_aligned(canvas, number(y0 + (y1 - y0) * t / 4, digits), {f.x - 10, gy}, 0.5, kInk);
  }
  put_centred(canvas, xlabel, {f.x + f.width / 2, f.y + f.height + 55}, 0.7, kInk);
  put_vertical(canvas, ylabel, {f.x - 80, f.y + f.height / 2 - 30}, 0.7, kInk);
}

void class_histogram(cv::Mat& canvas, cv::Point origin, const LabelStatistics& labels,
                     const std::vector<std::string>& names) {
  int nc = static_cast<int>(names.size());
  for (const int c : labels.classes) nc = std::max(nc, c + 1);
  nc = std::max(nc, 1);
  std::vector<std::size_t> counts(static_cast<std::size_t>(nc), 0);
  for (const int c : labels.classes) {
    if (c >= 0) ++counts[static_cast<std::size_t>(c)];
  }
  const bool named = !names.empty() && names.size() < 30;
  int name_room = 0;
  if (named) {
    for (const auto& n : names) {
      int base = 0;
      name_room = std::max(name_room, cv::getTextSize(n, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &base).width);
    }
  }
  const cv::Rect f = frame_of(origin, named ? std::min(name_room + 30, 300) : 80);
  const double top = std::max<double>(1.0, static_cast<double>(*std::max_element(counts.begin(), counts.end())) * 1.05);
  for (int t = 0; t <= 4; ++t) {
    const int gy = f.y + f.height - f.height * t / 4;
    cv::line(canvas, {f.x - 6, gy}, {f.x, gy}, kInk, 1);
    put_right_aligned(canvas, number(top * t / 4, 0), {f.x - 10, gy}, 0.5, kInk);
  }
  cv::line(canvas, {f.x, f.y + f.height}, {f.x + f.width, f.y + f.height}, kInk, 1);
  put_vertical(canvas, "instances", {f.x - 80, f.y + f.height / 2 - 40}, 0.7, kInk);
  const double slot = static_cast<double>(f.width) / nc;
  for (int c = 0; c < nc; ++c) {
    const int x0 = f.x + static_cast<int>(slot * (c + 0.1)), x1 = f.x + static_cast<int>(slot * (c + 0.9));
    const int h = static_cast<int>(std::lround(f.height * static_cast<double>(counts[static_cast<std::size_t>(c)]) / top));
    if (h > 0) cv::rectangle(canvas, {x0, f.y + f.height - h}, {std::max(x1, x0 + 1), f.y + f.height}, line_colour(c), cv::FILLED);
    if (named) {
      // Ultralytics' bar labels and class names under the bars.
      put_centred(canvas, std::to_string(counts[static_cast<std::size_t>(c)]), {(x0 + x1) / 2, f.y + f.height - h - 10},
                  0.45, kInk);
      if (static_cast<std::size_t>(c) < names.size()) put_vertical(canvas, names[static_cast<std::size_t>(c)],
                                                                  {(x0 + x1) / 2, f.y + f.height + 8}, 0.5, kInk);
    }
  }
  if (!named) put_centred(canvas, "classes", {f.x + f.width / 2, f.y + f.height + 40}, 0.7, kInk);
}

// The first 500 boxes' outlines, each centred on one square, coloured by class.
void box_outlines(cv::Mat& canvas, cv::Point origin, const LabelStatistics& labels) {
  const int side = kPanel - 80;
  const cv::Point o(origin.x + 40, origin.y + 40);
  for (std::size_t i = 0; i < labels.boxes.size() && i < 500; ++i) {
    const auto& b = labels.boxes[i];
    const double w = std::clamp<double>(b[2], 0.0, 1.0), h = std::clamp<double>(b[3], 0.0, 1.0);
    const cv::Point p0(o.x + static_cast<int>((0.5 - w / 2) * side), o.y + static_cast<int>((0.5 - h / 2) * side));
    const cv::Point p1(o.x + static_cast<int>((0.5 + w / 2) * side), o.y + static_cast<int>((0.5 + h / 2) * side));
    cv::rectangle(canvas, p0, p1, line_colour(labels.classes[i]), 1, cv::LINE_AA);
  }
}

// A 50 x 50 2-D histogram of values (a, b) over their range, counts white to blue.
void histogram_2d(cv::Mat& canvas, cv::Point origin, const LabelStatistics& labels, int a, int b,
                  const std::string& xlabel, const std::string& ylabel) {
  constexpr int kBins = 50;
  const cv::Rect f = frame_of(origin, 80);
  double lo[2] = {1.0, 1.0}, hi[2] = {0.0, 0.0};
  for (const auto& box : labels.boxes) {
    for (int k = 0; k < 2; ++k) {
      const double v = box[static_cast<std::size_t>(k == 0 ? a : b)];
      lo[k] = std::min(lo[k], v);
      hi[k] = std::max(hi[k], v);
    }
  }
  for (int k = 0; k < 2; ++k) {
    if (!(hi[k] > lo[k])) {  // no boxes, or one value: a unit range around it
      lo[k] = std::max(0.0, std::min(lo[k], hi[k]) - 0.5);
      hi[k] = lo[k] + 1.0;
    }
  }
  std::vector<double> counts(kBins * kBins, 0.0);
  for (const auto& box : labels.boxes) {
    const auto bin = [&](double v, int k) {
      return std::clamp(static_cast<int>((v - lo[k]) / (hi[k] - lo[k]) * kBins), 0, kBins - 1);
    };
    ++counts[static_cast<std::size_t>(bin(box[static_cast<std::size_t>(b)], 1) * kBins + bin(box[static_cast<std::size_t>(a)], 0))];
  }
  const double top = std::max(1.0, *std::max_element(counts.begin(), counts.end()));
  for (int r = 0; r < kBins; ++r) {
    for (int c = 0; c < kBins; ++c) {
      const double n = counts[static_cast<std::size_t>(r * kBins + c)];
      if (n == 0) continue;
      // Row 0 holds the smallest values: drawn at the bottom, as a chart's y axis goes up.
      const cv::Point p0(f.x + f.width * c / kBins, f.y + f.height - f.height * (r + 1) / kBins);
      const cv::Point p1(f.x + f.width * (c + 1) / kBins, f.y + f.height - f.height * r / kBins);
      cv::rectangle(canvas, p0, p1, blues(0.15 + 0.85 * n / top), cv::FILLED);
    }
  }
  draw_axes(canvas, f, lo[0], hi[0], lo[1], hi[1], xlabel, ylabel, 2);
}

}  // namespace

LabelStatistics collect_labels(const DataSource& source, std::size_t max_instances) {
  LabelStatistics out;
  SampleLabels one;
  for (std::size_t i = 0; i < source.size() && out.classes.size() < max_instances; ++i) {
    if (!source.labels(i, one)) return {};  // a source that cannot tell: nothing drawn
    for (std::size_t k = 0; k < one.classes.size() && k < one.boxes.size() && out.classes.size() < max_instances; ++k) {
      out.classes.push_back(one.classes[k]);
      out.boxes.push_back(one.boxes[k]);
    }
  }
  out.available = true;
  return out;
}

void write_labels_plot(const LabelStatistics& labels, const std::vector<std::string>& names, const std::string& path) {
  cv::Mat canvas(2 * kPanel, 2 * kPanel, CV_8UC3, cv::Scalar(255, 255, 255));
  class_histogram(canvas, {0, 0}, labels, names);
  box_outlines(canvas, {kPanel, 0}, labels);
  histogram_2d(canvas, {0, kPanel}, labels, 0, 1, "x", "y");
  histogram_2d(canvas, {kPanel, kPanel}, labels, 2, 3, "width", "height");
  write_image_file(path, canvas);
}

}  // namespace yoloflow::core
