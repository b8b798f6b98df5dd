#pragma once
// What the tensor contracts (yoloflow/testing_torch.h) feed the components they check: seeded
// images, loss targets with and without instances, an evaluation batch and its perfect
// predictions; and the two tensor checks every contract uses. Plugin tests take these inputs too,
// so that their own checks run on what the contracts run on.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "yoloflow/evaluator.h"
#include "yoloflow/head.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/sample.h"

namespace yoloflow::testing::detail {

inline std::string shape_text(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

inline bool all_finite(const at::Tensor& t) { return t.defined() && torch::isfinite(t).all().item<bool>(); }

// Images in [0, 1], reproducible (seeded), NCHW.
inline at::Tensor images(int batch, int imgsz) {
  auto g = at::detail::createCPUGenerator(7);
  return at::rand({batch, 3, imgsz, imgsz}, g);
}

// (B, M, 5) targets [cls, cx, cy, w, h] in 0..1, the last row of each image padding (cls -1).
// Two boxes and a padding row per image, as LossTargets' "boxes".
inline LossTargets targets(int batch, int nc) {
  auto t = torch::full({batch, 3, 5}, -1.0f);
  for (int b = 0; b < batch; ++b) {
    t[b][0] = torch::tensor({0.0f, 0.5f, 0.5f, 0.4f, 0.3f});
    t[b][1] = torch::tensor({static_cast<float>((b + 1) % nc), 0.25f, 0.7f, 0.2f, 0.25f});
  }
  LossTargets out;
  out.tensors["boxes"] = t;
  return out;
}

// `full` with every instance row made padding: boxes' class -1, every other per-instance
// target (B, M, ...) zero; per-image targets kept.
inline LossTargets without_instances(const LossTargets& full) {
  LossTargets out;
  for (const auto& [name, t] : full.tensors) {
    if (name == "boxes") {
      out.tensors[name] = torch::full_like(t, -1.0f);
    } else if (name.rfind("image_", 0) == 0) {
      out.tensors[name] = t.clone();
    } else {
      out.tensors[name] = torch::zeros_like(t);
    }
  }
  return out;
}

// Two 64 x 64 images with two and one boxes, as a collate batcher writes them.
inline Batch evaluation_batch() {
  Batch b;
  b.size = 2;
  b.height = b.width = 64;
  b.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[2 * 64 * 64 * 3](), std::default_delete<std::uint8_t[]>());
  b.boxes() = TargetArray{{3, 6}, {0, 0, 0.3f, 0.3f, 0.2f, 0.2f,  //
                                   0, 1, 0.7f, 0.6f, 0.3f, 0.4f,  //
                                   1, 0, 0.5f, 0.5f, 0.5f, 0.5f}};
  b.samples.resize(2);
  for (std::size_t i = 0; i < 2; ++i) {
    b.samples[i].index = i;
    b.samples[i].path = "image" + std::to_string(i) + ".jpg";
  }
  return b;
}

// Each image's per-image outputs (prototypes, say) as `model` gives them for the batch's size in
// eval mode, by name: an evaluator reads them beside the predictions' per-anchor values.
inline std::vector<std::map<std::string, at::Tensor>> per_image_outputs(Model& model, const Batch& batch) {
  std::vector<std::map<std::string, at::Tensor>> out(static_cast<std::size_t>(batch.size));
  const HeadDescription head = model.head();
  bool any = false;
  for (const auto& o : head.outputs) any = any || !o.per_anchor;
  if (!any) return out;
  torch::NoGradGuard no_grad;
  const bool was_training = model.module().is_training();
  model.module().eval();
  const auto device = model.module().parameters().empty() ? torch::Device(torch::kCPU)
                                                           : model.module().parameters().front().device();
  const Predictions d = model.decode(model.forward_train(torch::zeros({batch.size, 3, batch.height, batch.width}, device)));
  model.module().train(was_training);
  for (const auto& o : head.outputs) {
    if (o.per_anchor) continue;
    const auto it = d.extras.find(o.name);
    if (it == d.extras.end()) continue;
    for (std::int64_t i = 0; i < batch.size; ++i) out[static_cast<std::size_t>(i)][o.name] = it->second[i].to(torch::kCPU);
  }
  return out;
}

// Each image's labels as predictions of score 1 (boxes in pixels), with zero-valued per-anchor
// extras shaped as the head says (N, channels), and the image's `per_image` outputs.
inline std::vector<ImagePredictions> perfect_predictions(const Batch& batch, const HeadDescription& head,
                                                         const std::vector<std::map<std::string, at::Tensor>>& per_image = {}) {
  std::vector<ImagePredictions> out(static_cast<std::size_t>(batch.size));
  std::vector<std::vector<float>> rows(out.size());
  const auto& v = batch.boxes().values;
  const float w = static_cast<float>(batch.width), h = static_cast<float>(batch.height);
  for (std::size_t k = 0; k + 6 <= v.size(); k += 6) {
    rows.at(static_cast<std::size_t>(v[k])).insert(rows.at(static_cast<std::size_t>(v[k])).end(),
        {(v[k + 2] - v[k + 4] / 2) * w, (v[k + 3] - v[k + 5] / 2) * h, (v[k + 2] + v[k + 4] / 2) * w,
         (v[k + 3] + v[k + 5] / 2) * h, 1.0f, v[k + 1]});
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto n = static_cast<std::int64_t>(rows[i].size() / 6);
    out[i].boxes = torch::from_blob(rows[i].data(), {n, 6}, torch::kFloat).clone();
    for (const auto& o : head.outputs) {
      if (o.per_anchor) out[i].extras[o.name] = torch::zeros({n, o.channels});
    }
    if (i < per_image.size()) out[i].extras.insert(per_image[i].begin(), per_image[i].end());
  }
  return out;
}

}  // namespace yoloflow::testing::detail
