#pragma once
// The annotation fields a pipeline's chain carries from its source to its sink (yoloflow/fields.h;
// the rules are at the top of yoloflow/annotations.h), checked before anything is built:
//
//   fields = what the source gives
//   each augmentation: fields = (fields & what it keeps) | what it gives
//   the batcher packs fields & what it keeps (| what it gives)
//
// and every field a stage needs, or a component its parameters name needs (the train sink's
// loss), must reach that stage.
#include <vector>

#include "runtime/pipeline/topology.h"
#include "runtime/plugin/registry.h"

namespace yoloflow::core {

// `chain`: source, augmentations..., batcher, sink, in order, each with its stage object as
// written (its "params" name the nested components; their defaults count where left out).
// Appends one diagnostic per field and stage that loses a needed field, at "stages.NAME.plugin"
// of that stage, naming the field and every consumer that needs it: each stage that does not
// carry it on after the last one that gives it, and the source when no stage gives it at all.
// Components the registry does not know are left out (validation reports them).
void check_annotation_flow(const std::vector<TopologyStage>& chain, const Registry& registry, Diagnostics& out);

}  // namespace yoloflow::core
