#pragma once
// The curve pictures Ultralytics writes after validation, drawn with OpenCV from
// metric_curves.h's data: PR (precision over recall, legend: each class's AP50 and the
// classes' mAP@0.5) and P, R, F1 over confidence (legend: the smoothed mean's peak and where
// it is). One thin line per class (grey, without legend, from 21 classes on), the classes' mean
// thick and blue, as there. `prefix` is "Box" or "Mask": BoxPR_curve.png, MaskF1_curve.png, ...
#include <string>
#include <utility>
#include <vector>

#include "training/eval/metric_curves.h"

namespace yoloflow::core {

// The mean curve's peak after smoothing and the x where it is: the "all classes 0.62 at 0.341"
// of a confidence curve's legend.
std::pair<double, double> curve_peak(const std::vector<double>& x, const std::vector<std::vector<double>>& curves);

// Writes {prefix}PR_curve.png, {prefix}F1_curve.png, {prefix}P_curve.png and {prefix}R_curve.png
// into `dir` (atomically); returns their file names. Throws Error when one cannot be written.
std::vector<std::string> plot_metric_curves(const MetricCurves& curves, const std::vector<std::string>& names,
                                            const std::string& prefix, const std::string& dir);

}  // namespace yoloflow::core
