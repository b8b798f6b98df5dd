#include "training/eval/metric_curves_plot.h"

#include <algorithm>
#include <cstdio>

#include <opencv2/imgproc.hpp>

#include "training/detect/image_file.h"
#include "training/eval/plot_canvas.h"

namespace yoloflow::core {
namespace {

constexpr int kWidth = 1500, kHeight = 900;
constexpr int kLegendClasses = 20;  // a legend line per class up to here, as Ultralytics

struct Line {
  const std::vector<double>* y;
  cv::Scalar colour;
  int thickness;
  std::string label;  // empty: none in the legend
};

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

// One chart on a 0..1 x 0..1 frame, the legend to the right of it.
void draw_chart(const std::string& title, const std::string& xlabel, const std::string& ylabel,
                const std::vector<double>& x, const std::vector<Line>& lines, const std::string& path) {
  cv::Mat canvas(kHeight, kWidth, CV_8UC3, cv::Scalar(255, 255, 255));
  const cv::Rect frame(110, 70, 900, 720);
  const cv::Scalar ink(40, 40, 40), grid(225, 225, 225);
  for (int t = 0; t <= 10; ++t) {
    const int gx = frame.x + frame.width * t / 10, gy = frame.y + frame.height - frame.height * t / 10;
    cv::line(canvas, {gx, frame.y}, {gx, frame.y + frame.height}, grid, 1);
    cv::line(canvas, {frame.x, gy}, {frame.x + frame.width, gy}, grid, 1);
    if (t % 2 == 0) {
      put_centred(canvas, fixed(t / 10.0, 1), {gx, frame.y + frame.height + 18}, 0.5, ink);
      put_right_aligned(canvas, fixed(t / 10.0, 1), {frame.x - 8, gy}, 0.5, ink);
    }
  }
  cv::rectangle(canvas, frame, ink, 1);
  auto at = [&](double px, double py) {
    return cv::Point(frame.x + static_cast<int>(std::clamp(px, 0.0, 1.0) * frame.width),
                     frame.y + frame.height - static_cast<int>(std::clamp(py, 0.0, 1.0) * frame.height));
  };
  for (const auto& line : lines) {
    std::vector<cv::Point> points;
    for (std::size_t i = 0; i < x.size() && i < line.y->size(); ++i) points.push_back(at(x[i], (*line.y)[i]));
    cv::polylines(canvas, points, false, line.colour, line.thickness, cv::LINE_AA);
  }
  put_centred(canvas, title, {frame.x + frame.width / 2, 35}, 0.8, ink);
  put_centred(canvas, xlabel, {frame.x + frame.width / 2, frame.y + frame.height + 50}, 0.6, ink);
  put_vertical(canvas, ylabel, {30, frame.y + frame.height / 2 - 40}, 0.6, ink);
  int row = 0;
  for (const auto& line : lines) {
    if (line.label.empty()) continue;
    const int y = frame.y + 10 + row * 24;
    cv::line(canvas, {frame.x + frame.width + 25, y}, {frame.x + frame.width + 60, y}, line.colour,
             std::max(2, line.thickness), cv::LINE_AA);
    cv::putText(canvas, line.label, {frame.x + frame.width + 68, y + 6}, cv::FONT_HERSHEY_SIMPLEX, 0.5, ink, 1,
                cv::LINE_AA);
    ++row;
  }
  write_image_file(path, canvas);
}

std::string class_name(const std::vector<std::string>& names, int cls) {
  return cls >= 0 && cls < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(cls)] : std::to_string(cls);
}

}  // namespace

std::pair<double, double> curve_peak(const std::vector<double>& x, const std::vector<std::vector<double>>& curves) {
  const auto y = smooth_curve(mean_curve(curves), 0.1);
  if (y.empty() || x.empty()) return {0.0, 0.0};
  const auto i = static_cast<std::size_t>(std::max_element(y.begin(), y.end()) - y.begin());
  return {y[i], x[std::min(i, x.size() - 1)]};
}

std::vector<std::string> plot_metric_curves(const MetricCurves& c, const std::vector<std::string>& names,
                                            const std::string& prefix, const std::string& dir) {
  const bool legend = !c.classes.empty() && c.classes.size() <= static_cast<std::size_t>(kLegendClasses);
  const cv::Scalar grey(170, 170, 170), blue(180, 90, 20);
  auto class_lines = [&](const std::vector<std::vector<double>>& ys, bool with_ap) {
    std::vector<Line> lines;
    for (std::size_t k = 0; k < ys.size(); ++k) {
      std::string label;
      if (legend) label = class_name(names, c.classes[k]) + (with_ap ? " " + fixed(c.ap50[k], 3) : "");
      lines.push_back({&ys[k], legend ? line_colour(static_cast<int>(k)) : grey, 1, label});
    }
    return lines;
  };
  std::vector<std::string> written;
  // Precision over recall: the mean is not smoothed; its legend is the classes' mAP at IoU 0.5.
  const auto pr_mean = mean_curve(c.pr);
  auto lines = class_lines(c.pr, true);
  lines.push_back({&pr_mean, blue, 3, "all classes " + fixed(c.map50(), 3) + " mAP@0.5"});
  draw_chart("Precision-Recall Curve", "Recall", "Precision", c.x, lines, dir + "/" + prefix + "PR_curve.png");
  written.push_back(prefix + "PR_curve.png");
  struct Chart {
    const char* file;
    const char* label;
    const std::vector<std::vector<double>>* ys;
  };
  for (const Chart& ch : {Chart{"F1_curve.png", "F1", &c.f1}, Chart{"P_curve.png", "Precision", &c.precision},
                          Chart{"R_curve.png", "Recall", &c.recall}}) {
    // The thick line is the mean smoothed, as its legend's peak is read from it.
    const auto mean = smooth_curve(mean_curve(*ch.ys), 0.1);
    const auto [peak, at] = curve_peak(c.x, *ch.ys);
    auto ls = class_lines(*ch.ys, false);
    ls.push_back({&mean, blue, 3, "all classes " + fixed(peak, 2) + " at " + fixed(at, 3)});
    draw_chart(std::string(ch.label) + "-Confidence Curve", "Confidence", ch.label, c.x, ls,
               dir + "/" + prefix + ch.file);
    written.push_back(prefix + ch.file);
  }
  return written;
}

}  // namespace yoloflow::core
