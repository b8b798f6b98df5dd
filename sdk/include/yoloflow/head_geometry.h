#pragma once
// The geometry of an anchor-free detection head (detection_head.h), written once for everything
// that reads a head's output: a model's decode, a loss's targets and assignment, an export graph.
// Each output cell has one anchor point, the cell's centre; a cell predicts four distances from
// it (left, top, right, bottom), in units of its level's stride. Header-only (LibTorch), so a
// plugin gets the same arithmetic without linking anything.
#include <cstdint>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/head.h"

namespace yoloflow::head_geometry {

// Anchor points of one level of h x w cells, in that level's cell units: the cell centres
// (x + 0.5, y + 0.5), row-major (the order of a flattened (H, W) map), as (h * w, 2) [x, y].
inline torch::Tensor cell_centres(std::int64_t h, std::int64_t w, const torch::TensorOptions& options) {
  const auto sx = torch::arange(w, options) + 0.5;
  const auto sy = torch::arange(h, options) + 0.5;
  const auto grid = torch::meshgrid({sy, sx}, "ij");
  return torch::stack({grid[1], grid[0]}, -1).view({-1, 2});
}

// Every level's anchor points, level after level: points (A, 2) in cell units of their own level
// and each point's stride (A, 1), for levels of the given (H, W) sizes and strides.
struct AnchorGrid {
  torch::Tensor points;   // (A, 2) [x, y]
  torch::Tensor strides;  // (A, 1)
};
inline AnchorGrid anchor_grid(const std::vector<std::pair<std::int64_t, std::int64_t>>& sizes,
                              const std::vector<std::int64_t>& strides, const torch::TensorOptions& options) {
  std::vector<torch::Tensor> points, stride_rows;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [h, w] = sizes[i];
    points.push_back(cell_centres(h, w, options));
    stride_rows.push_back(torch::full({h * w, 1}, static_cast<double>(strides[i]), options));
  }
  return {torch::cat(points), torch::cat(stride_rows)};
}

// Distances (..., 4) [left, top, right, bottom] from `anchors` (..., 2) to xyxy boxes (..., 4),
// in the units of both (cells of the level, or pixels once both are times the stride).
inline torch::Tensor distances_to_boxes(const torch::Tensor& distances, const torch::Tensor& anchors) {
  const auto lt = distances.narrow(-1, 0, 2);
  const auto rb = distances.narrow(-1, 2, 2);
  return torch::cat({anchors - lt, anchors + rb}, -1);
}

// The inverse: xyxy boxes (..., 4) as distances from `anchors` (..., 2), clamped to
// [0, max_distance] (a distribution-focal head's range: reg_max - 1 bins, less a margin).
inline torch::Tensor boxes_to_distances(const torch::Tensor& anchors, const torch::Tensor& boxes, double max_distance) {
  const auto x1y1 = boxes.narrow(-1, 0, 2);
  const auto x2y2 = boxes.narrow(-1, 2, 2);
  return torch::cat({anchors - x1y1, x2y2 - anchors}, -1).clamp(0.0, max_distance);
}

}  // namespace yoloflow::head_geometry
