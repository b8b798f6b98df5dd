// The `yolo11` model plugin: YOLO11 n/s/m/l/x detection and segmentation (-seg) models as
// released by Ultralytics (same layers, parameter counts and state-dict names), with
// channels_last and per-stage activation checkpointing.
#include <cstdio>
#include <memory>
#include <sstream>

#include "yolo11_net.h"
#include "yoloflow/error.h"
#include "yoloflow/head_geometry.h"
#include "yoloflow/log.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

namespace yoloflow::yolo11 {
namespace {

using torch::Tensor;

bool same_multiples(const ScaleSpec& a, const ScaleSpec& b) {
  return a.name == b.name && a.depth == b.depth && a.width == b.width && a.max_channels == b.max_channels;
}

class Yolo11Model final : public Model {
 public:
  void configure(const Params& p, const StageContext& context) override {
    const std::string scale = p.get_string("scale");
    // 0 = automatic: the train sink fills in its dataset's class count; built alone, COCO's 80.
    const auto nc = p.get_int("nc") > 0 ? p.get_int("nc") : 80;
    if (scale.size() != 1) throw InvalidInput("yolo11: scale must be one of n, s, m, l, x");
    // The scale's multiples, or a model yaml's own (0: the scale's).
    ScaleSpec spec = scale_spec(scale[0]);
    if (p.get_float("depth_multiple") > 0) spec.depth = p.get_float("depth_multiple");
    if (p.get_float("width_multiple") > 0) spec.width = p.get_float("width_multiple");
    if (p.get_int("max_channels") > 0) spec.max_channels = p.get_int("max_channels");
    const Task task = p.get_string("task") == "segment" ? Task::Segment : Task::Detect;
    // Rebuild only when the architecture changes: configure() runs again at epoch boundaries.
    if (!net_ || !same_multiples(net_->multiples(), spec) || net_->nc() != nc || net_->task() != task) {
      net_ = std::make_shared<Yolo11Net>(spec, nc, task);
      channels_last_ = false;
    }
    // "auto": on for the CUDA device the model is made for (the train sink's), before the EMA
    // and the optimizer copy or hold the weights.
    set_channels_last(p.is_special("channels_last", "auto") ? context.device.rfind("cuda", 0) == 0
                                                            : p.get_bool("channels_last"));
    set_activation_checkpointing(p.get_bool("checkpoint_backbone"), p.get_bool("checkpoint_neck"));
  }

  torch::nn::Module& module() override { return *require_net(); }

  HeadDescription head() const override {
    const auto& net = *require_net();
    HeadDescription h;
    h.task = "detect";
    h.nc = static_cast<int>(net.nc());
    h.reg_max = 16;
    h.strides = {8, 16, 32};
    if (const auto seg = net.segment()) {
      h.task = "segment";
      h.outputs = {{"mask_coefficients", true, seg->masks,
                    "per anchor, the weights of the prototype masks that make its instance's mask"},
                   {"prototypes", false, seg->masks,
                    "per image, (B, " + std::to_string(seg->masks) + ", H/4, W/4) prototype masks (logits once weighted)"}};
    }
    return h;
  }

  // Ultralytics' names: yolo11n, yolo11n-seg; other multiples than the scale's after it, as a
  // model yaml's scales row writes them: yolo11n[0.33,0.25,1024] (the host reads and writes
  // that form in runtime/pipeline/architecture_name.h; a plugin does not link the host).
  std::string architecture() const override {
    const auto& net = *require_net();
    std::string name = std::string("yolo11") + net.scale() + (net.task() == Task::Segment ? "-seg" : "");
    const ScaleSpec& m = net.multiples();
    if (!same_multiples(m, scale_spec(m.name))) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "[%.10g,%.10g,%lld]", m.depth, m.width, static_cast<long long>(m.max_channels));
      name += buf;
    }
    return name;
  }

  ModelOutput forward_train(const Tensor& images) override {
    auto& net = *require_net();
    if (images.dim() != 4 || images.size(1) != 3) {
      std::ostringstream os;
      os << "yolo11: expected images of shape (B, 3, H, W), got " << images.sizes();
      throw InvalidInput(os.str());
    }
    const auto h = images.size(2), w = images.size(3);
    if (h % 32 != 0 || w % 32 != 0 || h == 0 || w == 0) {
      throw InvalidInput("yolo11: image size " + std::to_string(h) + "x" + std::to_string(w) +
                         " is not a multiple of 32, the largest stride; letterbox or pad images to a "
                         "multiple of 32 (e.g. imgsz 640)");
    }
    const auto x = channels_last_ ? images.contiguous(torch::MemoryFormat::ChannelsLast) : images;
    return net.forward(x);
  }

