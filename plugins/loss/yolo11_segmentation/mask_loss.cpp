#include "mask_loss.h"

#include <algorithm>
#include <string>

#include "yoloflow/error.h"

namespace yoloflow::yolo11_seg_loss {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Slot data for a chunk [begin, begin + n): the target masks (B, n, hw) as float and the crop
// (B, n, h, w) as float, both without gradient.
struct ChunkTargets {
  Tensor target, crop;
};

ChunkTargets chunk_targets(const Tensor& masks, bool overlap, const Tensor& gt, const Tensor& boxes, std::int64_t h,
                           std::int64_t w) {
  const auto B = gt.size(0), n = gt.size(1);
  ChunkTargets c;
  if (overlap) {
    c.target = masks.reshape({B, 1, h * w}).eq((gt + 1).unsqueeze(-1).to(masks.dtype())).to(torch::kFloat);
  } else {
    c.target = masks.reshape({B, masks.size(1), h * w})
                   .gather(1, gt.unsqueeze(-1).expand({B, n, h * w}))
                   .to(torch::kFloat);
  }
  // Pixel (r, c) counts when x1 <= c < x2 and y1 <= r < y2, pixel indices against the box's
  // corners in mask pixels (Ultralytics' crop_mask on many masks, the path training takes).
  const auto opts = boxes.options();
  const auto cols = torch::arange(w, opts).view({1, 1, 1, w});
  const auto rows = torch::arange(h, opts).view({1, 1, h, 1});
  const auto b = boxes.unsqueeze(-1).unsqueeze(-1);  // (B, n, 4, 1, 1)
  c.crop = (cols >= b.select(2, 0)).logical_and(cols < b.select(2, 2))
               .logical_and(rows >= b.select(2, 1))
               .logical_and(rows < b.select(2, 3))
               .to(torch::kFloat)
               .reshape({B, n, h * w});
  return c;
}

// Inputs: coefficients (B, S, 32), prototypes (B, 32, h, w) with gradient; the rest constants:
// weights (B, S) (validity / area / pixels / positives), gt (B, S), boxes (B, S, 4) in mask
// pixels, masks: per image (B, h, w) when `overlap`, else per instance (B, M, h, w); `chunk`:
// slots per chunk.
class MaskLossFunction : public torch::autograd::Function<MaskLossFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& coefficients, const Tensor& prototypes, const Tensor& weights,
                        const Tensor& gt, const Tensor& boxes, const Tensor& masks, bool overlap, std::int64_t chunk) {
    ctx->save_for_backward({coefficients, prototypes, weights, gt, boxes, masks});
    ctx->saved_data["overlap"] = overlap;
    ctx->saved_data["chunk"] = chunk;
    torch::NoGradGuard no_grad;
    const auto B = prototypes.size(0), h = prototypes.size(2), w = prototypes.size(3), S = coefficients.size(1);
    const auto proto = prototypes.reshape({B, prototypes.size(1), h * w});
    Tensor total = torch::zeros({}, coefficients.options());
    for (std::int64_t begin = 0; begin < S; begin += chunk) {
      const auto n = std::min(chunk, S - begin);
      const auto t = chunk_targets(masks, overlap, gt.narrow(1, begin, n), boxes.narrow(1, begin, n), h, w);
      const auto x = torch::bmm(coefficients.narrow(1, begin, n), proto);  // (B, n, hw)
      // Binary cross-entropy with logits, elementwise and stable.
      const auto bce = x.clamp_min(0) - x * t.target + torch::log1p(torch::exp(-x.abs()));
      total = total + ((bce * t.crop).sum(-1) * weights.narrow(1, begin, n)).sum();
    }
    return total;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &coefficients = saved[0], &prototypes = saved[1], &weights = saved[2], &gt = saved[3],
                 &boxes = saved[4], &masks = saved[5];
    const bool overlap = ctx->saved_data["overlap"].toBool();
    const auto chunk = ctx->saved_data["chunk"].toInt();
    const auto B = prototypes.size(0), C = prototypes.size(1), h = prototypes.size(2), w = prototypes.size(3);
    const auto S = coefficients.size(1);
    const auto proto = prototypes.reshape({B, C, h * w});
    const auto proto_t = proto.transpose(1, 2);  // (B, hw, C)
    auto grad_coefficients = torch::zeros_like(coefficients);
    auto grad_proto = torch::zeros_like(proto);
    const Tensor scale = grads[0];  // () the gradient of the total
    for (std::int64_t begin = 0; begin < S; begin += chunk) {
      const auto n = std::min(chunk, S - begin);
      const auto t = chunk_targets(masks, overlap, gt.narrow(1, begin, n), boxes.narrow(1, begin, n), h, w);
      const auto c = coefficients.narrow(1, begin, n);
      const auto x = torch::bmm(c, proto);
      const auto g = (torch::sigmoid(x) - t.target) * t.crop * (weights.narrow(1, begin, n) * scale).unsqueeze(-1);
      grad_coefficients.narrow(1, begin, n).copy_(torch::bmm(g, proto_t));
      grad_proto.add_(torch::bmm(c.transpose(1, 2), g));
    }
    return {grad_coefficients, grad_proto.reshape(prototypes.sizes()), Tensor(), Tensor(), Tensor(), Tensor(), Tensor(),
            Tensor()};
  }
};

}  // namespace

Tensor mask_loss(const MaskLossInputs& in, const MaskTargets& targets, std::int64_t chunk_elements) {
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
  const auto chunk = std::max<std::int64_t>(1, chunk_elements / std::max<std::int64_t>(1, B * mh * mw));
  return MaskLossFunction::apply(coefficients, proto, weights.detach(), gt, mask_boxes.detach(), layout.to(proto.device()),
                                 targets.overlap.defined(), chunk);
}

}  // namespace yoloflow::yolo11_seg_loss
