#pragma once
// Augmentation plugins: transform one Sample, pixels and boxes together.
#include <cstddef>
#include <string>

#include "yoloflow/component.h"
#include "yoloflow/rng.h"
#include "yoloflow/sample.h"

namespace yoloflow {

// Access to other samples of the same source (mosaic and mixup need them). Thread-safe.
class YOLOFLOW_SDK_API SampleLoader {
 public:
  virtual ~SampleLoader();
  virtual std::size_t size() const = 0;
  virtual Sample load(std::size_t index) = 0;
};

// Source indexes of the samples loaded just before this one, this one first: Ultralytics'
// dataset buffer, where its mosaic draws the other images. The host keeps their decoded images
// for a while, so loading one through the loader costs a copy instead of a decode.
struct RecentSamples {
  const std::size_t* indexes = nullptr;
  std::size_t count = 0;
};

struct AugmentContext {
  Rng& rng;             // this sample's generator
  SampleLoader& loader;
  int imgsz;            // output size of this epoch
  int epoch;
  RecentSamples recent{};  // empty where nothing was loaded before (a lone sample)
  // True: describe the pixel work in the sample's plan (plan_of(sample), yoloflow/pixel_plan.h)
  // instead of doing it. Set only when every augmentation of the chain said it can
  // (plan_support()), the batcher collates plans and the sink composes them.
  bool plan_pixels = false;
};

// apply() is called concurrently from several threads on different samples: keep per-call
// state on the stack. Boxes that leave the image or shrink too far are dropped by the
// augmentation that made them so.
class YOLOFLOW_SDK_API Augmentation : public Component {
 public:
  ~Augmentation() override;
  virtual void apply(Sample& sample, AugmentContext& context) = 0;
  // Null when, as configured, it can plan its pixel work (AugmentContext::plan_pixels); else
  // why not, in a few words ("rotation is warped on the CPU only"), text the component keeps
  // until its next configure(). Asked after each configure(). By default it cannot. (A C
  // string: no std::string crosses here, so a plugin built with the other C++ string ABI still
  // loads far enough to be refused with that reason.)
  virtual const char* plan_support() const;
};

}  // namespace yoloflow
