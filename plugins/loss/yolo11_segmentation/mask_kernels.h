#pragma once
// CUDA kernels for the mask term's per-slot part (mask_loss.h): for every slot s of image b with a
// non-zero weight, over the pixels of its GT box only,
//   F_s = sum over crop of softplus(x_s),  x_s = coefficients_s . prototypes_b,
// and its gradients. The work and the memory follow the boxes' areas: no (slots x h x w) tensor is
// made, where the tensor path computes every slot's whole mask and then crops it. Fixed launch
// shapes, no host synchronisation and nothing allocated: they run inside a captured CUDA step.
//
// Pointers are device float32, contiguous: coefficients (B, S, C), prototypes (B, C, h, w),
// boxes (B, S, 4) each slot's GT box in mask pixels (x1, y1, x2, y2; pixel (r, c) counts when
// x1 <= c < x2 and y1 <= r < y2, as the tensor path crops), weights (B, S) (0: no work). Only
// C == kMaskKernelChannels is compiled (YOLO11's 32 mask coefficients); other heads take the
// tensor path.
#include <cstdint>

struct CUstream_st;

namespace yoloflow::yolo11_seg_loss::kernels {

constexpr int kMaskKernelChannels = 32;

// per_slot (B, S) = F_s where weights != 0, else 0.
void softplus_crop_forward(const float* coefficients, const float* prototypes, const float* boxes, const float* weights,
                           float* per_slot, int B, int S, int h, int w, CUstream_st* stream);

// grad_coefficients (B, S, C) += scale_s * sum over crop of sigmoid(x_s) prototypes_b: one block
// per slot, its pixels' sums reduced in a fixed order (deterministic).
void softplus_crop_backward_coefficients(const float* coefficients, const float* prototypes, const float* boxes,
                                         const float* scale, float* grad_coefficients, int B, int S, int h, int w,
                                         CUstream_st* stream);

// grad_prototypes (B, C, h, w) += sum over slots whose crop holds the pixel of
// scale_s * sigmoid(x_s) coefficients_s: one thread per pixel, the slots visited in their order
// (deterministic, no atomics).
void softplus_crop_backward_prototypes(const float* coefficients, const float* prototypes, const float* boxes,
                                       const float* scale, float* grad_prototypes, int B, int S, int h, int w,
                                       CUstream_st* stream);

// The last launch's error as one line, or empty.
const char* last_error();

}  // namespace yoloflow::yolo11_seg_loss::kernels
