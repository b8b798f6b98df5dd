#pragma once
// What flows between the stages of a pipeline, by kind: a stage reads what the stage before it
// gives. Stages have one input and one output and no ports: the kinds say it all.
#include "yoloflow/component.h"

namespace yoloflow::core {

// What a stage of a kind reads from the stage before it and gives the next ("samples",
// "batches"); null where it reads or gives nothing (a source reads, a sink gives nothing; the
// other kinds are no graph stages).
struct StageFlow {
  const char* reads;
  const char* gives;
};
StageFlow stage_flow(Kind kind);

}  // namespace yoloflow::core