  Predictions decode(const ModelOutput& output) override {
    const auto& levels = output.levels;
    auto& net = *require_net();
    const auto& det = *net.detect();
    if (levels.size() != det.strides.size()) {
      throw InvalidInput("yolo11: decode expects " + std::to_string(det.strides.size()) + " levels, got " +
                         std::to_string(levels.size()));
    }
    const auto reg = det.reg_max, nc = det.nc, no = 4 * reg + nc;
    const auto B = levels[0].size(0);
    std::vector<Tensor> flat, anchors, strides;
    for (std::size_t i = 0; i < levels.size(); ++i) {
      // Decoding in fp32: bf16 cannot hold pixel coordinates at 640 to a pixel.
      const auto l = levels[i].to(torch::kFloat);
      const auto H = l.size(2), W = l.size(3);
      if (l.size(1) != no) {
        throw InvalidInput("yolo11: level " + std::to_string(i) + " has " + std::to_string(l.size(1)) +
                           " channels, expected " + std::to_string(no));
      }
      flat.push_back(l.reshape({B, no, H * W}));
      const auto opts = l.options();
      anchors.push_back(head_geometry::cell_centres(H, W, opts).t());  // (2, HW)
      strides.push_back(torch::full({1, H * W}, static_cast<double>(det.strides[i]), opts));
    }
    const auto x = torch::cat(flat, 2);  // (B, no, A)
    const auto A = x.size(2);
    const auto anc = torch::cat(anchors, 1).unsqueeze(0);   // (1, 2, A)
    const auto str = torch::cat(strides, 1).unsqueeze(0);   // (1, 1, A)
    // DFL: softmax over the bins of each side, then the fixed integral conv (weights 0..15).
    const auto box = x.slice(1, 0, 4 * reg).reshape({B, 4, reg, A}).transpose(2, 1).softmax(1);
    const auto dfl_w = det.dfl->conv->weight.to(box.dtype()).to(box.device());
    const auto dist = torch::conv2d(box, dfl_w).reshape({B, 4, A});
    // (B, A, 4) xyxy in input pixels.
    const auto xyxy = head_geometry::distances_to_boxes(dist.transpose(1, 2), anc.transpose(1, 2)) * str.transpose(1, 2);
    Predictions d;
    d.boxes = xyxy.contiguous();
    d.scores = x.slice(1, 4 * reg, no).sigmoid().transpose(1, 2).contiguous();
    if (net.segment()) {
      // Per anchor (B, A, 32) as the boxes; the prototypes as they are, in fp32 as the boxes.
      const auto coefficients = output.extra("mask_coefficients");
      if (coefficients.dim() != 3 || coefficients.size(2) != A) {
        std::ostringstream os;
        os << "yolo11: decode expects mask_coefficients of shape (B, 32, " << A << "), got " << coefficients.sizes();
        throw InvalidInput(os.str());
      }
      d.extras["mask_coefficients"] = coefficients.to(torch::kFloat).transpose(1, 2).contiguous();
      d.extras["prototypes"] = output.extra("prototypes").to(torch::kFloat);
    }
    return d;
  }

  std::vector<LayerRow> layers() const override {
    const auto& net = *require_net();
    std::vector<LayerRow> rows;
    for (std::size_t i = 0; i < net.specs().size(); ++i) {
      const auto& s = net.specs()[i];
      LayerRow r;
      r.index = static_cast<int>(i);
      if (s.from.size() == 1) {
        r.from = std::to_string(s.from[0]);
      } else {
        r.from = "[";
        for (std::size_t k = 0; k < s.from.size(); ++k) r.from += (k ? ", " : "") + std::to_string(s.from[k]);
        r.from += "]";
      }
      r.repeats = s.repeats;
      r.module = s.module;
      r.args = s.args;
      r.params = net.layer_params(static_cast<int>(i));
      rows.push_back(std::move(r));
    }
    return rows;
  }

  void set_activation_checkpointing(bool backbone, bool neck) override {
    require_net()->set_checkpointing(backbone, neck);
  }

