#pragma once
// Validation's kept boxes per image against Ultralytics' (a fixture's rows per image file name,
// [x1, y1, x2, y2, conf, cls, ...] in original pixels), as the validation parity tests compare
// them: the same class and IoU >= 0.99, in the network's input pixels (Ultralytics maps both
// axes back with the height's scale, where the rounded-up resize made the width's differ
// slightly: 500x333 -> 640x427). Images of rectangular batches whose aspect ratio also occurs in
// another batch are left out: which of the equal ones open the next batch is the sort's choice
// among equal keys (numpy's is unspecified), and the batch decides their padding.
#include <array>
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/eval/weights_validation.h"

namespace yoloflow::test {

struct KeptBoxMatch {
  std::size_t image = 0, ours = 0, theirs = 0;  // prediction index, our box, their row
};

struct KeptBoxesComparison {
  std::size_t images_compared = 0;
  std::size_t compared = 0, matched = 0;  // their rows compared, and found among ours
  std::size_t degenerate = 0;             // their rows clipped to nothing: no IoU to compare
  std::vector<KeptBoxMatch> matches;
};

// `ref_images`: file name -> rows; every prediction's file must be named there. `batch`: the
// rectangular batches' size (0: square letterboxing, every image compared).
KeptBoxesComparison compare_kept_boxes(const std::vector<core::OriginalImageDetections>& predictions,
                                       const nlohmann::json& ref_images, std::size_t batch);

}  // namespace yoloflow::test
