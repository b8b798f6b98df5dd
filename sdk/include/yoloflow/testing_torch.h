#pragma once
// The contracts of the kinds that exchange tensors with the host: model, loss, optimizer,
// precision, and a callback's tensor hooks. Header-only, so the SDK library stays LibTorch-free
// and these compile with the test's own LibTorch. Components come from
// yoloflow::testing::PluginLibrary (yoloflow/testing.h) as for every kind:
//
//   yoloflow::testing::PluginLibrary lib("build/yoloflow_my_optimizer.so");
//   auto a = lib.make<yoloflow::Optimizer>("lion"), b = lib.make<yoloflow::Optimizer>("lion");
//   auto problems = yoloflow::testing::optimizer_contract(*a, *b);
//
// Each check returns one line per problem found (empty: none), never asserts, so that any test
// framework can report it.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "yoloflow/callback.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"
#include "yoloflow/testing.h"
#include "yoloflow/training_view.h"

namespace yoloflow::testing {

namespace detail {

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

class View final : public TrainingView {
 public:
  View(torch::nn::Module& model, std::vector<ParamGroup> groups, TrainProgress progress)
      : model_(model), groups_(std::move(groups)), progress_(progress) {}
  torch::nn::Module& model() override { return model_; }
  const std::vector<ParamGroup>& param_groups() const override { return groups_; }
  TrainProgress progress() const override { return progress_; }

  torch::nn::Module& model_;
  std::vector<ParamGroup> groups_;
  TrainProgress progress_;
};

class Tensors final : public CheckpointTensors {
 public:
  void put(NamedTensors tensors) override {
    for (auto& [name, t] : tensors) own.emplace_back(name, t.detach().to(torch::kCPU).clone());
  }
  void put_deploy_weights(NamedTensors tensors, std::int64_t averaged_steps) override {
    ++deploy_puts;
    deploy.clear();
    for (auto& [name, t] : tensors) deploy.emplace_back(name, t.detach().to(torch::kCPU).clone());
    steps = averaged_steps;
  }
  const NamedTensors& get() const override { return own; }
  const NamedTensors& deploy_weights() const override { return deploy; }
  std::int64_t deploy_averaged_steps() const override { return steps; }
  NamedTensors own, deploy;
  std::int64_t steps = 0;
  int deploy_puts = 0;
};

inline bool same_tensors(const NamedTensors& a, const NamedTensors& b, std::string& why) {
  if (a.size() != b.size()) {
    why = std::to_string(a.size()) + " tensors, then " + std::to_string(b.size());
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first) {
      why = "'" + a[i].first + "' comes back as '" + b[i].first + "'";
      return false;
    }
    if (!a[i].second.sizes().equals(b[i].second.sizes()) || !torch::equal(a[i].second, b[i].second)) {
      why = "'" + a[i].first + "' comes back with other values";
      return false;
    }
  }
  return true;
}

// Every parameter and buffer of `m`: where its storage is and its shape, to see that a hook
// wrote in place and replaced nothing.
inline std::vector<std::pair<const void*, std::vector<std::int64_t>>> identities(torch::nn::Module& m) {
  std::vector<std::pair<const void*, std::vector<std::int64_t>>> out;
  for (const auto& p : m.named_parameters()) out.emplace_back(p.value().data_ptr(), p.value().sizes().vec());
  for (const auto& b : m.named_buffers()) out.emplace_back(b.value().data_ptr(), b.value().sizes().vec());
  return out;
}

inline std::vector<at::Tensor> values(torch::nn::Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.value().detach().clone());
  return out;
}

inline bool same_values(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i], b[i])) return false;
  }
  return true;
}