  void export_graph(GraphBuilder& g) override {
    const auto& spec = g.spec();
    if (!spec.dynamic && (spec.height % 32 != 0 || spec.width % 32 != 0 || spec.height <= 0 || spec.width <= 0)) {
      throw InvalidInput("yolo11: export size " + std::to_string(spec.height) + "x" + std::to_string(spec.width) +
                         " is not a multiple of 32, the largest stride");
    }
    require_net()->emit(g);
  }

 private:
  const std::shared_ptr<Yolo11Net>& require_net() const {
    if (!net_) throw Error("yolo11: the model is used before configure()");
    return net_;
  }

  // Converts 4-D parameters and buffers in place (same tensors, new strides), so optimizers
  // holding them keep working.
  void set_channels_last(bool on) {
    if (on == channels_last_) return;
    const auto fmt = on ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous;
    torch::NoGradGuard no_grad;
    for (auto& p : net_->parameters()) {
      if (p.dim() == 4) p.set_data(p.data().contiguous(fmt));
    }
    for (auto& b : net_->buffers()) {
      if (b.dim() == 4) b.set_data(b.data().contiguous(fmt));
    }
    channels_last_ = on;
  }

  std::shared_ptr<Yolo11Net> net_;
  bool channels_last_ = false;
};

Schema yolo11_schema() {
  Schema s;
  s.add_enum("scale", {"n", "s", "m", "l", "x"}, "n")
      .fixed()
      .doc("Model scale: n 2.6M, s 9.5M, m 20.1M, l 25.4M, x 57.0M parameters at 80 classes.");
  s.add_enum("task", {"detect", "segment"}, "detect")
      .fixed()
      .doc("The head: detect (boxes and classes), segment (YOLO11-seg: also 32 mask coefficients per "
           "detection and prototype masks at 1/4 of the input). The architecture word yolo11n-seg is "
           "scale n, task segment.");
  s.add_float("depth_multiple", 0.0)
      .range(0.0, 4.0)
      .fixed()
      .doc("Repeats of the C3k2 and C2PSA blocks: max(round(2 x depth_multiple), 1), as a model yaml's scales row "
           "gives them ([depth, width, max_channels]); 0 = the scale's (n 0.5, s 0.5, m 0.5, l 1, x 1). A model "
           "yaml with edited scales sets it (model=my-yolo11.yaml).");
  s.add_float("width_multiple", 0.0)
      .range(0.0, 4.0)
      .fixed()
      .doc("Channels of each layer: its yaml count, capped at max_channels, times width_multiple, rounded up to a "
           "multiple of 8; 0 = the scale's (n 0.25, s 0.5, m 1, l 1, x 1.5).");
  s.add_int("max_channels", 0)
      .range(0, 1000000)
      .fixed()
      .doc("The cap on a layer's yaml channel count before the width multiple; 0 = the scale's (n and s 1024, "
           "m, l and x 512).");
  s.add_int("nc", 0).range(0, 100000).fixed().doc(
      "Number of classes (the detection head's outputs); 0 = automatic: the training data's class count "
      "in the train sink, 80 (COCO) when the model is built alone.");
  s.add("channels_last", ParamType::Bool)
      .default_value("auto")
      .accepts("auto")
      .doc("Store conv weights and feed inputs in channels_last (NHWC) memory format; faster with "
           "cuDNN on tensor cores (bench/gpu/shipped-vs-ultralytics.sh shipped against "
           "shipped-no-channels_last). \"auto\": on when the model is made for a CUDA device "
           "(training on CUDA), off elsewhere.");
  s.add_bool("checkpoint_backbone", false)
      .doc("Recompute the backbone (layers 0-10) in backward instead of storing its activations: "
           "less memory, same results.");
  s.add_bool("checkpoint_neck", false)
      .doc("Recompute the neck (layers 11-22) in backward instead of storing its activations.");
  return s;
}

void register_yolo11(Registrar& r) {
  r.add_model<Yolo11Model>("yolo11", yolo11_schema(),
                           "YOLO11 detection and segmentation models (scales n/s/m/l/x; yolo11n, "
                           "yolo11n-seg) with Ultralytics' layers and state-dict names; weights move "
                           "to and from PyTorch.");
}

}  // namespace
}  // namespace yoloflow::yolo11

YOLOFLOW_PLUGIN("yolo11", "1.0.0", yoloflow::yolo11::register_yolo11)
