// YOLO11 network assembly (scales, layer table) and stage execution with optional
// activation checkpointing.
#include "yolo11_net.h"

#include <cmath>
#include <map>
#include <sstream>

#include "autocast_state.h"
#include "yoloflow/error.h"

namespace yoloflow::yolo11 {

using torch::Tensor;

const ScaleSpec& scale_spec(char scale) {
  static const ScaleSpec specs[] = {{'n', 0.50, 0.25, 1024},
                                    {'s', 0.50, 0.50, 1024},
                                    {'m', 0.50, 1.00, 512},
                                    {'l', 1.00, 1.00, 512},
                                    {'x', 1.00, 1.50, 512}};
  for (const auto& s : specs) {
    if (s.name == scale) return s;
  }
  throw InvalidInput(std::string("yolo11: unknown scale '") + scale + "' (expected n, s, m, l or x)");
}

namespace {

std::int64_t make_divisible(double x, std::int64_t divisor) {
  return static_cast<std::int64_t>(std::ceil(x / static_cast<double>(divisor))) * divisor;
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

std::string list_str(const std::vector<std::int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

std::string py_float(double e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

}  // namespace

Yolo11Net::Yolo11Net(char scale, std::int64_t nc, Task task) : Yolo11Net(scale_spec(scale), nc, task) {}

Yolo11Net::Yolo11Net(const ScaleSpec& sp, std::int64_t nc, Task task) : spec_(sp), nc_(nc) {
  if (nc < 1) throw InvalidInput("yolo11: nc must be >= 1, got " + std::to_string(nc));
  if (!(sp.depth > 0) || !(sp.width > 0) || sp.max_channels < 1) {
    throw InvalidInput("yolo11: depth and width multiples must be > 0 and max_channels >= 1");
  }
  // Ultralytics forces C3k blocks inside every C3k2 for the scales m, l and x, by the letter,
  // whatever the multiples.
  const bool force_c3k = (sp.name == 'm' || sp.name == 'l' || sp.name == 'x');
  // A layer's channels as Ultralytics' parse_model scales them: capped, times the width,
  // rounded up to a multiple of 8; a row whose channel count equals nc is left unscaled (its
  // rule for classifier outputs, which also catches these rows when nc is 64, 128, ... 1024).
  auto scaled = [&](std::int64_t c) {
    return make_divisible(static_cast<double>(std::min(c, sp.max_channels)) * sp.width, 8);
  };
  auto width = [&](std::int64_t c) { return c == nc ? c : scaled(c); };
  auto depth = [&](int n) {
    // Python's round() of n * depth: halves to even (2 * 0.75 = 1.5 gives 2, 2 * 1.25 gives 2).
    return std::max(static_cast<int>(std::nearbyint(n * sp.depth)), 1);
  };
  // C2PSA's attention has (channels / 2) / 64 heads: fewer than 128 channels at layer 10 leave
  // it none (Ultralytics fails there with a division by zero).
  if (width(1024) < 128) {
    throw InvalidInput("yolo11: width " + py_float(sp.width) + " with max_channels " + std::to_string(sp.max_channels) +
                       " gives layer 10 (C2PSA) " + std::to_string(width(1024)) +
                       " channels; its attention needs at least 128 (one head of 64 per half)");
  }

  container_ = register_module("model", std::make_shared<torch::nn::Module>());
  std::vector<std::int64_t> ch;  // output channels per layer
  auto in_ch = [&](int i, int from) -> std::int64_t {
    if (from == -1) return i == 0 ? 3 : ch[i - 1];
    return ch[from];
  };
  auto add = [&](std::vector<int> from, int repeats, std::string module, std::string args,
                 std::shared_ptr<Block> block, std::int64_t c_out) {
    const int i = static_cast<int>(layers_.size());
    container_->register_module(std::to_string(i), block);
    layers_.push_back(std::move(block));
    specs_.push_back({std::move(from), repeats, std::move(module), std::move(args)});
    ch.push_back(c_out);
  };
  auto conv = [&](std::int64_t c, std::int64_t k, std::int64_t s) {
    const int i = static_cast<int>(layers_.size());
    const auto c1 = in_ch(i, -1), c2 = width(c);
    add({-1}, 1, "Conv", list_str({c1, c2, k, s}), std::make_shared<Conv>(c1, c2, k, s), c2);
  };
  auto c3k2 = [&](std::int64_t c, bool c3k, double e, bool e_given) {
    const int i = static_cast<int>(layers_.size());
    const auto c1 = in_ch(i, -1), c2 = width(c);
    const int n = depth(2);
    const bool use_c3k = c3k || force_c3k;
    std::string args = "[" + std::to_string(c1) + ", " + std::to_string(c2) + ", " + std::to_string(n) +
                       ", " + py_bool(use_c3k) + (e_given ? ", " + py_float(e) : "") + "]";
    add({-1}, n, "C3k2", args, std::make_shared<C3k2>(c1, c2, n, use_c3k, e), c2);
  };
  auto upsample = [&]() {
    const int i = static_cast<int>(layers_.size());
    add({-1}, 1, "Upsample", "[None, 2, 'nearest']", std::make_shared<Upsample>(), in_ch(i, -1));
  };
  auto concat = [&](int other) {
    const int i = static_cast<int>(layers_.size());
    add({-1, other}, 1, "Concat", "[1]", std::make_shared<Concat>(), in_ch(i, -1) + ch[other]);
  };

  // Backbone.
  conv(64, 3, 2);            // 0 P1/2
  conv(128, 3, 2);           // 1 P2/4
  c3k2(256, false, 0.25, true);  // 2
  conv(256, 3, 2);           // 3 P3/8
  c3k2(512, false, 0.25, true);  // 4
  conv(512, 3, 2);           // 5 P4/16
  c3k2(512, true, 0.5, false);   // 6
  conv(1024, 3, 2);          // 7 P5/32
  c3k2(1024, true, 0.5, false);  // 8
  {
    const auto c1 = ch.back(), c2 = width(1024);
    add({-1}, 1, "SPPF", list_str({c1, c2, 5}), std::make_shared<SPPF>(c1, c2, 5), c2);  // 9
  }
  {
    const auto c1 = ch.back(), c2 = width(1024);
    const int n = depth(2);
    add({-1}, n, "C2PSA", list_str({c1, c2, n}), std::make_shared<C2PSA>(c1, c2, n), c2);  // 10
  }
  // Neck (Ultralytics' "head" minus Detect).
  upsample();                    // 11
  concat(6);                     // 12
  c3k2(512, false, 0.5, false);  // 13
  upsample();                    // 14
  concat(4);                     // 15
  c3k2(256, false, 0.5, false);  // 16 P3/8
  conv(256, 3, 2);               // 17
  concat(13);                    // 18
  c3k2(512, false, 0.5, false);  // 19 P4/16
  conv(512, 3, 2);               // 20
  concat(10);                    // 21
  c3k2(1024, true, 0.5, false);  // 22 P5/32

  const std::vector<std::int64_t> det_ch{ch[16], ch[19], ch[22]};
  const std::vector<std::int64_t> strides{8, 16, 32};
  if (task == Task::Segment) {
    // 32 masks; the prototype branch's 256 hidden channels scale with the width, as the
    // layers' do (without the nc rule: Ultralytics scales the Segment head's argument alone).
    const std::int64_t masks = 32, protos = scaled(256);
    segment_ = std::make_shared<Segment>(nc, masks, protos, det_ch, strides);
    detect_ = segment_;
    specs_.push_back({{16, 19, 22}, 1, "Segment",
                      "[" + std::to_string(nc) + ", " + std::to_string(masks) + ", " + std::to_string(protos) + ", " +
                          list_str(det_ch) + "]"});
  } else {
    detect_ = std::make_shared<Detect>(nc, det_ch, strides);
    specs_.push_back({{16, 19, 22}, 1, "Detect", "[" + std::to_string(nc) + ", " + list_str(det_ch) + "]"});
  }
  container_->register_module("23", detect_);

  backbone_ = {this, 0, 11, {-1}, {4, 6, 10}};
  neck_ = {this, 11, 23, {4, 6, 10}, {16, 19, 22}};
  backbone_segments_ = {{this, 0, 3, {-1}, {2}}, {this, 3, 5, {2}, {4}}, {this, 5, 7, {4}, {6}}, {this, 7, 11, {6}, {10}}};
  neck_segments_ = {{this, 11, 14, {10, 6}, {13}},
                    {this, 14, 17, {13, 4}, {16}},
                    {this, 17, 20, {16, 13}, {19}},
                    {this, 20, 23, {19, 10}, {22}}};
}

torch::nn::Module& Yolo11Net::layer_module(int index) const {
  if (index == 23) return *detect_;
  return *layers_.at(static_cast<std::size_t>(index));
}

std::int64_t Yolo11Net::layer_params(int index) const {
  std::int64_t n = 0;
  for (const auto& p : layer_module(index).parameters()) n += p.numel();
  return n;
}

std::vector<Tensor> Yolo11Net::run_layers(int begin, int end, const std::vector<int>& in_ids,
                                          const std::vector<Tensor>& in,
                                          const std::vector<int>& wanted) const {
  std::map<int, Tensor> vals;
  for (std::size_t k = 0; k < in_ids.size(); ++k) vals[in_ids[k]] = in[k];
  auto source = [](int layer, int from) { return from == -1 ? layer - 1 : from; };
  auto needed_later = [&](int key, int after) {
    for (int w : wanted) {
      if (w == key) return true;
    }
    for (int j = after; j < end; ++j) {
      for (int f : specs_[static_cast<std::size_t>(j)].from) {
        if (source(j, f) == key) return true;
      }
    }
    return false;
  };
  for (int i = begin; i < end; ++i) {
    const auto& spec = specs_[static_cast<std::size_t>(i)];
    std::vector<Tensor> xs;
    xs.reserve(spec.from.size());
    for (int f : spec.from) xs.push_back(vals.at(source(i, f)));
    vals[i] = xs.size() == 1 ? layers_[static_cast<std::size_t>(i)]->forward(xs[0])
                             : layers_[static_cast<std::size_t>(i)]->forward_many(xs);
    // Drop what no later layer uses, so activations are freed as early as possible.
    for (auto it = vals.begin(); it != vals.end();) {
      it = needed_later(it->first, i + 1) ? std::next(it) : vals.erase(it);
    }
  }
  std::vector<Tensor> out;
  for (int w : wanted) out.push_back(vals.at(w));
  return out;
}

void Yolo11Net::emit(GraphBuilder& g) const {
  const auto& spec = g.spec();
  MapSize size;
  if (!spec.dynamic) size = {spec.height, spec.width};
  std::map<int, GraphValue> values{{-1, g.input()}};
  std::map<int, MapSize> sizes{{-1, size}};
  auto source = [](int layer, int from) { return from == -1 ? layer - 1 : from; };
  for (int i = 0; i < static_cast<int>(layers_.size()); ++i) {
    const auto& s = specs_[static_cast<std::size_t>(i)];
    std::vector<GraphValue> xs;
    for (int f : s.from) xs.push_back(values.at(source(i, f)));
    MapSize in = sizes.at(source(i, s.from[0]));
    const auto& layer = *layers_[static_cast<std::size_t>(i)];
    const std::string name = "model." + std::to_string(i);
    values[i] = xs.size() == 1 ? layer.emit(g, xs[0], name, in) : layer.emit_many(g, xs, name, in);
    // The only layers that change the map size: strided Convs and the upsamples.
    MapSize out = in;
    if (const auto* c = dynamic_cast<const Conv*>(&layer); c && in.h > 0) {
      const auto st = c->conv->options.stride()->at(0);
      out = {in.h / st, in.w / st};
    } else if (dynamic_cast<const Upsample*>(&layer) && in.h > 0) {
      out = {in.h * 2, in.w * 2};
    }
    sizes[i] = out;
  }
  const std::vector<int> levels = specs_.back().from;
  std::vector<GraphValue> xs;
  std::vector<MapSize> level_sizes;
  for (int l : levels) {
    xs.push_back(values.at(l));
    level_sizes.push_back(sizes.at(l));
  }
  if (segment_) {
    const auto [detections, prototypes] = segment_->emit_segment(g, xs, "model.23", level_sizes);
    g.output(detections);
    g.image_output("prototypes", prototypes);
  } else {
    g.output(detect_->emit(g, xs, "model.23", level_sizes));
  }
}

std::vector<Tensor> Stage::run(const std::vector<Tensor>& in) const {
  return net->run_layers(begin, end, inputs, in, outputs);
}

std::vector<Tensor> Stage::bn_buffers() const {
  std::vector<Tensor> out;
  for (int i = begin; i < end; ++i) {
    for (const auto& b : net->layer_module(i).buffers()) out.push_back(b);
  }
  return out;
}

ModelOutput Yolo11Net::forward(const Tensor& images) {
  // Checkpointing only matters when a graph is recorded.
  const bool recording = is_training() && torch::GradMode::is_enabled();
  auto feats = (recording && ckpt_backbone_) ? checkpoint_segments(backbone_segments_, {{-1, images}}, backbone_.outputs)
                                             : backbone_.run({images});
  auto levels = (recording && ckpt_neck_)
                    ? checkpoint_segments(neck_segments_, {{4, feats[0]}, {6, feats[1]}, {10, feats[2]}}, neck_.outputs)
                    : neck_.run(feats);
  ModelOutput out;
  out.levels = detect_->forward(levels);
  if (segment_) {
    out.extras["mask_coefficients"] = segment_->mask_coefficients(levels);
    out.extras["prototypes"] = segment_->prototypes(levels[0]);
  }
  return out;
}

// ---- Activation checkpointing -------------------------------------------------------

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Reentrant checkpoint: forward runs the stage without recording a graph and keeps only
// its inputs; backward reruns the stage with grad enabled (same autocast state as the
// forward) and backpropagates through the rerun, which accumulates parameter gradients
// exactly as an ordinary backward would. Batch-norm running statistics are saved before
// the rerun and restored after it, so they are updated once per step, not twice.
class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const Stage* stage, at::TensorList inputs,
                               const Tensor& anchor) {
    ctx->saved_data["stage"] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(stage));
    c10::List<bool> req;
    for (const auto& x : inputs) req.push_back(x.requires_grad());
    ctx->saved_data["requires_grad"] = req;
    ctx->saved_data["autocast"] = AutocastState::capture().to_ivalue();
    ctx->save_for_backward(inputs.vec());
    return stage->run(inputs.vec());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto* stage =
        reinterpret_cast<const Stage*>(static_cast<std::intptr_t>(ctx->saved_data["stage"].toInt()));
    const auto req = ctx->saved_data["requires_grad"].toBoolList();
    const auto saved = ctx->get_saved_variables();
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < saved.size(); ++i) {
      inputs.push_back(saved[i].detach().requires_grad_(req.get(i)));
    }
    std::vector<Tensor> outputs;
    {
      const auto bn = stage->bn_buffers();
      std::vector<Tensor> bn_saved;
      bn_saved.reserve(bn.size());
      for (const auto& b : bn) bn_saved.push_back(b.clone());
      {
        torch::AutoGradMode grad_on(true);
        AutocastGuard autocast(AutocastState::from_ivalue(ctx->saved_data["autocast"]));
        outputs = stage->run(inputs);
      }
      std::vector<Tensor> outs, gs;
      for (std::size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
        if (grads[i].defined() && outputs[i].requires_grad()) {
          outs.push_back(outputs[i]);
          gs.push_back(grads[i]);
        }
      }
      if (!outs.empty()) torch::autograd::backward(outs, gs);
      // Restored only now: batch norm's backward checks that its saved running statistics
      // were not modified in place before it ran.
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < bn.size(); ++i) bn[i].copy_(bn_saved[i]);
    }
    variable_list result;
    result.emplace_back();  // stage pointer
    for (auto& x : inputs) result.push_back(x.requires_grad() ? x.grad() : Tensor());
    result.emplace_back();  // anchor
    return result;
  }
};

}  // namespace

std::vector<Tensor> checkpoint_stage(const Stage& stage, const std::vector<Tensor>& in) {
  // The anchor requires grad so that the outputs do too even when no input does (the
  // image): otherwise backward would never reach the stage's parameters.
  static thread_local Tensor anchor = torch::zeros({1}).requires_grad_(true);
  return CheckpointFunction::apply(&stage, at::TensorList(in), anchor);
}

std::vector<Tensor> checkpoint_segments(const std::vector<Stage>& segments, std::map<int, Tensor> values,
                                        const std::vector<int>& wanted) {
  for (const auto& segment : segments) {
    std::vector<Tensor> in;
    for (int id : segment.inputs) in.push_back(values.at(id));
    auto out = checkpoint_stage(segment, in);
    for (std::size_t k = 0; k < segment.outputs.size(); ++k) values[segment.outputs[k]] = out[k];
  }
  std::vector<Tensor> result;
  for (int id : wanted) result.push_back(values.at(id));
  return result;
}

}  // namespace yoloflow::yolo11
