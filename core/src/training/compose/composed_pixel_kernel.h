#pragma once
// The CUDA kernel that composes a batch of planned images (composed_pixel.h), one thread per
// output pixel. Built where LibTorch has CUDA and nvcc is found (YOLOFLOW_COMPOSE_KERNELS).
#include <cstdint>

#include "training/compose/composed_pixel.h"

namespace yoloflow::core {

// Every pointer is device memory (the tiles' `data` too). `images`: the batch's n, then the images
// mixed into them. `image_tables`: n x 768 bytes (each image's hsv tables).
// `out`: n x height x width x 3 bytes, RGB. Launched on `stream` (a cudaStream_t); returns the
// CUDA error text of the launch, or null.
const char* launch_composed_pixels(const ComposeTile* tiles, const ComposeImage* images, const ComposeMix* mixes,
                                   const std::uint8_t* image_tables, const std::uint8_t* bgr_to_hsv,
                                   const std::uint8_t* hsv_to_bgr, int n, int height, int width, std::uint8_t* out,
                                   void* stream);

}  // namespace yoloflow::core
