#pragma once
// labels.jpg, as Ultralytics draws it when training starts: what the training labels hold, read
// from the source without decoding an image (DataSource::labels). Four panels: instances per
// class, the first 500 boxes' outlines centred on one square, and 2-D histograms of the boxes'
// centres (x, y) and sizes (width, height).
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "yoloflow/source.h"

namespace yoloflow::core {

struct LabelStatistics {
  std::vector<int> classes;                 // one per instance
  std::vector<std::array<float, 4>> boxes;  // centre x, centre y, width, height in 0..1
  bool available = false;                   // false: the source cannot give its labels
};

// Every sample's labels (a sample listed twice counts twice, as the epoch sees it), at most
// `max_instances` (Ultralytics keeps 1,000,000).
LabelStatistics collect_labels(const DataSource& source, std::size_t max_instances = 1000000);

// Draws the four panels into `path` (a JPEG). `names`: the classes' names (ticks when fewer than 30).
void write_labels_plot(const LabelStatistics& labels, const std::vector<std::string>& names, const std::string& path);

}  // namespace yoloflow::core
