#pragma once
// Parses one YOLO label file (`class cx cy w h` per line, normalised), fixing or dropping
// what is wrong and saying so.
#include <string>
#include <vector>

#include "yoloflow/source.h"

namespace yoloflow::plugins::yolo {

// A box normalised to 0..1 by the image's width and height, corners clipped to the image.
struct NormalizedBox {
  int cls = 0;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

struct LabelFile {
  bool exists = false;    // false: no label file (a background image, or a forgotten one)
  bool readable = true;   // false: exists but could not be read
  std::size_t lines = 0;  // non-blank lines
  std::vector<NormalizedBox> boxes;
  std::vector<DataIssue> issues;
};

// Corners outside 0..1 by at most this much are rounding of the 6-decimal label format
// (coco128 has ~100 such boxes): clipped without an issue.
constexpr double kRoundingTolerance = 1e-4;

// Lines with 5 fields are boxes; 7 or more (an odd count) are polygons `class x1 y1 x2 y2
// ...`, reduced to their bounding box as Ultralytics does for segment labels.
LabelFile read_label_file(const std::string& path, int num_classes);

}  // namespace yoloflow::plugins::yolo
