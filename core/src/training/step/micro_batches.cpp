#include "training/step/micro_batches.h"

#include <algorithm>

namespace yoloflow::core {

std::vector<MicroBatch> micro_batches(std::int64_t batch, std::int64_t micro_batch) {
  std::vector<MicroBatch> out;
  if (batch <= 0) return out;
  const std::int64_t cap = (micro_batch <= 0 || micro_batch >= batch) ? batch : micro_batch;
  const std::int64_t count = (batch + cap - 1) / cap;
  // `count` chunks of base or base + 1 images: the first `extra` ones take one more.
  const std::int64_t base = batch / count, extra = batch % count;
  std::int64_t start = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t size = base + (i < extra ? 1 : 0);
    out.push_back(MicroBatch{start, size});
    start += size;
  }
  return out;
}

}  // namespace yoloflow::core
