#pragma once
// What an epoch through the flow graph counts: what the sink got, what the source skipped, how
// long it took and where the time went.
#include <cstddef>
#include <string>
#include <vector>

namespace yoloflow::core {

struct SkippedSample {
  std::size_t index = 0;
  std::string reason;  // the source's exception message
};

struct EpochStats {
  int epoch = 0;
  std::size_t samples = 0;  // delivered to the sink
  std::size_t batches = 0;
  std::vector<SkippedSample> skipped;
  double seconds = 0;
  double images_per_second = 0;
  std::size_t max_in_flight = 0;   // the limit this epoch ran with
  std::size_t peak_in_flight = 0;  // the most samples observed between limiter and release
  bool interrupted = false;        // stopped early by request_stop() or the stop flag
  bool ended_early = false;        // cut short by end_epoch_early(), then ended as a whole epoch
  // Where an epoch's time goes besides its batches: from its start until the sink received the
  // first batch (the workers fill the pipeline while the device idles), and the sink's
  // end-of-epoch work (validation, results, checkpoints).
  double first_batch_seconds = 0;
  double end_seconds = 0;
};

}  // namespace yoloflow::core
