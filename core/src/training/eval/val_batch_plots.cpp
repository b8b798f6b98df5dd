#include "training/eval/val_batch_plots.h"

#include <cstdio>

#include <torch/torch.h>

#include "training/detect/sample_grid.h"

namespace yoloflow::core {
namespace {

constexpr int kMaxSide = 1920;  // as train_batch*.jpg

}  // namespace

DrawnBatch keep_batch_for_drawing(const Batch& batch, const std::vector<ImagePredictions>& predictions,
                                  const std::vector<std::string>& names, std::size_t max_images) {
  DrawnBatch out;
  out.labels = samples_of_batch(batch);
  if (out.labels.size() > max_images) out.labels.resize(max_images);
  for (std::size_t i = 0; i < out.labels.size(); ++i) {
    Sample s;
    s.path = out.labels[i].path;
    s.image = out.labels[i].image;  // shared pixels: both grids draw on copies
    std::vector<std::string> text;
    if (i < predictions.size() && predictions[i].boxes.defined() && predictions[i].boxes.numel() > 0) {
      const auto boxes = predictions[i].boxes.to(torch::kCPU, torch::kFloat).reshape({-1, 6}).contiguous();
      auto b = boxes.accessor<float, 2>();
      for (std::int64_t k = 0; k < boxes.size(0); ++k) {
        if (b[k][4] < kPlotConf) continue;
        Box box;
        box.x1 = b[k][0], box.y1 = b[k][1], box.x2 = b[k][2], box.y2 = b[k][3];
        box.cls = static_cast<int>(b[k][5]);
        s.boxes.push_back(box);
        char conf[16];
        std::snprintf(conf, sizeof(conf), " %.2f", b[k][4]);
        text.push_back((box.cls >= 0 && box.cls < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(box.cls)]
                                                                                  : std::to_string(box.cls)) +
                       conf);
      }
    }
    out.predictions.push_back(std::move(s));
    out.prediction_text.push_back(std::move(text));
  }
  return out;
}

cv::Mat draw_label_grid(const DrawnBatch& batch, const std::vector<std::string>& names) {
  return draw_sample_grid(batch.labels, names, kMaxSide);
}

cv::Mat draw_prediction_grid(const DrawnBatch& batch, const std::vector<std::string>& names) {
  return draw_sample_grid(batch.predictions, names, kMaxSide, 0, &batch.prediction_text);
}

}  // namespace yoloflow::core
