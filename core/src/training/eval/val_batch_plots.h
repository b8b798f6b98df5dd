#pragma once
// Ultralytics' val_batch0_labels.jpg / val_batch0_pred.jpg ... val_batch2_*: the first
// validation batches as the model saw them (letterboxed), once with their labels and once with
// the model's detections of confidence 0.25 and above ("name 0.87"), drawn with the sample grid
// `yoloflow preview` and train_batch*.jpg use.
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "yoloflow/evaluator.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

constexpr float kPlotConf = 0.25f;  // detections drawn, as Ultralytics' plot_predictions

// One validation batch kept for drawing: its images with labels, and the same images with the
// detections at or above kPlotConf, each box's text beside them.
struct DrawnBatch {
  std::vector<Sample> labels, predictions;
  std::vector<std::vector<std::string>> prediction_text;  // per image, per box: "name 0.87"
};

// The first `max_images` images of `batch`; `names` names the detections' classes.
DrawnBatch keep_batch_for_drawing(const Batch& batch, const std::vector<ImagePredictions>& predictions,
                                  const std::vector<std::string>& names, std::size_t max_images = 16);

// The two grids of a kept batch.
cv::Mat draw_label_grid(const DrawnBatch& batch, const std::vector<std::string>& names);
cv::Mat draw_prediction_grid(const DrawnBatch& batch, const std::vector<std::string>& names);

}  // namespace yoloflow::core
