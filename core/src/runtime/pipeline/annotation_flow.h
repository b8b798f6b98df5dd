#pragma once
// The annotation fields a pipeline's chain carries from its source to its sink (yoloflow/fields.h;
// the rules are at the top of yoloflow/annotations.h), checked before anything is built:
//
//   fields = what the source gives
//   each augmentation: fields = (fields & what it keeps) | what it gives
//   the batcher packs fields & what it keeps (| what it gives)
//
// and every field a stage needs, or a component its parameters name needs (the train sink's
// loss), must reach that stage. A sink that validates (its schema declares the validation roles)
// has a second chain, its validation source, transform and batcher, which must carry what its
// loss and its evaluator need; the evaluator reads only that one.
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
// `validation`: the chain is a sink's validation chain (its stages' names are the sink's
// parameter paths, "train.params.val_batcher"): only the components the sink's parameters name
// consume it, the evaluator among them; on the pipeline's own chain the evaluator is no consumer.
void check_annotation_flow(const std::vector<TopologyStage>& chain, const Registry& registry, Diagnostics& out,
                           bool validation = false);

// The validation chain of the sink `sink` (a stage of `stages`), when its schema declares the
// validation source, transform and batcher roles and the source is given (the pipeline's parse
// fills it in from the source stage where it can): those components, from the sink's parameters
// or their schema defaults, then the sink. `storage` holds the defaults the chain points at.
// Empty when there is none, or a component of it is not registered (validation reports that).
std::vector<TopologyStage> validation_chain(const TopologyStage& sink, const Registry& registry,
                                            std::vector<json>& storage);

}  // namespace yoloflow::core
