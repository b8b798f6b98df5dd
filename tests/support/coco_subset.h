#pragma once
// A small training set cut from coco128 for fast training tests.
#include <string>

namespace yoloflow::test {

// Lists the first `count` labelled coco128 train images (sorted by name) in
// DIR/subset.txt and writes DIR/data.yaml using that list for both train and val, with
// coco128's class names. Returns the data.yaml path.
std::string write_coco128_subset(const std::string& dir, int count);

// DIR/inspect.json over a subset of 4 images (written too): letterbox at 64 px, batches of 2,
// the throughput sink, `epochs`, and `monitors` (a JSON list). Returns its path. For tests
// of monitors, which need a run but not a training.
std::string write_inspect_pipeline(const std::string& dir, int epochs, const std::string& monitors);

}  // namespace yoloflow::test
