#pragma once
// results.png: the run's losses and metrics per epoch, drawn with OpenCV (no plotting
// library needed), laid out like Ultralytics' results.png.
#include <string>

#include "runtime/run/results_csv.h"

namespace yoloflow::core {

// Draws one panel per column that has at least one value; writes a PNG atomically.
void plot_results(const ResultsCsv& results, const std::string& png_path);

}  // namespace yoloflow::core