// Three groups as the host builds them ("weights", "norm", "bias"), of small tensors seeded
// by `seed`, every number 0 (setup() fills them).
inline std::vector<ParamGroup> groups_like_the_host(std::uint64_t seed) {
  auto g = at::detail::createCPUGenerator(seed);
  std::vector<ParamGroup> out(3);
  out[0].name = "weights";
  out[0].params = {at::randn({4, 3, 3, 3}, g).requires_grad_(true), at::randn({4, 4}, g).requires_grad_(true)};
  out[1].name = "norm";
  out[1].params = {at::ones({4}).requires_grad_(true)};
  out[2].name = "bias";
  out[2].params = {at::zeros({4}).requires_grad_(true), at::zeros({4}).requires_grad_(true)};
  return out;
}

inline void set_grads(std::vector<ParamGroup>& groups, double value) {
  int k = 0;
  for (auto& g : groups) {
    for (auto& p : g.params) {
      p.mutable_grad() = torch::full_like(p, value * (1 + (k++ % 3)));
    }
  }
}

inline std::vector<at::Tensor> group_values(const std::vector<ParamGroup>& groups) {
  std::vector<at::Tensor> out;
  for (const auto& g : groups) {
    for (const auto& p : g.params) out.push_back(p.detach().clone());
  }
  return out;
}

}  // namespace detail

