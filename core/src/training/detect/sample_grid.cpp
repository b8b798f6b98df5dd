#include "training/detect/sample_grid.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "training/detect/batch_boxes.h"
#include "training/detect/box_drawing.h"
#include "yoloflow/callback.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

// A segmentation sample's instances filled in their class's colour at half opacity, as
// Ultralytics draws its training batches: its masks (a batch's targets) or else its outlines
// (a pipeline's samples), scaled as the tile is.
void draw_instance_areas(cv::Mat tile, const Sample& s, double scale) {
  const bool masks = !s.masks.empty(), outlines = !s.polygons.empty();
  if (!masks && !outlines) return;
  cv::Mat colour(tile.size(), tile.type(), cv::Scalar(0, 0, 0));
  cv::Mat inside(tile.size(), CV_8U, cv::Scalar(0));
  for (std::size_t k = 0; k < s.boxes.size(); ++k) {
    const cv::Scalar c = class_colour(s.boxes[k].cls);
    cv::Mat area(tile.size(), CV_8U, cv::Scalar(0));
    if (masks && k < s.masks.size() && !s.masks[k].empty()) {
      cv::resize(s.masks[k], area, tile.size(), 0, 0, cv::INTER_NEAREST);
    } else if (!masks && k < s.polygons.size() && s.polygons[k].size() >= 3) {
      std::vector<cv::Point> points;
      for (const auto& p : s.polygons[k]) {
        points.emplace_back(static_cast<int>(std::lround(p.x * scale)), static_cast<int>(std::lround(p.y * scale)));
      }
      cv::fillPoly(area, std::vector<std::vector<cv::Point>>{points}, cv::Scalar(255));
    } else {
      continue;
    }
    colour.setTo(c, area);
    inside.setTo(255, area);
  }
  cv::Mat blended;
  cv::addWeighted(tile, 0.5, colour, 0.5, 0.0, blended);
  blended.copyTo(tile, inside);
}

void draw_tile(cv::Mat& grid, const Sample& s, cv::Rect tile, double scale, const std::vector<std::string>& names,
               const std::vector<std::string>* box_labels) {
  cv::Mat small;
  cv::resize(s.image, small, cv::Size(std::max(1, static_cast<int>(std::lround(s.image.cols * scale))),
                                      std::max(1, static_cast<int>(std::lround(s.image.rows * scale)))),
             0, 0, cv::INTER_AREA);
  const cv::Rect dst(tile.x, tile.y, std::min(small.cols, tile.width), std::min(small.rows, tile.height));
  small(cv::Rect(0, 0, dst.width, dst.height)).copyTo(grid(dst));
  draw_instance_areas(grid(dst), s, scale);
  for (std::size_t k = 0; k < s.boxes.size(); ++k) {
    const Box& b = s.boxes[k];
    const cv::Point p1(tile.x + static_cast<int>(std::lround(b.x1 * scale)),
                       tile.y + static_cast<int>(std::lround(b.y1 * scale)));
    const cv::Point p2(tile.x + static_cast<int>(std::lround(b.x2 * scale)),
                       tile.y + static_cast<int>(std::lround(b.y2 * scale)));
    const std::string label = box_labels != nullptr && k < box_labels->size() ? (*box_labels)[k]
                              : (b.cls >= 0 && b.cls < static_cast<int>(names.size()))
                                  ? names[static_cast<std::size_t>(b.cls)]
                                  : std::to_string(b.cls);
    draw_labelled_box(grid, p1, p2, b.cls, label, 0.4, 2, tile.y);
  }
  cv::rectangle(grid, tile, cv::Scalar(255, 255, 255), 1);  // tile border
}

}  // namespace

