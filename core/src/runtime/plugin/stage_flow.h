#pragma once
// What flows between the stages of a pipeline, by kind: a stage reads what the stage before it
// gives. Stages have one input and one output and no ports: the kinds say it all. Samples also
// carry annotation fields (yoloflow/fields.h), which each component's contract says it gives,
// keeps or needs.
#include <string>

#include "yoloflow/component.h"
#include "yoloflow/plugin.h"

namespace yoloflow::core {

// What a stage of a kind reads from the stage before it and gives the next ("samples",
// "batches"); null where it reads or gives nothing (a source reads, a sink gives nothing; the
// other kinds are no graph stages).
struct StageFlow {
  const char* reads;
  const char* gives;
};
StageFlow stage_flow(Kind kind);

// The annotation fields `info` gives, keeps and needs: its declared contract, or where it
// declares none its kind's default, a detection component's (a source gives boxes, an
// augmentation and a batcher keep boxes, a loss needs boxes; a sink and every other kind give,
// keep and need nothing).
AnnotationContract annotation_contract(const ComponentInfo& info);

// The part of that contract a kind acts on, as `plugins` and `describe` show it: "gives boxes,
// polygons" (source), "keeps boxes" (augmentation, batcher), "needs keypoints" (loss, sink), with
// what else it declares ("; needs masks"). Empty for the kinds that have no contract.
std::string annotation_contract_text(const ComponentInfo& info);

}  // namespace yoloflow::core
