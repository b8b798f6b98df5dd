#pragma once
// The masks of a segmentation model's detections as Ultralytics' predict makes them, turned into
// outlines in the original image's pixels: what `yoloflow predict` draws, writes to
// predictions.json and to label files.
// - Default (Ultralytics' process_mask with upsampling): each detection's coefficients times
//   the image's prototypes, kept inside its box scaled to the prototypes, resized bilinearly to
//   the network input and kept above 0; outlines traced there (outer contours) and mapped back
//   through the letterbox like the boxes.
// - retina_masks (process_mask_native): the prototypes' mask resized to the original image
//   first (the letterbox's padding cut off), then kept inside the box in original pixels and
//   above 0: sharper edges, more work per detection.
// The box crop keeps pixel columns x1 <= c < x2 of the box's exact corners, as Ultralytics does
// on CUDA (its CPU path rounds the corners when there are fewer than 50 masks).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "training/predict/outlines.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

// For `boxes` (N, 4) xyxy in the pixels of an input of `height` x `width` that letterboxed the
// original image by `geometry`, their `coefficients` (N, C) over `prototypes` (C, h, w): each
// detection's outlines. CPU tensors; memory bounded by a few masks at a time.
std::vector<Outlines> instance_outlines(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                                        const torch::Tensor& boxes, std::int64_t height, std::int64_t width,
                                        const Geometry& geometry, bool retina);

}  // namespace yoloflow::core