// What a model must do, at `imgsz` (a multiple of its largest stride) with `batch` images: a
// head of increasing strides, nc >= 1 and reg_max >= 1, a task, its extra outputs named once
// each; an architecture name and a layer table; finite parameters; in training mode one level
// per stride, each (B, 4 * reg_max + nc, imgsz / stride, imgsz / stride) and finite, exactly the
// extra outputs the head lists (per anchor (B, channels, A), per image (B, ...)), finite, with
// gradients reaching its parameters; decode() giving (B, A, 4) finite boxes with x1 <= x2 and
// y1 <= y2, (B, A, nc) scores in [0, 1], A the cells of all levels, and the extras decoded (per
// anchor (B, A, channels)); in eval mode the same output twice.
inline std::vector<std::string> model_contract(Model& model, int imgsz = 64, int batch = 2) {
  using detail::returns;
  std::vector<std::string> out;
  HeadDescription head;
  if (!returns("head()", out, [&] { head = model.head(); })) return out;
  if (head.strides.empty()) return {"head() has no strides"};
  for (std::size_t i = 1; i < head.strides.size(); ++i) {
    if (head.strides[i] <= head.strides[i - 1]) out.push_back("head()'s strides do not increase");
  }
  if (head.nc < 1 || head.reg_max < 1) out.push_back("head() has nc " + std::to_string(head.nc) + ", reg_max " + std::to_string(head.reg_max));
  if (head.task.empty()) out.push_back("head() names no task");
  for (std::size_t i = 0; i < head.outputs.size(); ++i) {
    const auto& o = head.outputs[i];
    if (o.name.empty()) out.push_back("head() lists an output without a name");
    if (o.per_anchor && o.channels < 1) out.push_back("head()'s per-anchor output '" + o.name + "' has no channels");
    for (std::size_t j = 0; j < i; ++j) {
      if (head.outputs[j].name == o.name) out.push_back("head() lists the output '" + o.name + "' twice");
    }
  }
  if (imgsz % head.strides.back() != 0) {
    return {"imgsz " + std::to_string(imgsz) + " is not a multiple of the largest stride " + std::to_string(head.strides.back())};
  }
  std::string arch;
  returns("architecture()", out, [&] { arch = model.architecture(); });
  if (arch.empty()) out.push_back("architecture() is empty");
  std::vector<LayerRow> rows;
  returns("layers()", out, [&] { rows = model.layers(); });
  if (rows.empty()) out.push_back("layers() is empty");
  auto& module = model.module();
  const auto params = module.parameters();
  if (params.empty()) return {"module() has no parameters"};
  for (const auto& p : params) {
    if (!detail::all_finite(p)) {
      out.push_back("module() has a parameter that is not finite");
      break;
    }
  }

  module.train();
  const auto x = detail::images(batch, imgsz);
  ModelOutput output;
  if (!returns("forward_train", out, [&] { output = model.forward_train(x); })) return out;
  const std::vector<at::Tensor>& levels = output.levels;
  if (levels.size() != head.strides.size()) {
    out.push_back("forward_train gave " + std::to_string(levels.size()) + " levels for " +
                  std::to_string(head.strides.size()) + " strides");
    return out;
  }
  std::int64_t anchors = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const auto s = head.strides[i];
    const std::vector<std::int64_t> want = {batch, 4 * head.reg_max + head.nc, imgsz / s, imgsz / s};
    if (!levels[i].defined() || levels[i].sizes().vec() != want) {
      std::ostringstream os;
      os << "level " << i << " is " << detail::shape_text(levels[i]) << ", expected " << at::IntArrayRef(want);
      out.push_back(os.str());
      return out;
    }
    if (!detail::all_finite(levels[i])) out.push_back("level " + std::to_string(i) + " is not finite");
    anchors += want[2] * want[3];
  }
  // The extras as the host checks every forward (yoloflow/model.h).
  if (const std::string problem = check_model_output(output, head, batch); !problem.empty()) {
    out.push_back("forward_train " + problem);
    return out;
  }
  for (const auto& [name, e] : output.extras) {
    if (!detail::all_finite(e)) out.push_back("output '" + name + "' is not finite");
  }
  at::Tensor sum = levels[0].sum();
  for (std::size_t i = 1; i < levels.size(); ++i) sum = sum + levels[i].sum();
  for (const auto& [name, e] : output.extras) sum = sum + e.sum();
  if (!sum.requires_grad()) {
    out.push_back("forward_train's output does not require grad in training mode");
  } else {
    returns("backward through forward_train", out, [&] { sum.backward(); });
    bool reached = false;
    for (const auto& p : params) reached = reached || (p.grad().defined() && p.grad().abs().sum().item<double>() > 0);
    if (!reached) out.push_back("no gradient reaches the parameters");
    for (auto& p : module.parameters()) p.mutable_grad() = at::Tensor();
  }

  Predictions d;
  {
    torch::NoGradGuard no_grad;
    if (!returns("decode", out, [&] { d = model.decode(output); })) return out;
  }
  for (const auto& o : head.outputs) {
    auto it = d.extras.find(o.name);
    if (it == d.extras.end() || !it->second.defined()) {
      out.push_back("decode gave no output '" + o.name + "', which head() lists");
    } else if (o.per_anchor && it->second.sizes().vec() != std::vector<std::int64_t>{batch, anchors, o.channels}) {
      out.push_back("decode's '" + o.name + "' is " + detail::shape_text(it->second) + ", expected (B, A, " +
                    std::to_string(o.channels) + ")");
    } else if (!detail::all_finite(it->second)) {
      out.push_back("decode's '" + o.name + "' is not finite");
    }
  }
  const std::vector<std::int64_t> boxes_shape = {batch, anchors, 4}, scores_shape = {batch, anchors, head.nc};
  if (!d.boxes.defined() || d.boxes.sizes().vec() != boxes_shape) {
    out.push_back("decode's boxes are " + detail::shape_text(d.boxes) + ", expected (B, A, 4) with A " + std::to_string(anchors));
  } else if (!detail::all_finite(d.boxes)) {
    out.push_back("decode's boxes are not finite");
  } else {
    const auto b = d.boxes;
    if ((b.select(2, 0) > b.select(2, 2)).any().item<bool>() || (b.select(2, 1) > b.select(2, 3)).any().item<bool>()) {
      out.push_back("decode gives a box with x1 > x2 or y1 > y2");
    }
  }
  if (!d.scores.defined() || d.scores.sizes().vec() != scores_shape) {
    out.push_back("decode's scores are " + detail::shape_text(d.scores) + ", expected (B, A, nc)");
  } else if (!detail::all_finite(d.scores) || (d.scores < 0).any().item<bool>() || (d.scores > 1).any().item<bool>()) {
    out.push_back("decode's scores are not probabilities in [0, 1]");
  }

  module.eval();
  {
    torch::NoGradGuard no_grad;
    ModelOutput a, b;
    if (returns("forward_train in eval mode", out, [&] { a = model.forward_train(x); b = model.forward_train(x); })) {
      bool same = a.levels.size() == b.levels.size() && a.extras.size() == b.extras.size();
      for (std::size_t i = 0; same && i < a.levels.size(); ++i) same = torch::equal(a.levels[i], b.levels[i]);
      for (const auto& [name, e] : a.extras) same = same && b.extras.count(name) && torch::equal(e, b.extras.at(name));
      if (!same) out.push_back("in eval mode the same images give another output");
    }
  }
  module.train();
  return out;
}