cv::Mat draw_sample_grid(const std::vector<Sample>& samples, const std::vector<std::string>& names, int max_side,
                         int columns, const std::vector<std::vector<std::string>>* box_labels) {
  const int n = static_cast<int>(samples.size());
  if (n == 0) return cv::Mat(1, 1, CV_8UC3, cv::Scalar(114, 114, 114));
  int tile_w = 1, tile_h = 1;
  for (const auto& s : samples) {
    tile_w = std::max(tile_w, s.image.cols);
    tile_h = std::max(tile_h, s.image.rows);
  }
  const int gcols = std::min(n, columns > 0 ? columns : static_cast<int>(std::ceil(std::sqrt(static_cast<double>(n)))));
  const int grows = (n + gcols - 1) / gcols;
  const double scale =
      std::min(1.0, static_cast<double>(max_side) / std::max(gcols * tile_w, grows * tile_h));
  const int tw = std::max(1, static_cast<int>(std::lround(tile_w * scale)));
  const int th = std::max(1, static_cast<int>(std::lround(tile_h * scale)));
  cv::Mat grid(grows * th, gcols * tw, CV_8UC3, cv::Scalar(114, 114, 114));
  for (int i = 0; i < n; ++i) {
    draw_tile(grid, samples[static_cast<std::size_t>(i)], cv::Rect((i % gcols) * tw, (i / gcols) * th, tw, th), scale,
              names,
              box_labels != nullptr && static_cast<std::size_t>(i) < box_labels->size()
                  ? &(*box_labels)[static_cast<std::size_t>(i)]
                  : nullptr);
  }
  return grid;
}

std::vector<Sample> samples_of_batch(const Batch& batch) {
  if (!batch.pixels) {
    throw Error("batch " + std::to_string(batch.index) + " of epoch " + std::to_string(batch.epoch + 1) +
                " was composed on the training device and its pixels were not copied back (only the first " +
                std::to_string(kPicturedBatches) + " batches of an epoch are)");
  }
  std::vector<Sample> out(static_cast<std::size_t>(batch.size));
  const int h = static_cast<int>(batch.height), w = static_cast<int>(batch.width);
  for (std::int64_t i = 0; i < batch.size; ++i) {
    Sample& s = out[static_cast<std::size_t>(i)];
    const cv::Mat rgb(h, w, CV_8UC3, batch.image_data(i));
    cv::cvtColor(rgb, s.image, cv::COLOR_RGB2BGR);
    if (static_cast<std::size_t>(i) < batch.samples.size()) s.path = batch.samples[static_cast<std::size_t>(i)].path;
  }
  auto labelled = batch_label_boxes(batch);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].boxes = std::move(labelled[i]);
  // A segmentation batch's masks, per instance at the image's size: from one plane per image
  // (the value k + 1 of the image's instance k) or one per instance.
  const bool overlap = batch.has_target("image_masks"), separate = batch.has_target("masks");
  if (!overlap && !separate) return out;
  const TargetArray& boxes = batch.boxes();
  // Rows the values hold in full: a drawing never reads past a malformed array.
  const auto rows = std::min<std::int64_t>(boxes.rows(), static_cast<std::int64_t>(boxes.values.size() / 6));
  const TargetArray& m = batch.target(overlap ? "image_masks" : "masks");
  if (m.shape.size() != 3 || static_cast<std::int64_t>(m.values.size()) != m.shape[0] * m.shape[1] * m.shape[2]) return out;
  const int mh = static_cast<int>(m.shape[1]), mw = static_cast<int>(m.shape[2]);
  std::vector<std::int64_t> seen(static_cast<std::size_t>(batch.size), 0);
  for (std::int64_t k = 0; k < rows; ++k) {
    const auto i = static_cast<std::int64_t>(boxes.values[static_cast<std::size_t>(k * 6)]);
    if (i < 0 || i >= batch.size) continue;
    const std::int64_t local = seen[static_cast<std::size_t>(i)]++;
    const std::int64_t plane = overlap ? i : k;
    if (plane >= m.shape[0]) continue;
    const cv::Mat values(mh, mw, CV_32F, const_cast<float*>(m.values.data()) + plane * mh * mw);
    cv::Mat small;
    if (overlap) {
      cv::compare(values, static_cast<double>(local + 1), small, cv::CMP_EQ);
    } else {
      cv::compare(values, 0.5, small, cv::CMP_GT);
    }
    cv::Mat full;
    cv::resize(small, full, cv::Size(w, h), 0, 0, cv::INTER_NEAREST);
    out[static_cast<std::size_t>(i)].masks.push_back(full);
  }
  return out;
}

}  // namespace yoloflow::core
