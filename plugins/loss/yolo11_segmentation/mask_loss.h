#pragma once
// The mask term of YOLO11-seg's loss (Ultralytics' v8SegmentationLoss semantics, our own
// implementation): for every positive anchor, the mask its coefficients make from the image's
// prototypes against its GT's mask, binary cross-entropy over the GT box's pixels, divided by the
// mask's pixel count and by the box's normalised area, summed and divided by the positive count.
//
// On request (MaskBackend::kernels), on CUDA the per-slot part runs as kernels over each slot's
// box pixels only (mask_kernels.h): work and memory follow the boxes' areas. Otherwise:
// Memory: the predicted masks are never held for all positives at once. The positives are
// gathered into a fixed number of slots (each GT keeps at most topk anchors, so topk x M slots
// hold every positive: fixed shapes, no host synchronisation, no tensor made from host values, as a
// captured CUDA step needs), and the slots are processed a chunk at a time in forward and again in backward (a
// custom autograd function that keeps only its inputs): the peak is one chunk's masks, whatever
// the number of instances, where computing all positives' masks at once costs positives x H x W.
// Time: BCE's target term is linear in the coefficients, so it is computed once per GT (its
// target mask in its box times the prototypes) instead of once per slot; per slot remain one
// product, a softplus and a crop sum with the box's rows and columns (mask_loss.cpp).
#include <cstdint>

#include <torch/torch.h>

namespace yoloflow::yolo11_seg_loss {

struct MaskTargets {
  // One of the two, by the batch's layout (Ultralytics' overlap_mask): per image (B, h, w) with
  // the value k + 1 where the image's k-th target row is on top, 0 elsewhere; or per target row
  // (B, M, h, w), 1 inside, 0 outside.
  torch::Tensor overlap;
  torch::Tensor separate;
};

struct MaskLossInputs {
  torch::Tensor coefficients;  // (B, A, 32) per anchor
  torch::Tensor prototypes;    // (B, 32, ph, pw); resized to the masks' size when it differs
  torch::Tensor fg_mask;       // (B, A) bool: positive anchors
  torch::Tensor gt_index;      // (B, A) int64: each anchor's GT row within its image
  torch::Tensor gt_boxes;      // (B, A, 4) xyxy input pixels of that GT
  double img_h = 0, img_w = 0;
  std::int64_t slots = 0;      // positives per image at most (topk x M)
  std::int64_t rows = 0;       // M, the target rows per image (gt_index < rows)
};

// How the per-slot part is computed: `tensor`, tensor operations a chunk of slots at a time;
// `kernels`, the CUDA kernels (mask_kernels.h) for CUDA tensors of 32 coefficients where this
// build has them, else the tensor path.
enum class MaskBackend { tensor, kernels };

// Whether this build compiled the CUDA kernels (a CUDA LibTorch and a CUDA compiler).
bool mask_kernels_built();

// The unweighted term (Ultralytics multiplies it by the box gain), a scalar.
// `chunk_elements`: the most mask values (chunk x B x h x w) one chunk of the tensor path holds.
torch::Tensor mask_loss(const MaskLossInputs& in, const MaskTargets& targets,
                        std::int64_t chunk_elements = std::int64_t{1} << 26,
                        MaskBackend backend = MaskBackend::tensor);

}  // namespace yoloflow::yolo11_seg_loss
