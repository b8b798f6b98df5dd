#pragma once
// A segmentation model's validated masks as `--save-json` writes them (Ultralytics' save_json):
// each detection's mask at the original image's size in COCO's compressed RLE, the string
// pycocotools reads ({"size": [h, w], "counts": "..."}).
// The mask as Ultralytics' validator makes it for save_json: the coefficients times the image's
// prototypes, resized bilinearly to the batch's pixels, kept inside the box (pixel columns
// x1 <= c < x2 of its exact corners) and above 0; then the letterbox's padding cut off, resized
// bilinearly to the original image and truncated to 0/1 (a pixel stays 1 only where every pixel
// it is interpolated from is 1).
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/sample.h"

namespace yoloflow::core {

// COCO's compressed RLE counts of `mask` (h, w) uint8 0/1, read column by column as pycocotools does.
std::string coco_rle_counts(const torch::Tensor& mask);

// Each of `boxes`' (N, 4, in the batch's pixels of `height` x `width`) mask, from its
// `coefficients` (N, C) over `prototypes` (C, h, w), as COCO RLE counts at the original image's
// size (`geometry`). A few masks at a time: memory does not grow with N.
std::vector<std::string> detection_rles(const torch::Tensor& prototypes, const torch::Tensor& coefficients,
                                        const torch::Tensor& boxes, std::int64_t height, std::int64_t width,
                                        const Geometry& geometry);

}  // namespace yoloflow::core
