#include "training/export/exported_model.h"

#include "training/export/head_outputs.h"

#include "yoloflow/error.h"

namespace yoloflow::core {

ExportedModel::ExportedModel(std::unique_ptr<OnnxRunner> runner, ExportedModelShape shape)
    : runner_(std::move(runner)), shape_(std::move(shape)) {}

HeadDescription ExportedModel::head_of(const std::string& task, int nc, std::int64_t masks) {
  HeadDescription h;
  h.nc = nc;
  h.strides = {8, 16, 32};
  h.task = task;
  if (task == "segment") {
    h.outputs = {{"mask_coefficients", true, masks, "per anchor, the weights of the prototype masks"},
                 {"prototypes", false, masks, "per image, (B, masks, H/4, W/4) prototype masks"}};
  }
  return h;
}

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
  const std::int64_t channels = 4 + shape_.head.nc + per_anchor_channels(shape_.head);
  const auto image_outputs = per_image_outputs(shape_.head);
  const std::size_t outputs = 1 + image_outputs.size();
  const std::int64_t step = shape_.batch > 0 ? shape_.batch : n;
  std::vector<std::vector<torch::Tensor>> parts(outputs);
  for (std::int64_t b = 0; b < n; b += step) {
    auto chunk = x.slice(0, b, std::min(n, b + step));
    const auto real = chunk.size(0);
    if (real < step) {
      chunk = torch::cat({chunk, torch::zeros({step - real, chunk.size(1), chunk.size(2), chunk.size(3)})}, 0);
    }
    auto out = runner_->run(chunk.contiguous());
    if (out.size() < outputs || out[0].dim() != 3 || out[0].size(0) != step || out[0].size(1) != channels) {
      throw Error("the ONNX file's output has shape " +
                  (out.empty() ? std::string("()") : std::string(c10::str(out[0].sizes()))) + ", not (" +
                  std::to_string(step) + ", " + std::to_string(channels) + ", anchors)" +
                  (outputs > 1 ? " and " + std::to_string(outputs - 1) + " more" : std::string()));
    }
    for (std::size_t k = 1; k < outputs; ++k) {
      if (out[k].dim() < 2 || out[k].size(0) != step) {
        throw Error("the ONNX file's output " + std::to_string(k) + " (" + image_outputs[k - 1] + ") has shape " +
                    std::string(c10::str(out[k].sizes())) + ", not (" + std::to_string(step) + ", ...)");
      }
    }
    for (std::size_t k = 0; k < outputs; ++k) parts[k].push_back(out[k].slice(0, 0, real));
  }
  ModelOutput output;
  output.levels = {torch::cat(parts[0], 0)};
  for (std::size_t k = 1; k < outputs; ++k) output.extras[image_outputs[k - 1]] = torch::cat(parts[k], 0);
  return output;
}

Predictions ExportedModel::decode(const ModelOutput& output) {
  if (output.levels.size() != 1) throw Error("an exported model's output is one tensor");
  // (B, 4 + nc + extras, A): cx, cy, w, h, probabilities, then the per-anchor outputs.
  const auto p = output.levels[0].to(torch::kFloat);
  const auto c = p.slice(1, 0, 2), wh = p.slice(1, 2, 4);
  const std::int64_t nc = shape_.head.nc;
  Predictions d;
  d.boxes = torch::cat({c - wh / 2, c + wh / 2}, 1).transpose(1, 2).contiguous();
  d.scores = p.slice(1, 4, 4 + nc).transpose(1, 2).contiguous();
  std::int64_t at = 4 + nc;
  for (const auto& o : shape_.head.outputs) {
    if (o.per_anchor) {
      d.extras[o.name] = p.slice(1, at, at + o.channels).transpose(1, 2).contiguous();
      at += o.channels;
    } else {
      d.extras[o.name] = output.extra(o.name).to(torch::kFloat);
    }
  }
  return d;
}

}  // namespace yoloflow::core
