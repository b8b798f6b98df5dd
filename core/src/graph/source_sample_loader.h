#pragma once
// What the host hands augmentations that load other samples (mosaic, mixup): the samples of
// the stage's own source, by index.
#include <cstddef>

#include "yoloflow/augmentation.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

class SourceSampleLoader final : public SampleLoader {
 public:
  explicit SourceSampleLoader(DataSource& source) : source_(source) {}
  std::size_t size() const override { return source_.size(); }
  Sample load(std::size_t index) override { return source_.load(index); }

 private:
  DataSource& source_;
};

}  // namespace yoloflow::core
