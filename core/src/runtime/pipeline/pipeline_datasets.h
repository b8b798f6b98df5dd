#pragma once
// The passes over a pipeline document that make its datasets one before it is validated: the
// pipeline's one `data` given to every stage that reads a dataset and names none (a built-in
// dataset name fetched first), every data.yaml a stage will read checked to exist and to list
// the splits read from it, the class counts compared; and a validating stage that names no
// source of its own given the pipeline's source, reading its validation split. Both write into
// the document, so --print-resolved, pipeline.json and every rank of a data-parallel run see
// the same spec. Internal to the pipeline room (pipeline_validation.cpp runs them).
#include <string>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// The pipeline's one `data` for every stage with a dataset parameter (ParamRole::Dataset) that
// names none, and every data.yaml a stage will read checked to exist before anything is built.
void share_dataset(json& doc, const std::string& base_dir, const Registry& registry, Diagnostics& out);

// A stage that validates (a ValidationSource parameter) and names no source of its own reads the
// pipeline's source stage, whatever its plugin, with its Split parameter set to the stage's
// ValidationSplit: the same dataset reader that trains also validates.
void share_validation_source(json& doc, const Registry& registry);

}  // namespace yoloflow::core
