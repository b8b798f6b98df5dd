#include "mask_loss.h"

#include <algorithm>
#include <string>
#include <utility>

#include "yoloflow/error.h"

#ifdef YOLOFLOW_SEG_MASK_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "mask_kernels.h"
#endif

namespace yoloflow::yolo11_seg_loss {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Where a box keeps mask pixels, as two separable masks: pixel (r, c) counts when
// x1 <= c < x2 and y1 <= r < y2, pixel indices against the box's corners in mask pixels
// (Ultralytics' crop_mask on many masks, the path training takes). boxes (B, n, 4) ->
// rows (B, n, h), cols (B, n, w), float; `lines` holds 0 .. max(h, w) - 1 once for every chunk.
std::pair<Tensor, Tensor> crop_lines(const Tensor& boxes, const Tensor& lines, std::int64_t h, std::int64_t w) {
  const auto cols = lines.narrow(0, 0, w).view({1, 1, w});
  const auto rows = lines.narrow(0, 0, h).view({1, 1, h});
  const auto x1 = boxes.select(2, 0).unsqueeze(-1), y1 = boxes.select(2, 1).unsqueeze(-1);
  const auto x2 = boxes.select(2, 2).unsqueeze(-1), y2 = boxes.select(2, 3).unsqueeze(-1);
  return {rows.ge(y1).logical_and(rows.lt(y2)).to(torch::kFloat), cols.ge(x1).logical_and(cols.lt(x2)).to(torch::kFloat)};
}

// The boxes of slots whose rows are `rows` (B, n): gathered from gt_boxes (B, rows + 1, 4).
Tensor slot_boxes(const Tensor& gt_boxes, const Tensor& rows) {
  return gt_boxes.gather(1, rows.unsqueeze(-1).expand({rows.size(0), rows.size(1), 4}));
}

#ifdef YOLOFLOW_SEG_MASK_KERNELS
// The stream LibTorch runs on for the tensors' device (the one a captured step records).
CUstream_st* current_stream(const torch::Tensor& on) { return c10::cuda::getCurrentCUDAStream(on.device().index()).stream(); }

void check_launch(const char* what) {
  const std::string e = kernels::last_error();
  if (!e.empty()) throw Error(std::string("yolo11_segmentation: the mask kernel (") + what + ") failed: " + e);
}
#endif

// Rows [begin, begin + m) of every image: their target mask inside their box, (B, m, hw) float.
Tensor cropped_targets(const Tensor& masks, bool overlap, const Tensor& gt_boxes, const Tensor& lines, std::int64_t begin,
                       std::int64_t m, std::int64_t h, std::int64_t w) {
  const auto B = gt_boxes.size(0);
  Tensor target;
  if (overlap) {
    const auto ids = torch::arange(begin + 1, begin + m + 1, masks.options()).view({1, m, 1});
    target = masks.reshape({B, 1, h * w}).eq(ids);
  } else {
    target = masks.narrow(1, begin, m).reshape({B, m, h * w}).to(torch::kBool);
  }
  const auto [rows, cols] = crop_lines(gt_boxes.narrow(1, begin, m), lines, h, w);
  return target.to(torch::kFloat).view({B, m, h, w}).mul_(rows.unsqueeze(-1)).mul_(cols.unsqueeze(-2)).view({B, m, h * w});
}

// Per slot s (an anchor's predicted mask x_s = coefficients_s . prototypes), with t its GT's
// mask and crop its GT's box:
//   sum over crop of BCE(x_s, t) = sum over crop of softplus(x_s) - coefficients_s . Q_g,
//   Q_g = sum over crop of t x prototypes (one vector per GT, not per slot),
// so the per-slot work is one product, one softplus and one separable crop sum, and everything
// that involves the targets is done once per GT (a GT has up to topk slots).
//
// Inputs: coefficients (B, S, C), prototypes (B, C, h, w) with gradient; the rest constants:
// weights (B, S) (validity / area / pixels / positives), gt (B, S) each slot's row (rows of
// invalid slots: `rows`, a row of no pixels), gt_boxes (B, rows + 1, 4) each row's box in mask
// pixels, masks: per image (B, h, w) when `overlap`, else per row (B, rows, h, w); `chunk`:
// slots (or rows) computed at once.
class MaskLossFunction : public torch::autograd::Function<MaskLossFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& coefficients, const Tensor& prototypes, const Tensor& weights,
                        const Tensor& gt, const Tensor& gt_boxes, const Tensor& masks, bool overlap, std::int64_t chunk,
                        bool use_kernels) {
    torch::NoGradGuard no_grad;
    const auto B = prototypes.size(0), C = prototypes.size(1), h = prototypes.size(2), w = prototypes.size(3);
    const auto S = coefficients.size(1), rows = gt_boxes.size(1) - 1;
    const auto proto = prototypes.reshape({B, C, h * w});
    const auto proto_t = proto.transpose(1, 2);  // (B, hw, C)
    const auto lines = torch::arange(std::max(h, w), coefficients.options());
    // Q (B, rows + 1, C), the last row (invalid slots) zero.
    auto q = torch::zeros({B, rows + 1, C}, coefficients.options());
    for (std::int64_t begin = 0; begin < rows; begin += chunk) {
      const auto m = std::min(chunk, rows - begin);
      q.narrow(1, begin, m).copy_(torch::bmm(cropped_targets(masks, overlap, gt_boxes, lines, begin, m, h, w), proto_t));
    }
    const auto q_slots = q.gather(1, gt.unsqueeze(-1).expand({B, S, C}));
    Tensor total = -(coefficients * q_slots).sum(-1).mul(weights).sum();
#ifdef YOLOFLOW_SEG_MASK_KERNELS
    if (use_kernels) {
      const c10::cuda::CUDAGuard on_device(prototypes.device());  // kernels launch on the current device
      const auto coef = coefficients.contiguous(), protos = prototypes.contiguous(), w8 = weights.contiguous();
      const auto boxes = slot_boxes(gt_boxes, gt).contiguous();
      auto per_slot = torch::empty({B, S}, coefficients.options());
      kernels::softplus_crop_forward(coef.data_ptr<float>(), protos.data_ptr<float>(), boxes.data_ptr<float>(),
                                     w8.data_ptr<float>(), per_slot.data_ptr<float>(), static_cast<int>(B),
                                     static_cast<int>(S), static_cast<int>(h), static_cast<int>(w), current_stream(prototypes));
      check_launch("forward");
      total = total + (per_slot * weights).sum();
    }
#endif
    for (std::int64_t begin = 0; begin < S && !use_kernels; begin += chunk) {
      const auto n = std::min(chunk, S - begin);
      const auto [r, c] = crop_lines(slot_boxes(gt_boxes, gt.narrow(1, begin, n)), lines, h, w);
      auto x = torch::bmm(coefficients.narrow(1, begin, n), proto);
      at::softplus_out(x, x, 1, 20);  // in place: one chunk of masks, not two
      x = x.view({B * n, h, w});
      const auto inner = torch::bmm(x, c.reshape({B * n, w, 1})).view({B, n, h});  // sum over each row's crop
      total = total + ((inner * r).sum(-1) * weights.narrow(1, begin, n)).sum();
    }
    ctx->save_for_backward({coefficients, prototypes, weights, gt, gt_boxes, masks, q_slots});
    ctx->saved_data["overlap"] = overlap;
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["kernels"] = use_kernels;
    return total;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &coefficients = saved[0], &prototypes = saved[1], &weights = saved[2], &gt = saved[3],
                 &gt_boxes = saved[4], &masks = saved[5], &q_slots = saved[6];
    const bool overlap = ctx->saved_data["overlap"].toBool();
    const auto chunk = ctx->saved_data["chunk"].toInt();
    const bool use_kernels = ctx->saved_data["kernels"].toBool();
    const auto B = prototypes.size(0), C = prototypes.size(1), h = prototypes.size(2), w = prototypes.size(3);
    const auto S = coefficients.size(1), rows = gt_boxes.size(1) - 1;
    const auto proto = prototypes.reshape({B, C, h * w});
    const auto proto_t = proto.transpose(1, 2);  // (B, hw, C)
    const auto scaled = weights * grads[0];      // (B, S): each slot's weight times the total's gradient
    const auto lines = torch::arange(std::max(h, w), coefficients.options());
    // The linear term: -weight_s (c_s . Q_g) gives -weight_s Q_g to c_s, and to the prototypes
    // -sum over GTs of D_g x (t crop)_g with D_g the sum of its slots' weight_s c_s.
    auto grad_coefficients = -(q_slots * scaled.unsqueeze(-1));
    auto d = torch::zeros({B, rows + 1, C}, coefficients.options());
    d.scatter_add_(1, gt.unsqueeze(-1).expand({B, S, C}), coefficients * scaled.unsqueeze(-1));
    auto grad_proto = torch::zeros_like(proto);
    for (std::int64_t begin = 0; begin < rows; begin += chunk) {
      const auto m = std::min(chunk, rows - begin);
      grad_proto.baddbmm_(d.narrow(1, begin, m).transpose(1, 2), cropped_targets(masks, overlap, gt_boxes, lines, begin, m, h, w),
                          1.0, -1.0);
    }
    // The softplus term: weight_s crop sigmoid(x_s) per pixel.
#ifdef YOLOFLOW_SEG_MASK_KERNELS
    if (use_kernels) {
      const c10::cuda::CUDAGuard on_device(prototypes.device());
      const auto coef = coefficients.contiguous(), protos = prototypes.contiguous(), gains = scaled.contiguous();
      const auto boxes = slot_boxes(gt_boxes, gt).contiguous();
      grad_coefficients = grad_coefficients.contiguous();
      grad_proto = grad_proto.contiguous();  // zeros_like keeps channels-last prototypes' strides; the kernel writes (B, C, h, w)
      const int b = static_cast<int>(B), s = static_cast<int>(S), mh = static_cast<int>(h), mw = static_cast<int>(w);
      kernels::softplus_crop_backward_coefficients(coef.data_ptr<float>(), protos.data_ptr<float>(), boxes.data_ptr<float>(),
                                                   gains.data_ptr<float>(), grad_coefficients.data_ptr<float>(), b, s, mh,
                                                   mw, current_stream(prototypes));
      check_launch("coefficient gradient");
      kernels::softplus_crop_backward_prototypes(coef.data_ptr<float>(), protos.data_ptr<float>(), boxes.data_ptr<float>(),
                                                 gains.data_ptr<float>(), grad_proto.data_ptr<float>(), b, s, mh, mw,
                                                 current_stream(prototypes));
      check_launch("prototype gradient");
    }
#endif
    for (std::int64_t begin = 0; begin < S && !use_kernels; begin += chunk) {
      const auto n = std::min(chunk, S - begin);
      const auto [r, c] = crop_lines(slot_boxes(gt_boxes, gt.narrow(1, begin, n)), lines, h, w);
      const auto cn = coefficients.narrow(1, begin, n);
      const auto g = torch::bmm(cn, proto)
                         .sigmoid_()
                         .view({B, n, h, w})
                         .mul_((r * scaled.narrow(1, begin, n).unsqueeze(-1)).unsqueeze(-1))
                         .mul_(c.unsqueeze(-2))
                         .view({B, n, h * w});
      grad_coefficients.narrow(1, begin, n).add_(torch::bmm(g, proto_t));
      grad_proto.baddbmm_(cn.transpose(1, 2), g);  // in place: no prototype-sized temporary per chunk
    }
    return {grad_coefficients, grad_proto.reshape(prototypes.sizes()), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor(), Tensor()};
  }
};

}  // namespace

