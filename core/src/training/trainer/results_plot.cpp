#include "training/trainer/results_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

constexpr int kPanelW = 360, kPanelH = 260, kCols = 5;

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), std::fabs(v) >= 100 ? "%.0f" : (std::fabs(v) >= 1 ? "%.3g" : "%.3f"), v);
  return buf;
}

void draw_panel(cv::Mat& canvas, cv::Rect area, const std::string& title,
                const std::vector<double>& x, const std::vector<double>& y) {
  cv::rectangle(canvas, area, cv::Scalar(255, 255, 255), cv::FILLED);
  cv::putText(canvas, title, {area.x + 10, area.y + 22}, cv::FONT_HERSHEY_SIMPLEX, 0.5,
              cv::Scalar(40, 40, 40), 1, cv::LINE_AA);
  const cv::Rect plot(area.x + 50, area.y + 35, area.width - 65, area.height - 70);
  cv::rectangle(canvas, plot, cv::Scalar(200, 200, 200), 1);
  std::vector<std::pair<double, double>> pts;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (std::isfinite(y[i]) && std::isfinite(x[i])) pts.emplace_back(x[i], y[i]);
  }
  if (pts.empty()) return;
  double x0 = pts.front().first, x1 = pts.front().first, y0 = pts.front().second, y1 = y0;
  for (const auto& [px, py] : pts) {
    x0 = std::min(x0, px);
    x1 = std::max(x1, px);
    y0 = std::min(y0, py);
    y1 = std::max(y1, py);
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) {
    y0 -= 0.5 * (std::fabs(y0) + 1e-3);
    y1 += 0.5 * (std::fabs(y1) + 1e-3);
  }
  auto map = [&](double px, double py) {
    return cv::Point(plot.x + static_cast<int>((px - x0) / (x1 - x0) * plot.width),
                     plot.y + plot.height - static_cast<int>((py - y0) / (y1 - y0) * plot.height));
  };
  const cv::Scalar blue(180, 110, 30);
  for (std::size_t i = 1; i < pts.size(); ++i) {
    cv::line(canvas, map(pts[i - 1].first, pts[i - 1].second), map(pts[i].first, pts[i].second),
             blue, 2, cv::LINE_AA);
  }
  for (const auto& [px, py] : pts) cv::circle(canvas, map(px, py), 3, blue, cv::FILLED, cv::LINE_AA);
  const cv::Scalar grey(90, 90, 90);
  cv::putText(canvas, short_number(y1), {area.x + 4, plot.y + 10}, cv::FONT_HERSHEY_SIMPLEX, 0.38, grey, 1, cv::LINE_AA);
  cv::putText(canvas, short_number(y0), {area.x + 4, plot.y + plot.height}, cv::FONT_HERSHEY_SIMPLEX, 0.38, grey, 1, cv::LINE_AA);
  cv::putText(canvas, short_number(x0), {plot.x, plot.y + plot.height + 16}, cv::FONT_HERSHEY_SIMPLEX, 0.38, grey, 1, cv::LINE_AA);
  const std::string xe = "epoch " + short_number(x1);
  cv::putText(canvas, xe, {plot.x + plot.width - 70, plot.y + plot.height + 16}, cv::FONT_HERSHEY_SIMPLEX, 0.38, grey, 1, cv::LINE_AA);
}

}  // namespace

void plot_results(const ResultsCsv& results, const std::string& png_path) {
  std::vector<std::string> panels;
  for (const auto& c : results.columns()) {
    if (c == "epoch" || c == "time") continue;
    const auto s = results.series(c);
    if (std::any_of(s.begin(), s.end(), [](double v) { return std::isfinite(v); })) panels.push_back(c);
  }
  const int n = std::max<int>(1, static_cast<int>(panels.size()));
  const int rows = (n + kCols - 1) / kCols;
  cv::Mat canvas(rows * kPanelH, kCols * kPanelW, CV_8UC3, cv::Scalar(235, 235, 235));
  const auto x = results.series("epoch");
  for (std::size_t i = 0; i < panels.size(); ++i) {
    const cv::Rect area(static_cast<int>(i % kCols) * kPanelW + 4, static_cast<int>(i / kCols) * kPanelH + 4,
                        kPanelW - 8, kPanelH - 8);
    draw_panel(canvas, area, panels[i], x, results.series(panels[i]));
  }
  std::vector<uchar> png;
  if (!cv::imencode(".png", canvas, png)) throw Error("cannot encode " + png_path);
  write_file_atomic(png_path, std::string_view(reinterpret_cast<const char*>(png.data()), png.size()));
}

}  // namespace yoloflow::core
