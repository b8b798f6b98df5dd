// The mask term's per-slot kernels (mask_kernels.h). Each slot's work is its GT box's pixels:
// a crowded image of small instances costs what its boxes cover, not slots x h x w.
#include "mask_kernels.h"

#include <cuda_runtime.h>

namespace yoloflow::yolo11_seg_loss::kernels {
namespace {

constexpr int C = kMaskKernelChannels;
constexpr int kThreads = 256;  // per block; kTile x kTile pixels in the prototype kernel
constexpr int kTile = 16;
constexpr int kSlotBatch = 64;  // slots a prototype block holds in shared memory at once
static_assert(kTile * kTile == kThreads, "one thread per pixel of a tile");

// A slot's crop as pixel ranges [c0, c1) x [r0, r1): pixel (r, c) counts when x1 <= c < x2 and
// y1 <= r < y2, so for whole c the columns are ceil(x1) .. ceil(x2) - 1, clamped to the mask.
// A box with a NaN corner holds no pixel (every comparison with NaN is false).
struct Crop {
  int c0, r0, c1, r1;
  __device__ bool empty() const { return c0 >= c1 || r0 >= r1; }
  __device__ bool holds(int r, int c) const { return c >= c0 && c < c1 && r >= r0 && r < r1; }
};

__device__ inline int bound(float v, int size) { return static_cast<int>(ceilf(fminf(fmaxf(v, 0.f), float(size)))); }

__device__ inline Crop crop_of(const float* box, int h, int w) {
  if (isnan(box[0]) || isnan(box[1]) || isnan(box[2]) || isnan(box[3])) return {0, 0, 0, 0};
  return {bound(box[0], w), bound(box[1], h), bound(box[2], w), bound(box[3], h)};
}

// One slot's pixels in its image's prototypes (a per-slot block walks them): `count` pixels, the
// i-th at offset(i) within a (h, w) plane; `proto` the image's (C, h, w) prototypes.
struct SlotPixels {
  Crop crop;
  int columns, count, w;
  long long plane;  // h * w
  const float* proto;
  __device__ SlotPixels(const float* box, const float* prototypes, int b, int h, int w_)
      : crop(crop_of(box, h, w_)), w(w_), plane(static_cast<long long>(h) * w_) {
    columns = crop.c1 - crop.c0;
    count = crop.empty() ? 0 : columns * (crop.r1 - crop.r0);
    proto = prototypes + static_cast<long long>(b) * C * plane;
  }
  __device__ long long offset(int i) const { return static_cast<long long>(crop.r0 + i / columns) * w + crop.c0 + i % columns; }
};

__device__ inline float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// The block's sum, in thread 0 (a fixed order: the same result for the same inputs).
__device__ inline float block_sum(float v, float* shared /* kThreads / 32 */) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_sum(v);
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? shared[threadIdx.x] : 0.f;
  return warp == 0 ? warp_sum(v) : 0.f;
}

// softplus with LibTorch's threshold (beta 1, threshold 20): x itself above it.
__device__ inline float softplus(float x) { return x > 20.f ? x : log1pf(expf(x)); }
__device__ inline float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// One block per slot (grid S x B).
__global__ void forward_kernel(const float* __restrict__ coefficients, const float* __restrict__ prototypes,
                               const float* __restrict__ boxes, const float* __restrict__ weights,
                               float* __restrict__ per_slot, int S, int h, int w) {
  const int s = blockIdx.x, b = blockIdx.y;
  const long long bs = static_cast<long long>(b) * S + s;
  if (weights[bs] == 0.f) {  // the whole block leaves together
    if (threadIdx.x == 0) per_slot[bs] = 0.f;
    return;
  }
  __shared__ float coef[C];
  __shared__ float partial[kThreads / 32];
  if (threadIdx.x < C) coef[threadIdx.x] = coefficients[bs * C + threadIdx.x];
  __syncthreads();
  const SlotPixels px(boxes + 4 * bs, prototypes, b, h, w);
  float acc = 0.f;
  for (int i = threadIdx.x; i < px.count; i += kThreads) {
    const long long p = px.offset(i);
    float x = 0.f;
#pragma unroll
    for (int c = 0; c < C; ++c) x = fmaf(coef[c], px.proto[c * px.plane + p], x);
    acc += softplus(x);
  }
  acc = block_sum(acc, partial);
  if (threadIdx.x == 0) per_slot[bs] = acc;
}

// One block per slot (grid S x B).
__global__ void backward_coefficients_kernel(const float* __restrict__ coefficients,
                                             const float* __restrict__ prototypes, const float* __restrict__ boxes,
                                             const float* __restrict__ scale, float* __restrict__ grad_coefficients,
                                             int S, int h, int w) {
  const int s = blockIdx.x, b = blockIdx.y;
  const long long bs = static_cast<long long>(b) * S + s;
  const float g = scale[bs];
  if (g == 0.f) return;
  __shared__ float coef[C];
  __shared__ float partial[kThreads / 32][C];
  if (threadIdx.x < C) coef[threadIdx.x] = coefficients[bs * C + threadIdx.x];
  __syncthreads();
  const SlotPixels px(boxes + 4 * bs, prototypes, b, h, w);
  float acc[C];
#pragma unroll
  for (int c = 0; c < C; ++c) acc[c] = 0.f;
  for (int i = threadIdx.x; i < px.count; i += kThreads) {
    const long long p = px.offset(i);
    float v[C];
    float x = 0.f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      v[c] = px.proto[c * px.plane + p];
      x = fmaf(coef[c], v[c], x);
    }
    const float sg = sigmoid(x);
#pragma unroll
    for (int c = 0; c < C; ++c) acc[c] = fmaf(sg, v[c], acc[c]);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    const float v = warp_sum(acc[c]);
    if (lane == 0) partial[warp][c] = v;
  }
  __syncthreads();
  if (threadIdx.x < C) {
    float total = 0.f;
    for (int i = 0; i < kThreads / 32; ++i) total += partial[i][threadIdx.x];
    grad_coefficients[bs * C + threadIdx.x] += g * total;
  }
}