bool mask_kernels_built() {
#ifdef YOLOFLOW_SEG_MASK_KERNELS
  return true;
#else
  return false;
#endif
}

Tensor mask_loss(const MaskLossInputs& in, const MaskTargets& targets, std::int64_t chunk_elements, MaskBackend backend) {
  const Tensor& layout = targets.overlap.defined() ? targets.overlap : targets.separate;
  if (!layout.defined()) throw Error("yolo11_segmentation: the batch has no mask targets");
  const auto B = in.coefficients.size(0), A = in.coefficients.size(1);
  const auto mh = layout.size(-2), mw = layout.size(-1);
  Tensor proto = in.prototypes.to(torch::kFloat);
  if (proto.size(2) != mh || proto.size(3) != mw) {
    // Masks at another resolution than the prototypes (mask_ratio other than 4): the prototypes
    // are resized to the masks, as Ultralytics does.
    proto = torch::nn::functional::interpolate(
        proto, torch::nn::functional::InterpolateFuncOptions()
                   .size(std::vector<std::int64_t>{mh, mw})
                   .mode(torch::kBilinear)
                   .align_corners(false));
  }
  // Positives first, in anchor order, into `slots` per image (every positive fits: each GT keeps
  // at most topk anchors).
  const auto S = std::max<std::int64_t>(1, std::min(A, in.slots));
  const auto order = std::get<1>(in.fg_mask.to(torch::kInt).sort(/*stable=*/true, /*dim=*/1, /*descending=*/true));
  const auto idx = order.narrow(1, 0, S);                          // (B, S)
  const auto valid = in.fg_mask.gather(1, idx).to(torch::kFloat);  // (B, S)
  const auto coefficients =
      in.coefficients.to(torch::kFloat).gather(1, idx.unsqueeze(-1).expand({B, S, in.coefficients.size(2)}));
  const auto gt = in.gt_index.gather(1, idx);
  const auto box = in.gt_boxes.to(torch::kFloat).gather(1, idx.unsqueeze(-1).expand({B, S, 4}));  // pixels
  // Scalars only, no tensor made from host values: inside a captured CUDA step a host-to-device
  // copy is not allowed.
  const auto x1 = box.select(-1, 0) / in.img_w, y1 = box.select(-1, 1) / in.img_h;
  const auto x2 = box.select(-1, 2) / in.img_w, y2 = box.select(-1, 3) / in.img_h;
  const auto area = (x2 - x1) * (y2 - y1);
  const auto mask_boxes = torch::stack({x1 * static_cast<double>(mw), y1 * static_cast<double>(mh),
                                        x2 * static_cast<double>(mw), y2 * static_cast<double>(mh)},
                                       -1);
  // Per positive: mean over the mask's pixels, divided by its box's area; over all positives.
  const auto positives = in.fg_mask.sum().to(torch::kFloat).clamp_min(1);
  const auto weights = torch::where(valid > 0, valid / area.clamp_min(1e-12), torch::zeros_like(valid)) /
                       static_cast<double>(mh * mw) / positives;
  // Each GT row's box (rows + 1: the last, of no pixels, for the invalid slots), from its slots:
  // every slot of a GT holds that GT's box.
  const auto rows = in.rows;
  const auto slot_rows = torch::where(valid > 0, gt, torch::full_like(gt, rows));
  auto gt_boxes = torch::zeros({B, rows + 1, 4}, mask_boxes.options());
  gt_boxes.scatter_(1, slot_rows.unsqueeze(-1).expand({B, S, 4}), mask_boxes.detach());
  gt_boxes.narrow(1, rows, 1).zero_();
  const auto chunk = std::max<std::int64_t>(1, chunk_elements / std::max<std::int64_t>(1, B * mh * mw));
  const bool use_kernels = backend == MaskBackend::kernels && mask_kernels_built() && proto.is_cuda() &&
                           coefficients.size(2) == 32;
  return MaskLossFunction::apply(coefficients, proto, weights.detach(), slot_rows, gt_boxes, layout.to(proto.device()),
                                 targets.overlap.defined(), chunk, use_kernels);
}

}  // namespace yoloflow::yolo11_seg_loss
