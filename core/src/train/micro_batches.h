#pragma once
// Micro-batching: the train sink runs each incoming batch as consecutive chunks of at most
// `micro_batch` images, each forward + backward on its own, so that the activations of only
// one chunk are alive at a time. Gradients add up in .grad exactly as accumulation over
// batches already does; the optimizer still steps once per nominal batch.
//
// How close the summed gradient is to the whole batch's (DetectionLoss):
//  - each chunk's loss is (box + cls + dfl) / score_sum(chunk) * images(chunk). The whole
//    batch's is the same sums over all images / score_sum(batch) * images(batch). The two agree
//    when a chunk's target-score sum is its share of the batch's (score mass proportional to
//    images); otherwise a chunk with few or weak targets weighs a little more. The whole
//    batch's sum is only known after every chunk's forward pass, and the gradient reducer of
//    data-parallel training sends each chunk's gradients while its backward runs, so the
//    normaliser stays per chunk, as it already is per batch between accumulated batches.
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
