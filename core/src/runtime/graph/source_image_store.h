#pragma once
// Decoded source images kept by whoever composes the batches' pixels (the training device's image
// cache), so that a sample kept there is not read or decoded again. The graph's loaders consult it
// only while the chain plans its pixels (AugmentContext::plan_pixels): nothing on the host then
// reads a kept image's pixels, which may live in device memory. It is consulted for the samples
// the pipeline's own samples and the first augmentation's other samples (a mosaic's) start from;
// every other load decodes as usual.
#include <cstddef>
#include <optional>
#include <string>

#include "yoloflow/sample.h"

namespace yoloflow::core {

class SourceImageStore {
 public:
  virtual ~SourceImageStore() = default;
  // The source's sample `index` as the source gave it for `key` (the epoch's image size and the
  // source's parameters: the store keeps the images of one key), its `image` a view of the kept
  // pixels that only the composer may read; nothing when not kept. Thread-safe.
  virtual std::optional<Sample> get(const std::string& key, std::size_t index) const = 0;
  // The source's sample `index` just loaded for `key`; the store may keep its pixels and
  // annotations. Thread-safe; called by the graph's workers.
  virtual void offer(const std::string& key, std::size_t index, const Sample& sample) = 0;
};

}  // namespace yoloflow::core
