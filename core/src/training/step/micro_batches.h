#pragma once
// Micro-batching: the train sink runs each incoming batch as consecutive chunks of at most
// `micro_batch` images, each forward + backward on its own, so that the activations of only
// one chunk are alive at a time. Gradients add up in .grad exactly as accumulation over
// batches already does; the optimizer still steps once per nominal batch.
//
// How close the summed gradient is to the whole batch's (DetectionLoss divides the batch's
// summed losses by its target-score sum, at least 1, and multiplies by its images):
//  - one process: exact. The score sum is only known after every chunk's forward pass, so each
//    chunk backpropagates its unnormalised losses over a provisional normaliser and the batch's
//    gradient is rescaled once the sum is known (step/step_engine.cpp). The window's
//    earlier gradients are set aside meanwhile: a second gradient-sized buffer while
//    accumulating.
//  - data parallel: the gradient reducer sends each chunk's gradients while its backward runs,
//    before the sum is known, so each chunk divides by its own score sum, at least its share of
//    the images (then the floors add up to the batch's 1). Exact while every chunk's sum is
//    below its floor (early training, background images) or proportional to its images;
//    otherwise a chunk with few or weak targets weighs more, as between accumulated batches.
//  - BatchNorm normalises with each chunk's statistics and updates its running statistics
//    once per chunk: the step is close to, not the same as, the whole batch's.
#include <cstdint>
#include <vector>

namespace yoloflow::core {

struct MicroBatch {
  std::int64_t start = 0;  // first image of the chunk in the batch
  std::int64_t size = 0;   // images in the chunk
};

// The chunks of a batch of `batch` images: consecutive, covering it, each of at most
// `micro_batch` images (0, or a value >= batch: the whole batch as one chunk). Chunks are
// as even as possible (10 images at micro_batch 4: 4, 3, 3), so no chunk is a tiny remainder.
std::vector<MicroBatch> micro_batches(std::int64_t batch, std::int64_t micro_batch);

}  // namespace yoloflow::core
