// ONNX NonMaxSuppression gives selected (batch, class, anchor) triples in no fixed order and
// in one flat list; the rest of this graph turns them into a per-image, score-sorted,
// fixed-size table.
#include "training/export/onnx_nms.h"

namespace yoloflow::core {

namespace {

void set_int(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

}  // namespace

GraphValue append_nms(OnnxGraphBuilder& g, const GraphValue& pred_in, std::int64_t nc, const NmsSettings& s) {
  const int f32 = onnx::TensorProto::FLOAT;
  const bool half = g.float_type() != f32;
  const auto pred = half ? g.cast(pred_in, f32) : pred_in;
  auto column = [&](const GraphValue& x, std::int64_t index) {
    return g.op1("Gather", {x, g.constant_i64({index})}, [&](onnx::NodeProto& n) { set_int(n, "axis", 1); });
  };

  // Boxes (B, A, 4) as x1, y1, x2, y2; scores (B, nc, A) keeping each anchor's best class only.
  const auto centre = g.slice(pred, 1, 0, 2), wh = g.slice(pred, 1, 2, 4);
  const auto half_wh = g.mul(wh, g.constant_f32({0.5f}));
  const auto boxes = g.transpose(g.concat({g.sub(centre, half_wh), g.add(centre, half_wh)}, 1), {0, 2, 1});
  const auto scores = g.slice(pred, 1, 4, 4 + nc);
  const auto best = g.op1("ReduceMax", {scores}, [&](onnx::NodeProto& n) {
    auto* a = n.add_attribute();
    a->set_name("axes");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
    set_int(n, "keepdims", 1);
  });
  const auto only_best = g.mul(scores, g.cast(g.op1("Equal", {scores, best}), f32));

  // (K, 3) rows batch, class, anchor.
  const auto selected = g.op1("NonMaxSuppression",
                              {boxes, only_best, g.constant_i64({s.max_det}), g.constant_f32({s.iou}),
                               g.constant_f32({s.conf})});
  const auto batch_of = column(selected, 0), class_of = column(selected, 1), anchor_of = column(selected, 2);
  const auto picked_boxes = g.op1("GatherND", {boxes, g.concat({batch_of, anchor_of}, 1)});  // (K, 4)
  const auto picked_scores = g.reshape(g.op1("GatherND", {only_best, selected}), {-1, 1});  // (K, 1)
  const auto rows = g.concat({picked_boxes, picked_scores, g.cast(class_of, f32)}, 1);       // (K, 6)

  // Per image: scores of its own rows, -1 elsewhere; top max_det of them, best first.
  const auto batch = g.shape_dim(g.shape_of(pred), 0);
  const auto images = g.reshape(g.op1("Range", {g.scalar_i64(0), g.reshape(batch, {}), g.scalar_i64(1)}), {-1, 1});
  const auto mine = g.op1("Equal", {images, g.reshape(batch_of, {1, -1})});  // (B, K)
  const auto ranked = g.op1("Where", {mine, g.reshape(picked_scores, {1, -1}), g.constant_f32({-1.0f})});
  const auto count = g.shape_dim(g.shape_of(selected), 0);
  const auto k = g.op1("Min", {count, g.constant_i64({s.max_det})});
  const auto top = g.node("TopK", {ranked, k}, 2, [&](onnx::NodeProto& n) {
    set_int(n, "axis", 1);
    set_int(n, "largest", 1);
    set_int(n, "sorted", 1);
  });
  const auto table = g.op1("Gather", {rows, top[1]}, [&](onnx::NodeProto& n) { set_int(n, "axis", 0); });
  const auto valid = g.reshape(g.cast(g.op1("Greater", {top[0], g.constant_f32({-0.5f})}), f32), {0, 0, 1});
  const auto kept = g.mul(table, valid);  // (B, k, 6), rows of other images zeroed
  const auto missing = g.sub(g.constant_i64({s.max_det}), k);
  const auto zero = g.constant_i64({0});
  const auto pads = g.concat({zero, zero, zero, zero, missing, zero}, 0);
  const auto padded = g.op1("Pad", {kept, pads});
  return half ? g.cast(padded, g.float_type()) : padded;
}

}  // namespace yoloflow::core
