#include "training/compose/composed_pixel_kernel.h"

#include <cuda_runtime.h>

namespace yoloflow::core {
namespace {

__global__ void composed_pixels(const ComposeTile* tiles, const ComposeImage* images, const ComposeMix* mixes,
                                const std::uint8_t* image_tables, const std::uint8_t* bgr_to_hsv,
                                const std::uint8_t* hsv_to_bgr, int height, int width, std::uint8_t* out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int b = blockIdx.z;
  if (x >= width) return;
  const std::int64_t at = ((static_cast<std::int64_t>(b) * height + y) * width + x) * 3;
  composed_pixel(tiles, images, mixes, b, image_tables + static_cast<std::int64_t>(b) * 768, bgr_to_hsv, hsv_to_bgr,
                 width, height, x, y, out + at);
}

}  // namespace

const char* launch_composed_pixels(const ComposeTile* tiles, const ComposeImage* images, const ComposeMix* mixes,
                                   const std::uint8_t* image_tables, const std::uint8_t* bgr_to_hsv,
                                   const std::uint8_t* hsv_to_bgr, int n, int height, int width, std::uint8_t* out,
                                   void* stream) {
  if (n <= 0 || height <= 0 || width <= 0) return nullptr;
  constexpr int kThreads = 128;
  const dim3 grid((width + kThreads - 1) / kThreads, height, n);
  composed_pixels<<<grid, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(tiles, images, mixes, image_tables,
                                                                          bgr_to_hsv, hsv_to_bgr, height, width, out);
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}

}  // namespace yoloflow::core