// One block per kTile x kTile pixels of one image (grid tiles x B), one thread per pixel: every
// slot of the image whose crop meets the tile is visited in slot order, kSlotBatch at a time.
__global__ void backward_prototypes_kernel(const float* __restrict__ coefficients,
                                           const float* __restrict__ prototypes, const float* __restrict__ boxes,
                                           const float* __restrict__ scale, float* __restrict__ grad_prototypes,
                                           int S, int h, int w) {
  const int b = blockIdx.y;
  const int tiles_x = (w + kTile - 1) / kTile;
  const int x0 = (blockIdx.x % tiles_x) * kTile, y0 = (blockIdx.x / tiles_x) * kTile;
  const int c = x0 + threadIdx.x % kTile, r = y0 + threadIdx.x / kTile;
  const bool inside = c < w && r < h;
  const long long hw = static_cast<long long>(h) * w;
  const long long p = static_cast<long long>(r) * w + c;
  const float* proto = prototypes + static_cast<long long>(b) * C * hw;
  float v[C], acc[C];
#pragma unroll
  for (int k = 0; k < C; ++k) {
    v[k] = inside ? proto[k * hw + p] : 0.f;
    acc[k] = 0.f;
  }
  __shared__ float coef[kSlotBatch][C];
  __shared__ Crop crops[kSlotBatch];
  __shared__ float gains[kSlotBatch];
  __shared__ int hit[kSlotBatch];
  for (int base = 0; base < S; base += kSlotBatch) {
    int mine = 0;
    if (threadIdx.x < kSlotBatch) {
      const int s = base + threadIdx.x;
      if (s < S) {
        const long long bs = static_cast<long long>(b) * S + s;
        const float g = scale[bs];
        const Crop k = crop_of(boxes + 4 * bs, h, w);
        if (g != 0.f && !k.empty() && k.c0 < x0 + kTile && k.c1 > x0 && k.r0 < y0 + kTile && k.r1 > y0) {
          mine = 1;
          crops[threadIdx.x] = k;
          gains[threadIdx.x] = g;
        }
      }
      hit[threadIdx.x] = mine;
    }
    if (!__syncthreads_or(mine)) continue;  // no slot of this batch meets the tile
    for (int e = threadIdx.x; e < kSlotBatch * C; e += kThreads) {
      const int j = e / C;
      if (hit[j]) coef[j][e % C] = coefficients[(static_cast<long long>(b) * S + base + j) * C + e % C];
    }
    __syncthreads();
    if (inside) {
      for (int j = 0; j < kSlotBatch; ++j) {
        if (!hit[j] || !crops[j].holds(r, c)) continue;
        float x = 0.f;
#pragma unroll
        for (int k = 0; k < C; ++k) x = fmaf(coef[j][k], v[k], x);
        const float gs = gains[j] * sigmoid(x);
#pragma unroll
        for (int k = 0; k < C; ++k) acc[k] = fmaf(gs, coef[j][k], acc[k]);
      }
    }
    __syncthreads();  // the next batch overwrites the shared slots
  }
  if (inside) {
    float* grad = grad_prototypes + static_cast<long long>(b) * C * hw;
#pragma unroll
    for (int k = 0; k < C; ++k) grad[k * hw + p] += acc[k];
  }
}

}  // namespace

void softplus_crop_forward(const float* coefficients, const float* prototypes, const float* boxes, const float* weights,
                           float* per_slot, int B, int S, int h, int w, CUstream_st* stream) {
  if (B <= 0 || S <= 0) return;
  forward_kernel<<<dim3(S, B), kThreads, 0, stream>>>(coefficients, prototypes, boxes, weights, per_slot, S, h, w);
}

void softplus_crop_backward_coefficients(const float* coefficients, const float* prototypes, const float* boxes,
                                         const float* scale, float* grad_coefficients, int B, int S, int h, int w,
                                         CUstream_st* stream) {
  if (B <= 0 || S <= 0) return;
  backward_coefficients_kernel<<<dim3(S, B), kThreads, 0, stream>>>(coefficients, prototypes, boxes, scale,
                                                                     grad_coefficients, S, h, w);
}

void softplus_crop_backward_prototypes(const float* coefficients, const float* prototypes, const float* boxes,
                                       const float* scale, float* grad_prototypes, int B, int S, int h, int w,
                                       CUstream_st* stream) {
  if (B <= 0 || S <= 0 || h <= 0 || w <= 0) return;
  const int tiles = ((w + kTile - 1) / kTile) * ((h + kTile - 1) / kTile);
  backward_prototypes_kernel<<<dim3(tiles, B), kThreads, 0, stream>>>(coefficients, prototypes, boxes, scale,
                                                                       grad_prototypes, S, h, w);
}

const char* last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace yoloflow::yolo11_seg_loss::kernels
