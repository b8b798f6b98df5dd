#pragma once
// Another sample brought to this one's size before it is mixed in (mixup, cutmix): letterboxed
// (the largest scale that fits, centred, grey 114 around it), its instances (every field)
// following the pixels.
#include "yoloflow/sample.h"

namespace yoloflow::plugins {

// `other` at width x height: unchanged when it already is that size.
void fit_sample(Sample& other, int width, int height);
// The same for a sample whose pixels are planned (yoloflow/pixel_plan.h): the fit is written into
// its plan, which must then be its decoded image alone (one tile, as the source gave it; a plan
// made by earlier stages is this size already in the chains that plan). Throws yoloflow::Error
// naming both sizes otherwise.
void fit_planned_sample(Sample& other, int width, int height);

}  // namespace yoloflow::plugins
