#pragma once
// Another sample brought to this one's size before it is mixed in (mixup, cutmix): letterboxed
// (the largest scale that fits, centred, grey 114 around it), its instances (every field)
// following the pixels.
#include "yoloflow/sample.h"

namespace yoloflow::plugins {

// `other` at width x height: unchanged when it already is that size.
void fit_sample(Sample& other, int width, int height);

}  // namespace yoloflow::plugins
