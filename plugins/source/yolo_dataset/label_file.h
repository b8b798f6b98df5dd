#pragma once
// Parses one YOLO label file (`class cx cy w h` or `class x1 y1 x2 y2 ... xn yn` per line,
// normalised), fixing or dropping what is wrong and saying so.
#include <cstdint>
#include <string>
#include <vector>

#include "yoloflow/source.h"

namespace yoloflow::plugins::yolo {

// A box normalised to 0..1 by the image's width and height, corners clipped to the image.
struct NormalizedBox {
  int cls = 0;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

// The outlines of one image's instances, normalised like its boxes, in one array so that a
// dataset of thousands of images holds two allocations per image that has any (a vector per
// instance or per point would cost an allocation and its header each): instance i's vertices
// are xy[2 * start[i]] .. xy[2 * start[i + 1]], x then y. An instance without an outline (a
// box line) has start[i] == start[i + 1]. Both empty when no instance of the image has one:
// images of detection datasets carry nothing.
struct NormalizedPolygons {
  std::vector<float> xy;
  std::vector<std::uint32_t> start;  // one per instance, then the end
  bool empty() const { return start.empty(); }
  std::size_t points(std::size_t instance) const { return start[instance + 1] - start[instance]; }
  // Memory held (capacity, not size: what the table costs).
  std::size_t bytes() const { return xy.capacity() * sizeof(float) + start.capacity() * sizeof(std::uint32_t); }
};

// Keeps the instances whose flag is true, box and outline together.
void keep_instances(std::vector<NormalizedBox>& boxes, NormalizedPolygons& polygons, const std::vector<bool>& keep);

struct LabelFile {
  bool exists = false;    // false: no label file (a background image, or a forgotten one)
  bool readable = true;   // false: exists but could not be read
  std::size_t lines = 0;  // non-blank lines
  std::vector<NormalizedBox> boxes;
  NormalizedPolygons polygons;  // empty, or one outline (possibly none) per box
  std::vector<DataIssue> issues;
};

// Corners outside 0..1 by at most this much are rounding of the 6-decimal label format
// (coco128 has ~100 such boxes): clipped without an issue.
constexpr double kRoundingTolerance = 1e-4;

// Lines with 5 fields are boxes; 7 or more (3 points or more, an odd count) are polygons
// `class x1 y1 x2 y2 ...`, kept with their vertices clipped to the image, their box the extent
// of those vertices (the box Ultralytics takes from a segment label, clipped as box lines are).
LabelFile read_label_file(const std::string& path, int num_classes);

}  // namespace yoloflow::plugins::yolo
