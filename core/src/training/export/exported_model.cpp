#include "training/export/exported_model.h"

#include "yoloflow/error.h"

namespace yoloflow::core {

ExportedModel::ExportedModel(std::unique_ptr<OnnxRunner> runner, ExportedModelShape shape)
    : runner_(std::move(runner)), shape_(std::move(shape)) {}

ModelOutput ExportedModel::forward_train(const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  auto x = images.to(torch::kCPU, torch::kFloat).contiguous();
  const std::int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  if (shape_.height > 0 && (h > shape_.height || w > shape_.width)) {
    throw InvalidInput("the ONNX file's input is " + std::to_string(shape_.height) + "x" + std::to_string(shape_.width) +
                       ", smaller than the " + std::to_string(h) + "x" + std::to_string(w) +
                       " images given to it: use its imgsz, or export it again at the size wanted");
  }
  if (shape_.height > 0 && (h < shape_.height || w < shape_.width)) {
    x = torch::constant_pad_nd(x, {0, shape_.width - w, 0, shape_.height - h}, 114.0 / 255.0);
  }
  const std::int64_t step = shape_.batch > 0 ? shape_.batch : n;
  std::vector<torch::Tensor> parts;
  for (std::int64_t b = 0; b < n; b += step) {
    auto chunk = x.slice(0, b, std::min(n, b + step));
    const auto real = chunk.size(0);
    if (real < step) {
      chunk = torch::cat({chunk, torch::zeros({step - real, chunk.size(1), chunk.size(2), chunk.size(3)})}, 0);
    }
    auto out = runner_->run(chunk.contiguous());
    if (out.dim() != 3 || out.size(0) != step || out.size(1) != 4 + shape_.head.nc) {
      throw Error("the ONNX file's output has shape " + std::string(c10::str(out.sizes())) + ", not (" +
                  std::to_string(step) + ", " + std::to_string(4 + shape_.head.nc) + ", anchors)");
    }
    parts.push_back(out.slice(0, 0, real));
  }
  ModelOutput output;
  output.levels = {torch::cat(parts, 0)};
  return output;
}

Predictions ExportedModel::decode(const ModelOutput& output) {
  if (output.levels.size() != 1) throw Error("an exported model's output is one tensor");
  const auto p = output.levels[0].to(torch::kFloat);  // (B, 4 + nc, A): cx, cy, w, h, probabilities
  const auto c = p.slice(1, 0, 2), wh = p.slice(1, 2, 4);
  Predictions d;
  d.boxes = torch::cat({c - wh / 2, c + wh / 2}, 1).transpose(1, 2).contiguous();
  d.scores = p.slice(1, 4).transpose(1, 2).contiguous();
  return d;
}

}  // namespace yoloflow::core
