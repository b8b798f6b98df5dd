#pragma once
// Parameter schemas (declared by every plugin) and resolved parameter values.
//
// One schema drives three things: validation of a pipeline before anything is built,
// `yoloflow describe` (text and JSON), and the generated reference docs. A plugin
// declares each parameter once:
//
//   Schema s;
//   s.add_float("fliplr", 0.5).range(0.0, 1.0).doc("Probability of a horizontal flip.");
//   s.add_enum("cache", {"none", "ram", "disk"}, "none").doc("Where decoded images are kept.");
//   s.add_string("data").required().doc("Path to an Ultralytics data.yaml.");
//
// Numeric parameters may follow a per-epoch schedule in the pipeline JSON instead of a
// plain value (docs/pipeline-format.md, "Schedules"); the host resolves it and hands the
// component plain values for the current epoch.
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "yoloflow/export.h"

namespace yoloflow {

using json = nlohmann::json;

enum class ParamType { Bool, Int, Float, String, Enum, Path, IntList, FloatList, Json, Component, ComponentList };
YOLOFLOW_SDK_API const char* param_type_name(ParamType type);

// What a parameter is to the host beyond its value. The host finds these parameters by role,
// never by name, so that a third party's source or sink takes part as the shipped ones do:
//   Dataset           a data.yaml path (String or Path): the pipeline's top-level `data` fills
//                     it where a stage names none, `data=` on the command line sets it, it is
//                     checked to exist and the stages' class counts to agree before anything runs
//   Split             the split of that dataset a source reads ("train", "val"): validation and
//                     `yoloflow val` point a copy of the source at another split through it
//   ValidationSplit   the split a training sink validates on (what its validation source's
//                     Split is set to)
//   ValidationSource  a Component parameter of kind "source": what a training sink validates
//                     with; left null, the host fills it with the pipeline's own source reading
//                     the ValidationSplit
// ValidationSource, ValidationTransform and ValidationBatcher: the component parameters of a sink
// that validates, whose chain the host checks for the fields its loss and evaluator need.
enum class ParamRole { None, Dataset, Split, ValidationSplit, ValidationSource, ValidationTransform, ValidationBatcher };
YOLOFLOW_SDK_API const char* param_role_name(ParamRole role);  // "dataset", "split", ...

// One finding of validation: where in the pipeline JSON, and what is wrong.
struct Diagnostic {
  std::string path;     // JSON path, e.g. "stages.augment.params.fliplr"
  std::string message;  // complete sentence, may end with "did you mean 'x'?"
};
using Diagnostics = std::vector<Diagnostic>;

class YOLOFLOW_SDK_API ParamSpec {
 public:
  ParamSpec(std::string name, ParamType type);

  // Builder interface, used while declaring a schema.
  ParamSpec& default_value(json value);
  ParamSpec& required();
  ParamSpec& range(double lo, double hi);
  ParamSpec& min(double lo);
  ParamSpec& max(double hi);
  ParamSpec& greater_than(double lo);  // exclusive lower bound
  ParamSpec& length(std::size_t min_len, std::size_t max_len);  // lists
  ParamSpec& choices(std::vector<std::string> values);           // Enum
  ParamSpec& accepts(std::string special);  // a string a numeric parameter also takes ("auto")
  // An int parameter that also takes a number in (0, 1): a fraction of something the host
  // resolves before the component is built (the batch as a fraction of device memory).
  ParamSpec& accepts_fraction();
  ParamSpec& fixed();                       // may not follow a schedule
  ParamSpec& doc(std::string text);
  ParamSpec& component_kind(std::string kind);  // Component, ComponentList: the plugin kind expected
  ParamSpec& role(ParamRole r);                 // what the host uses it for (ParamRole)

  std::string name;
  ParamType type;
  json default_json;  // null when there is no default
  bool is_required = false;
  std::optional<double> lo, hi;
  bool lo_exclusive = false;
  std::size_t min_len = 0, max_len = static_cast<std::size_t>(-1);
  std::vector<std::string> enum_choices;
  std::vector<std::string> specials;
  bool fraction = false;  // accepts_fraction()
  bool schedulable = true;
  std::string doc_text;
  std::string kind;  // for Component and ComponentList
  ParamRole param_role = ParamRole::None;