// What a loss must do, set up for `model`'s head, on the model's output for `batch` images at
// `imgsz` with `targets` (default: two boxes and a padding row per image; a loss that reads more
// targets, keypoints say, is given them here): item_names(); a finite scalar total that requires
// grad and whose backward gives finite gradients to the model; items (K,) finite and detached,
// K the names; the same total for the same input; and a finite total for a batch whose every
// row is padding (images with no instances: without_instances(targets)).
inline std::vector<std::string> loss_contract(Loss& loss, Model& model, int imgsz = 64, int batch = 2,
                                              LossTargets targets = {}) {
  using detail::returns;
  std::vector<std::string> out;
  const HeadDescription head = model.head();
  if (!returns("setup", out, [&] { loss.setup(head); })) return out;
  std::vector<std::string> names;
  returns("item_names()", out, [&] { names = loss.item_names(); });
  if (names.empty()) out.push_back("item_names() is empty");
  auto& module = model.module();
  module.train();
  const auto x = detail::images(batch, imgsz);
  const LossTargets t = targets.tensors.empty() ? detail::targets(batch, head.nc) : std::move(targets);
  const auto levels = model.forward_train(x);
  LossOutput a, b;
  if (!returns("compute", out, [&] { a = loss.compute(levels, t, 1.0); })) return out;
  if (!a.total.defined() || a.total.dim() != 0) {
    out.push_back("total is " + detail::shape_text(a.total) + ", not a scalar");
    return out;
  }
  if (!detail::all_finite(a.total)) out.push_back("total is not finite");
  if (!a.total.requires_grad()) out.push_back("total does not require grad");
  if (!a.items.defined() || a.items.dim() != 1 || a.items.size(0) != static_cast<std::int64_t>(names.size())) {
    out.push_back("items are " + detail::shape_text(a.items) + " for " + std::to_string(names.size()) + " names");
  } else {
    if (!detail::all_finite(a.items)) out.push_back("items are not finite");
    if (a.items.requires_grad()) out.push_back("items are not detached");
  }
  if (a.normaliser.defined() && (a.normaliser.dim() != 0 || !detail::all_finite(a.normaliser))) {
    out.push_back("normaliser is given but is not a finite scalar");
  }
  if (a.total.requires_grad()) {
    returns("backward of total", out, [&] { a.total.backward(); });
    bool reached = false, finite = true;
    for (const auto& p : module.parameters()) {
      if (!p.grad().defined()) continue;
      reached = true;
      finite = finite && detail::all_finite(p.grad());
    }
    if (!reached) out.push_back("the loss gives the model no gradient");
    if (!finite) out.push_back("the loss gives the model a gradient that is not finite");
    for (auto& p : module.parameters()) p.mutable_grad() = at::Tensor();
  }
  {
    torch::NoGradGuard no_grad;
    const auto again = model.forward_train(x);
    if (returns("compute again", out, [&] { b = loss.compute(again, t, 1.0); }) && b.total.defined() &&
        !torch::allclose(a.total.detach(), b.total, 1e-5, 1e-6)) {
      out.push_back("the same input gives another total");
    }
    LossOutput empty;
    const auto none = detail::without_instances(t);
    if (returns("compute without boxes", out, [&] { empty = loss.compute(again, none, 1.0); }) &&
        (!empty.total.defined() || !detail::all_finite(empty.total))) {
      out.push_back("a batch without boxes gives a total that is not finite");
    }
  }
  return out;
}

