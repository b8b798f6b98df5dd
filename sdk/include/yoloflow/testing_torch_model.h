#pragma once
// The contracts of the kinds that meet at the model's head: the model itself, and the loss and
// evaluator that read its output. Header-only, compiled with the test's own LibTorch.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/evaluator.h"
#include "yoloflow/head.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/sample.h"
#include "yoloflow/testing.h"
#include "yoloflow/testing_torch_fixtures.h"

namespace yoloflow::testing {

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

}  // namespace yoloflow::testing
