#include "training/eval/val_batch_plots.h"

#include <algorithm>
#include <cstdio>

#include <torch/torch.h>

#include "training/detect/instance_mask_ops.h"
#include "training/detect/sample_grid.h"

namespace yoloflow::core {
namespace {

constexpr int kMaxSide = 1920;  // as train_batch*.jpg

// A segmentation model's drawn detections (confidence kPlotConf and above, in `boxes`' order):
// their masks, coefficients times the image's prototypes resized to the image, then kept inside
// the box (cropped at the image's pixels, as retina_masks crops) and above 0; one 0/255 plane
// each. Empty for a model without masks.
std::vector<cv::Mat> drawn_masks(const ImagePredictions& p, const torch::Tensor& boxes, int height, int width) {
  const auto coefficients = p.extras.find("mask_coefficients");
  const auto prototypes = p.extras.find("prototypes");
  if (coefficients == p.extras.end() || prototypes == p.extras.end() || !coefficients->second.defined() ||
      !prototypes->second.defined() || prototypes->second.dim() != 3 || coefficients->second.size(0) != boxes.size(0)) {
    return {};
  }
  const auto keep = boxes.select(1, 4).ge(kPlotConf).nonzero().reshape(-1);
  if (keep.numel() == 0) return {};
  const auto coef = coefficients->second.to(torch::kCPU, torch::kFloat).index_select(0, keep);
  const MaskProducts products(prototypes->second.to(torch::kCPU, torch::kFloat), coef);
  const auto kept_boxes = boxes.index_select(0, keep).narrow(1, 0, 4);
  std::vector<cv::Mat> out;
  for (std::int64_t begin = 0; begin < products.size(); begin += 8) {
    const auto n = std::min<std::int64_t>(8, products.size() - begin);
    const auto masks = crop_masks(resize_masks(products.chunk(begin, n), height, width), kept_boxes.narrow(0, begin, n))
                           .gt(0)
                           .to(torch::kUInt8)
                           .mul_(255)
                           .contiguous();
    for (std::int64_t k = 0; k < n; ++k) {
      out.push_back(cv::Mat(height, width, CV_8U, masks[k].data_ptr<std::uint8_t>()).clone());
    }
  }
  return out;
}

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
      s.masks = drawn_masks(predictions[i], boxes, s.image.rows, s.image.cols);
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