namespace detail {

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

}  // namespace detail

// What an evaluator must do, set up for `model`'s head, on `batch` (default: two 64 x 64 images
// with three boxes; an evaluator that reads more targets, keypoints or masks say, is given them
// here); the predictions carry the model's per-image outputs (prototypes) for the batch:
// columns() and table() named once each; after reset() and the batch with perfect predictions
// (the labels, score 1), compute() gives a finite value for every column and nothing else, a
// finite fitness, one table value per table column overall and per class; the same again after
// another reset(); matched() families of one entry per detection, the batch's labels and a plain
// name; a fitness no lower than that of the same batch with no predictions; and a finite
// evaluation of no batch at all.
inline std::vector<std::string> evaluator_contract(Evaluator& evaluator, Model& model, Batch batch = {}) {
  using detail::returns;
  std::vector<std::string> out;
  const HeadDescription head = model.head();
  if (!returns("setup", out, [&] { evaluator.setup(head); })) return out;
  std::vector<std::string> columns;
  std::vector<MetricColumn> table;
  returns("columns()", out, [&] { columns = evaluator.columns(); });
  returns("table()", out, [&] { table = evaluator.table(); });
  if (columns.empty()) out.push_back("columns() is empty");
  for (std::size_t i = 0; i < columns.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (columns[i] == columns[j]) out.push_back("columns() lists '" + columns[i] + "' twice");
    }
  }
  for (std::size_t i = 0; i < table.size(); ++i) {
    if (table[i].key.empty()) out.push_back("table() has a column without a key");
    for (std::size_t j = 0; j < i; ++j) {
      if (table[i].key == table[j].key) out.push_back("table() lists '" + table[i].key + "' twice");
    }
  }
  if (batch.size == 0) batch = detail::evaluation_batch();
  std::vector<std::map<std::string, at::Tensor>> per_image;
  if (!returns("the model's per-image outputs for the batch", out, [&] { per_image = detail::per_image_outputs(model, batch); })) {
    return out;
  }
  const auto perfect = detail::perfect_predictions(batch, head, per_image);
  auto evaluate = [&](const std::vector<ImagePredictions>* predictions, const char* what, Evaluation& e) {
    return returns(what, out, [&] {
      evaluator.reset();
      if (predictions != nullptr) evaluator.add_batch(batch, *predictions);
      e = evaluator.compute();
    });
  };
  // As the host checks every compute() (yoloflow/evaluator.h).
  auto check = [&](const Evaluation& e, const std::string& what) {
    if (const std::string problem = check_evaluation(e, columns, table.size()); !problem.empty()) {
      out.push_back(what + ": compute " + problem);
    }
  };
  Evaluation a, b, none, empty;
  if (evaluate(&perfect, "reset, add_batch, compute", a)) check(a, "the evaluation of perfect predictions");
  if (evaluate(&perfect, "the same again", b) && !(a.columns == b.columns && a.fitness == b.fitness)) {
    out.push_back("the same batch and predictions after reset() give another evaluation");
  }
  // matched() (the plots' curves) of that evaluation: per family one score, class and flag per
  // detection, the batch's labels, a name of letters and digits (it names the plot files).
  std::vector<MatchedDetections> families;
  if (returns("matched()", out, [&] { families = evaluator.matched(); })) {
    for (const auto& f : families) {
      const bool word = !f.family.empty() && std::all_of(f.family.begin(), f.family.end(),
                                                         [](unsigned char c) { return std::isalnum(c) != 0; });
      if (!word) out.push_back("matched(): a family named '" + f.family + "' (letters and digits: it names plot files)");
      if (f.scores.size() != f.classes.size() || f.scores.size() != f.correct.size()) {
        out.push_back("matched(): family " + f.family + " has " + std::to_string(f.scores.size()) + " scores, " +
                      std::to_string(f.classes.size()) + " classes and " + std::to_string(f.correct.size()) +
                      " flags: one of each per detection");
      }
      if (static_cast<int>(f.label_classes.size()) != b.instances) {
        out.push_back("matched(): family " + f.family + " has " + std::to_string(f.label_classes.size()) +
                      " labels where the evaluation counts " + std::to_string(b.instances) + " instances");
      }
    }
  }
  std::vector<ImagePredictions> nothing(static_cast<std::size_t>(batch.size));
  for (std::size_t i = 0; i < nothing.size(); ++i) {
    auto& p = nothing[i];
    p.boxes = torch::zeros({0, 6});
    for (const auto& o : head.outputs) {
      if (o.per_anchor) p.extras[o.name] = torch::zeros({0, o.channels});
    }
    if (i < per_image.size()) p.extras.insert(per_image[i].begin(), per_image[i].end());
  }
  if (evaluate(&nothing, "add_batch without predictions", none)) {
    check(none, "the evaluation without predictions");
    if (std::isfinite(a.fitness) && std::isfinite(none.fitness) && none.fitness > a.fitness) {
      out.push_back("no predictions score a higher fitness than perfect ones");
    }
  }
  if (evaluate(nullptr, "compute without batches", empty)) check(empty, "the evaluation of no batch");
  return out;
}

