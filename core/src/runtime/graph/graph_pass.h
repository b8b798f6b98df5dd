#pragma once
// One pass of the flow graph over an order of samples: what the graph runner hands it and what
// it asks of the runner. Samples are loaded and augmented by the graph's workers (a generator of
// their own each), batched serially and handed one batch at a time to the calling thread, where
// the sink consumes it; then the batcher's last partial batch.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/graph/epoch_order.h"
#include "runtime/graph/recent_images.h"
#include "runtime/graph/source_image_store.h"
#include "runtime/graph/epoch_stats.h"
#include "runtime/graph/stage_sample_loaders.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

// What one pass of the flow graph runs over: the order and where it stands.
struct PassPlan {
  const std::vector<ShardSlot>& order;          // this process's share of the epoch
  const std::vector<std::size_t>& whole_order;  // the epoch's order, all ranks
  const std::vector<std::size_t>& previous_order;
  int epoch = 0;
  int imgsz = 640;
  std::uint64_t epoch_seed = 0;
  std::size_t limit = 1;          // samples in flight at most
  std::size_t recent_window = 0;  // samples a mosaic may draw from
  int workers = 1;
  bool ordered = false;
  int world_size = 1;
};

// The stages a pass runs, and what it asks of the runner.
struct PassStages {
  DataSource& source;
  Batcher& batcher;
  RecentImages& recent_images;
  std::vector<Augmentation*> chain{};
  ChainFields fields{};  // the fields each augmentation keeps; names the source
  std::size_t batcher_stage = 0;
  bool plan_pixels = false;  // AugmentContext::plan_pixels
  // Where decoded source images may be kept while the chain plans (RunnerOptions::source_images),
  // and the key of this pass's images (its image size and the source's parameters).
  SourceImageStore* source_images = nullptr;
  std::string source_images_key{};
  std::function<std::string(std::size_t stage)> label{};  // "augmentation 'flip' (stage augment)"
  std::function<bool()> stop_requested{};
  std::function<void(Batch&)> consume{};  // the sink, with its errors named
};

// Runs the pass on the calling thread (the sink's) and the graph's own threads; throws the
// pass's first failure. `next_batch_index` numbers the batches across the passes of an epoch;
// `peak_in_flight` is the most samples in flight so far, updated when the pass ends.
void run_graph_pass(const PassPlan& plan, PassStages& stages, EpochStats& stats, std::int64_t& next_batch_index,
                    std::size_t& peak_in_flight);

}  // namespace yoloflow::core
