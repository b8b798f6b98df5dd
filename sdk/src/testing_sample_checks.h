#pragma once
// The checks of single samples that the source and augmentation contracts share (private to the
// SDK library): both kinds hand samples to the same batcher, so both are held to one rule.
#include <string>
#include <vector>

#include "yoloflow/sample.h"

namespace yoloflow::testing::detail {

// Image and boxes problems of one sample, each line starting with `what`.
void check_sample(const Sample& s, const std::string& what, std::vector<std::string>& out);

// Whether two samples are equal: pixels, boxes and every annotation field.
bool same_sample(const Sample& a, const Sample& b);

}  // namespace yoloflow::testing::detail
