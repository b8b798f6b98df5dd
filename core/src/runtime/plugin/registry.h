#pragma once
// Typed registries: one namespace of names per plugin kind. A name registered twice in a
// kind is an error naming both files.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "yoloflow/component.h"
#include "yoloflow/plugin.h"

namespace yoloflow::core {

class Registry;

// The file name built-in components are registered under.
inline constexpr const char* kBuiltinFile = "<built-in>";

// What a component built into the host refuses in its parameters beyond what its schema can say
// (one parameter against another, or against the registry), as configure() would refuse it:
// appends each problem to `out`. Pipeline validation runs it on the stage's resolved parameters
// (defaults filled in) at `path` ("stages.train.params"), so that `yoloflow validate` refuses
// what the run would.
using ParamsCheck = void (*)(const json& params, const std::string& path, const Registry& registry, Diagnostics& out);

class RunDriver;
struct Pipeline;
struct RunOptions;
// The loop a component built into the host owns when its stage ends a pipeline (the trainer),
// made instead of the component (runtime/run/run_driver.h).
using RunDriverFactory = std::unique_ptr<RunDriver> (*)(const Pipeline& pipeline, const Registry& registry,
                                                        const RunOptions& options);

// What a driver settles in its pipeline before the run starts and the run folder records it
// (the trainer: an auto batch measured on the train device). `device`: the command's --device
// ("" = the pipeline's). Throws InvalidInput for what it cannot settle.
using PipelinePreparer = void (*)(Pipeline& pipeline, const Registry& registry, const std::string& device);

// What the host knows of a component it builds in itself, beyond its ComponentInfo.
struct BuiltinTraits {
  ParamsCheck check = nullptr;         // what configure() refuses beyond the schema
  RunDriverFactory driver = nullptr;   // it runs its own loop (then it needs no factory)
  bool writes_run_folder = false;      // a sink that writes outputs: a run gets a numbered folder
  PipelinePreparer prepare = nullptr;  // its driver settles the pipeline first
};

// A registered component and where it came from.
struct RegisteredComponent {
  ComponentInfo info;
  std::string file;            // plugin library path, or "<built-in>"
  std::string plugin;          // descriptor name
  std::string plugin_version;
  ParamsCheck check = nullptr;         // built-in components only (BuiltinTraits)
  RunDriverFactory driver = nullptr;
  bool writes_run_folder = false;
  PipelinePreparer prepare = nullptr;
};

class Registry {
 public:
  // Throws yoloflow::Error on a duplicate (kind, name), naming both files.
  void add(ComponentInfo info, const std::string& file, const std::string& plugin,
           const std::string& plugin_version, BuiltinTraits traits = {});
  // Fails like add() would, without adding.
  void check_new(const ComponentInfo& info, const std::string& file) const;

  const RegisteredComponent* find(Kind kind, const std::string& name) const;
  // The registered component of that name in any kind (for "is a model, not an augmentation").
  const RegisteredComponent* find_any_kind(const std::string& name) const;
  std::vector<std::string> names(Kind kind) const;
  std::vector<const RegisteredComponent*> all() const;

  // Creates a component; an exception from the plugin's constructor becomes a
  // yoloflow::Error naming the plugin, its file and `where` (pipeline node or JSON path).
  std::unique_ptr<Component> create(Kind kind, const std::string& name,
                                    const std::string& where) const;
  template <class Interface>
  std::unique_ptr<Interface> create_as(Kind kind, const std::string& name,
                                       const std::string& where) const {
    // Factories registered through Registrar::add_<kind> return an Interface upcast to
    // Component; static_cast reverses exactly that.
    return std::unique_ptr<Interface>(static_cast<Interface*>(create(kind, name, where).release()));
  }

 private:
  std::map<std::pair<int, std::string>, RegisteredComponent> components_;
};

}  // namespace yoloflow::core