  bool is_numeric() const { return type == ParamType::Int || type == ParamType::Float; }
  // One-line human description of the accepted values, e.g. "float in [0, 1]".
  std::string describe_type() const;
};

// Validates the component parameter (an object {"plugin": ..., "params": ...}) found at
// `path`; supplied by the host, which knows the registry.
class ComponentValidator {
 public:
  virtual ~ComponentValidator() = default;
  virtual void validate_component(const json& spec, const std::string& kind,
                                  const std::string& path, Diagnostics& out) const = 0;
};

class YOLOFLOW_SDK_API Schema {
 public:
  ParamSpec& add(std::string name, ParamType type);
  ParamSpec& add_bool(std::string name, bool default_value);
  ParamSpec& add_int(std::string name, std::int64_t default_value);
  ParamSpec& add_int(std::string name);  // no default: call required() or accept absence
  ParamSpec& add_float(std::string name, double default_value);
  ParamSpec& add_float(std::string name);
  ParamSpec& add_string(std::string name, std::string default_value);
  ParamSpec& add_string(std::string name);
  ParamSpec& add_path(std::string name);
  ParamSpec& add_enum(std::string name, std::vector<std::string> choices,
                      std::string default_value);
  ParamSpec& add_int_list(std::string name, std::vector<std::int64_t> default_value);
  ParamSpec& add_float_list(std::string name, std::vector<double> default_value);
  ParamSpec& add_json(std::string name, json default_value);
  ParamSpec& add_component(std::string name, std::string kind, json default_value);
  // A list of components of one kind, each {"plugin": NAME, "params": {...}} (the train
  // sink's callbacks); `default_value` is a JSON array.
  ParamSpec& add_component_list(std::string name, std::string kind, json default_value);

  // A parameter that moved to `to`, a path below the same params ("loss.params.box"):
  // validate() refuses it with an error that names its new place.
  void add_moved(std::string name, std::string to);

  const ParamSpec* find(const std::string& name) const;
  // The parameter declared with `role`; null when none. The host refuses to register a schema that
  // gives one role to two parameters, or a role to a parameter of a type it cannot have.
  const ParamSpec* find_role(ParamRole role) const;
  const std::deque<ParamSpec>& params() const { return params_; }
  std::vector<std::string> names() const;

  // Appends every problem in `params` (an object) to `out`, each with its JSON path
  // (`path` + ".name"). Unknown names come with the closest known name.
  // `owner` names what the parameters belong to in messages, e.g. "plugin 'flip'".
  void validate(const json& params, const std::string& path, Diagnostics& out,
                const ComponentValidator* components = nullptr,
                const std::string& owner = "") const;

  // Defaults merged with `params`, schedules evaluated at `epoch` of `epochs` (0-based).
  // Assumes `params` passed validate().
  json resolve(const json& params, int epoch = 0, int epochs = 1) const;

  // Names of parameters given as schedules in `params` (they may change between epochs).
  std::vector<std::string> scheduled(const json& params) const;

  // Machine-readable description, the source of `describe --json` and the docs.
  json to_json() const;

 private:
  std::deque<ParamSpec> params_;  // deque: references returned by add() stay valid
  std::map<std::string, std::string> moved_;  // old name -> new path below the same params
};

// Schedules. A numeric parameter may be given as
//   {"steps":  {"0": 1.0, "-10": 0.0}}   value from the latest listed epoch (step function)
//   {"linear": {"0": 16, "10": 64}}      piecewise-linear between listed epochs
// Epoch keys are 0-based; a negative key counts from the end (-10 = the last ten epochs).
YOLOFLOW_SDK_API bool is_schedule(const json& value);
YOLOFLOW_SDK_API void validate_schedule(const json& value, const ParamSpec& spec,
                                        const std::string& path, Diagnostics& out);
YOLOFLOW_SDK_API json evaluate_schedule(const json& value, const ParamSpec& spec, int epoch,
                                        int epochs);

// Resolved parameter values as a component receives them. Getters throw yoloflow::Error
// naming the parameter when it is missing or of another type (a plugin bug, not user input:
// the host validated user input against the schema before).
class YOLOFLOW_SDK_API Params {
 public:
  Params() = default;
  Params(json values, std::string where);

  bool has(const std::string& name) const;
  bool is_null(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  std::int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  std::string get_string(const std::string& name) const;
  std::vector<std::int64_t> get_ints(const std::string& name) const;
  std::vector<double> get_floats(const std::string& name) const;
  const json& get_json(const std::string& name) const;
  // True when a numeric parameter holds one of its special strings (e.g. "auto").
  bool is_special(const std::string& name, const std::string& special) const;

  const json& values() const { return values_; }
  const std::string& where() const { return where_; }

 private:
  const json& at(const std::string& name) const;
  json values_ = json::object();
  std::string where_;
};

// Levenshtein-closest candidate, or "" when nothing is reasonably close.
YOLOFLOW_SDK_API std::string closest_name(const std::string& name,
                                          const std::vector<std::string>& candidates);

}  // namespace yoloflow
