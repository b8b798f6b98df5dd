#pragma once
// Sink plugins: the consumer at the end of a graph (a training step, a throughput meter).
#include <string>

#include "yoloflow/batcher.h"
#include "yoloflow/component.h"
#include "yoloflow/sample.h"

namespace yoloflow {

class YOLOFLOW_SDK_API Sink : public Component {
 public:
  ~Sink() override;
  virtual void begin_epoch(int epoch);
  // Called on the thread that runs the epoch (the one that calls begin_epoch and end_epoch),
  // never on a data worker; in batch order when the graph runs ordered.
  virtual void consume(Batch& batch) = 0;
  virtual void end_epoch(int epoch);
  // Called instead of end_epoch when the run stops early (signal, RunReporter::request_stop):
  // every batch already assembled has been consumed; a sink that can resume saves its state.
  virtual void interrupted(int epoch);
  // Text printed when the run ends (statistics), may be empty.
  virtual std::string summary() const;
  // A batch pixel allocator the batcher should use (pinned memory), or empty.
  virtual PixelAllocator pixel_allocator();
  // Whether it composes batches whose pixels are planned (Batch::planned) and wants them so.
  // Asked after each configure; by default it does not.
  virtual bool composes_pixel_plans() const;
};

}  // namespace yoloflow
