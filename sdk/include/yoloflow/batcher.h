#pragma once
// Batcher plugins: gather samples into batches. Called from one thread at a time.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "yoloflow/component.h"
#include "yoloflow/sample.h"

namespace yoloflow {

// Allocates batch pixel memory; the consumer may supply one (pinned host memory for GPUs).
using PixelAllocator = std::function<std::shared_ptr<std::uint8_t>(std::size_t bytes)>;

class YOLOFLOW_SDK_API Batcher : public Component {
 public:
  ~Batcher() override;
  // Samples per batch in this epoch.
  virtual std::int64_t batch_size() const = 0;
  // Adds a sample; returns a batch when one is complete.
  virtual std::optional<Batch> add(Sample&& sample) = 0;
  // Returns the last, partial batch of the epoch, if any (and if kept).
  virtual std::optional<Batch> flush() = 0;
  virtual void set_allocator(PixelAllocator allocator) = 0;
  // Whether it batches samples whose pixels are planned (Sample::pixel_plan) into
  // Batch::planned. By default it does not.
  virtual bool collates_pixel_plans() const;
};

}  // namespace yoloflow
