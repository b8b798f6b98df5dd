#pragma once
// Component specifications in a pipeline ({"plugin": NAME, "params": {...}}): finding the
// plugin in the registries, validating its parameters (recursively through Component-typed
// parameters), and resolving them (defaults filled, relative paths made absolute).
#include <string>
#include <utility>
#include <vector>

#include "runtime/plugin/registry.h"
#include "yoloflow/params.h"

namespace yoloflow::core {

// Validates Component-typed parameters through the registry: the plugin must exist in the
// kind the parameter declares, and its own parameters must pass its schema.
class RegistryComponentValidator final : public ComponentValidator {
 public:
  explicit RegistryComponentValidator(const Registry& registry) : registry_(registry) {}
  void validate_component(const json& spec, const std::string& kind, const std::string& path,
                          Diagnostics& out) const override;
  // The components `schema`'s Component-typed parameters name by default where `params` leaves
  // them out: they are made when the stage runs, so they are validated as if written (their
  // plugin loaded, their defaults fitting their own schemas), each problem saying it is in a
  // default. `path` is where `params` are ("stages.train.params").
  void validate_defaults(const Schema& schema, const json& params, const std::string& path, Diagnostics& out) const;

 private:
  const Registry& registry_;
  mutable int default_depth_ = 0;  // defaults naming components whose defaults name components...
};

// The graph kinds a pipeline stage can be.
bool is_graph_kind(Kind kind);

// The component a stage object names ({"plugin": ..., "kind"?: ...}), honouring its "kind";
// null when the plugin is unknown or the stage malformed. No diagnostics: for the passes that
// run before validation reports them.
const RegisteredComponent* stage_component(const json& stage, const Registry& registry);

// The stages of a pipeline document with their components (unknown plugins left out).
std::vector<std::pair<std::string, const RegisteredComponent*>> known_stages(const json& document,
                                                                             const Registry& registry);

// Finds the component a stage names. `kind_text` is the stage's optional "kind" ("" when
// absent). On failure appends a diagnostic at `path` and returns null.
const RegisteredComponent* find_stage_component(const Registry& registry, const std::string& plugin,
                                                const std::string& kind_text,
                                                const std::string& path, Diagnostics& out);

// Finds `plugin` of `kind`, or explains at `path` why not (unknown, or of another kind).
const RegisteredComponent* find_component_of_kind(const Registry& registry, Kind kind,
                                                  const std::string& plugin,
                                                  const std::string& path, Diagnostics& out);

// Makes relative values of Path parameters absolute against `base_dir` and fills in
// defaults, recursively through Component-typed parameters. Schedules are kept as written.
// Assumes `params` passed validation.
json resolve_params(const Schema& schema, const json& params, const std::string& base_dir,
                    const Registry& registry);

// "augmentation 'flip'"
std::string component_label(Kind kind, const std::string& plugin);

}  // namespace yoloflow::core