// What an optimizer must do with three groups as the host hands them over (`fresh`: another
// instance with the same parameters): setup() sets lr and initial_lr > 0 on every group and a
// momentum and weight decay >= 0; a description; step() changes the parameters from their
// gradients and leaves them finite; a step with `skip` set leaves parameters and state
// unchanged; state() loaded into `fresh`, set up on copies of the same parameters, makes its next
// step equal to this one's.
inline std::vector<std::string> optimizer_contract(Optimizer& optimizer, Optimizer& fresh) {
  using detail::returns;
  std::vector<std::string> out;
  OptimizerSetup setup;
  setup.total_iterations = 100;
  if (!returns("setup", out, [&] { optimizer.setup(detail::groups_like_the_host(3), setup); })) return out;
  auto& groups = optimizer.groups();
  if (groups.size() != 3) return {"groups() has " + std::to_string(groups.size()) + " groups after setup of 3"};
  for (const auto& g : groups) {
    if (!(g.lr > 0) || !(g.initial_lr > 0)) out.push_back("group '" + g.name + "' has lr " + std::to_string(g.lr) + ", initial_lr " + std::to_string(g.initial_lr) + " after setup()");
    if (g.momentum < 0 || g.weight_decay < 0) out.push_back("group '" + g.name + "' has a negative momentum or weight decay");
  }
  std::string description;
  returns("description()", out, [&] { description = optimizer.description(); });
  if (description.empty()) out.push_back("description() is empty");

  detail::set_grads(groups, 0.5);
  const auto before = detail::group_values(groups);
  if (!returns("step", out, [&] { torch::NoGradGuard g; optimizer.step(at::Tensor()); })) return out;
  const auto after = detail::group_values(groups);
  if (detail::same_values(before, after)) out.push_back("step() did not change the parameters");
  for (const auto& v : after) {
    if (!detail::all_finite(v)) {
      out.push_back("step() left a parameter that is not finite");
      break;
    }
  }

  // A skipped step (an fp16 overflow): nothing moves, not even the state.
  NamedTensors state;
  returns("state()", out, [&] { state = optimizer.state(); });
  std::map<std::string, at::Tensor> saved;
  for (const auto& [name, t] : state) saved[name] = t.detach().clone();
  detail::set_grads(groups, 0.25);
  returns("step with skip", out, [&] { torch::NoGradGuard g; optimizer.step(torch::ones({})); });
  if (!detail::same_values(after, detail::group_values(groups))) out.push_back("step() with skip set changed the parameters");
  NamedTensors skipped_state;
  returns("state()", out, [&] { skipped_state = optimizer.state(); });
  std::string why;
  NamedTensors saved_list(saved.begin(), saved.end()), skipped_list;
  {
    std::map<std::string, at::Tensor> m(skipped_state.begin(), skipped_state.end());
    skipped_list.assign(m.begin(), m.end());
  }
  if (!detail::same_tensors(saved_list, skipped_list, why)) out.push_back("step() with skip set changed the state: " + why);

  // Resume: the same parameters and state in another instance step the same way.
  auto copies = detail::groups_like_the_host(99);
  {
    std::size_t k = 0;
    const auto now = detail::group_values(groups);
    for (auto& g : copies) {
      for (auto& p : g.params) p = now[k++].clone().requires_grad_(true);
    }
  }
  if (!returns("setup of another instance", out, [&] { fresh.setup(std::move(copies), setup); })) return out;
  if (!returns("load_state of another instance", out, [&] { fresh.load_state(saved); })) return out;
  auto& other = fresh.groups();
  for (std::size_t i = 0; i < groups.size() && i < other.size(); ++i) {
    other[i].lr = groups[i].lr;
    other[i].momentum = groups[i].momentum;
  }
  detail::set_grads(groups, 0.125);
  detail::set_grads(other, 0.125);
  returns("step", out, [&] { torch::NoGradGuard g; optimizer.step(at::Tensor()); });
  returns("step of the loaded instance", out, [&] { torch::NoGradGuard g; fresh.step(at::Tensor()); });
  const auto mine = detail::group_values(groups), theirs = detail::group_values(other);
  bool equal = mine.size() == theirs.size();
  for (std::size_t i = 0; equal && i < mine.size(); ++i) equal = torch::allclose(mine[i], theirs[i], 1e-6, 1e-7);
  if (!equal) out.push_back("an instance loaded with state() does not step as the saved one does");
  return out;
}

