#pragma once
// A batch's labelled boxes per image, in the batch's pixels: its (N, 6) [image, cls, cx, cy, w, h]
// rows (normalised) read once for every drawing and plot of a batch.
#include <vector>

#include "yoloflow/sample.h"

namespace yoloflow::core {

// out[i]: image i's boxes in row order. Rows naming an image outside the batch are skipped, and
// only the rows the values hold in full are read (a malformed array is never read past).
std::vector<std::vector<Box>> batch_label_boxes(const Batch& batch);

}  // namespace yoloflow::core
