#include "runtime/plugin/stage_flow.h"

namespace yoloflow::core {

StageFlow stage_flow(Kind kind) {
  switch (kind) {
    case Kind::Source: return {nullptr, "samples"};
    case Kind::Augmentation: return {"samples", "samples"};
    case Kind::Batcher: return {"samples", "batches"};
    case Kind::Sink: return {"batches", nullptr};
    default: return {nullptr, nullptr};
  }
}

}  // namespace yoloflow::core