// What a precision strategy must do on `device`: say whether it runs there (with a reason when
// not; nothing else is checked then); a floating compute dtype; an autocast scope; scale_loss()
// multiplying by scale() > 0; unscale() dividing the gradients by it and, unless it never
// skips (undefined result), giving 0 for finite gradients and 1 when one is inf or NaN; update()
// accepting both; state() loaded into `fresh` giving the same scale.
inline std::vector<std::string> precision_contract(PrecisionStrategy& precision, PrecisionStrategy& fresh,
                                                   const c10::Device& device = c10::Device(c10::kCPU)) {
  using detail::returns;
  std::vector<std::string> out;
  std::string why_not;
  bool ok = false;
  if (!returns("supports", out, [&] { ok = precision.supports(device, why_not); })) return out;
  if (!ok) {
    if (why_not.empty()) out.push_back("supports() is false without a reason");
    return out;
  }
  const auto dtype = precision.compute_dtype();
  if (!at::isFloatingType(dtype)) out.push_back("compute_dtype() is not a floating type");
  {
    std::unique_ptr<AutocastScope> scope;
    if (!returns("autocast", out, [&] { scope = precision.autocast(device); })) return out;
    if (!scope) out.push_back("autocast() gave no scope");
  }
  double scale = 0;
  returns("scale()", out, [&] { scale = precision.scale(); });
  if (!(scale > 0) || !std::isfinite(scale)) return {"scale() is " + std::to_string(scale)};
  const auto loss = torch::tensor(2.0f, torch::TensorOptions().device(device));
  at::Tensor scaled;
  if (!returns("scale_loss", out, [&] { scaled = precision.scale_loss(loss); })) return out;
  if (!scaled.defined() || std::abs(scaled.item<double>() - 2.0 * scale) > 1e-6 * 2.0 * scale) {
    out.push_back("scale_loss(2) is not 2 x scale()");
  }
  auto grad = torch::full({4}, static_cast<float>(3.0 * scale), torch::TensorOptions().device(device));
  at::Tensor found;
  if (!returns("unscale", out, [&] { found = precision.unscale({grad}); })) return out;
  if (!torch::allclose(grad.cpu(), torch::full({4}, 3.0f), 1e-4, 1e-5)) out.push_back("unscale() did not divide the gradients by scale()");
  const bool skips = found.defined();
  if (skips && (found.dim() != 0 || found.item<double>() != 0.0)) out.push_back("unscale() of finite gradients does not give 0");
  returns("update", out, [&] { precision.update(found); });
  auto bad = torch::full({4}, std::numeric_limits<float>::infinity(), torch::TensorOptions().device(device));
  at::Tensor found_bad;
  if (returns("unscale of inf gradients", out, [&] { found_bad = precision.unscale({bad}); })) {
    if (skips && (!found_bad.defined() || found_bad.item<double>() != 1.0)) out.push_back("unscale() of inf gradients does not give 1");
    returns("update after inf", out, [&] { precision.update(found_bad); });
  }
  NamedTensors state;
  returns("state()", out, [&] { state = precision.state(); });
  std::map<std::string, at::Tensor> m(state.begin(), state.end());
  if (returns("load_state of another instance", out, [&] { fresh.load_state(m); })) {
    // A resumed run uses it on the same device before its scale matters.
    returns("autocast of the loaded instance", out, [&] { (void)fresh.autocast(device); });
    double a = 0, b = 0;
    returns("scale()", out, [&] { a = precision.scale(); b = fresh.scale(); });
    if (a != b) out.push_back("an instance loaded with state() has scale " + std::to_string(b) + ", not " + std::to_string(a));
  }
  return out;
}

// What a callback's tensor hooks must do on `model`'s module over `steps` optimizer steps (the
// parameters moved between them, as training does) and a validation: write the model only in
// place (every parameter and buffer keeps its storage and shape), leave after
// on_validation_end the values it had before on_validation_start, and give back through
// `fresh`'s load_tensors the tensors save_tensors put (its own and the weights to deploy).
inline std::vector<std::string> callback_tensors_contract(Callback& callback, Callback& fresh, torch::nn::Module& model,
                                                          int steps = 3) {
  using detail::returns;
  std::vector<std::string> out;
  const auto identity = detail::identities(model);
  TrainProgress progress;
  progress.steps_in_epoch = steps;
  std::vector<ParamGroup> groups(1);
  groups[0].name = "weights";
  groups[0].lr = groups[0].initial_lr = 0.01;
  detail::View view(model, groups, progress);
  for (int k = 0; k < steps; ++k) {
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model.parameters()) p.add_(0.01 * (k + 1));
    }
    view.progress_.step = k + 1;
    view.progress_.global_step = k + 1;
    if (!returns("on_optimizer_step", out, [&] { callback.on_optimizer_step(view); })) return out;
  }
  const auto trained = detail::values(model);
  if (!returns("on_validation_start", out, [&] { callback.on_validation_start(view); })) return out;
  if (!returns("on_validation_end", out, [&] { callback.on_validation_end(view); })) return out;
  if (!detail::same_values(trained, detail::values(model))) out.push_back("the model's values after on_validation_end differ from before on_validation_start");
  if (detail::identities(model) != identity) out.push_back("a hook replaced a tensor of the model or changed its shape");

  detail::Tensors saved;
  if (!returns("save_tensors", out, [&] { callback.save_tensors(saved); })) return out;
  if (saved.deploy_puts > 1) out.push_back("save_tensors put the weights to deploy more than once");
  if (!returns("load_tensors of another instance", out, [&] { fresh.load_tensors(saved); })) return out;
  // The other instance sees the model first through a hook, as a resumed run's does.
  detail::Tensors again;
  if (!returns("save_tensors of the loaded instance", out, [&] { fresh.save_tensors(again); })) return out;
  std::string why;
  if (!detail::same_tensors(saved.own, again.own, why)) out.push_back("its tensors do not come back from load_tensors: " + why);
  if (!detail::same_tensors(saved.deploy, again.deploy, why)) out.push_back("the weights to deploy do not come back from load_tensors: " + why);
  if (saved.steps != again.steps) out.push_back("the averaged steps do not come back from load_tensors");
  return out;
}

}  // namespace yoloflow::testing
