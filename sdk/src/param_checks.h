#pragma once
// Checks and texts of single parameter values, shared by schema validation, schedules and the
// reads of resolved values (private to the SDK library).
#include <string>

#include "yoloflow/params.h"

namespace yoloflow::detail {

std::string number_text(double v);
// An integer, or a float that holds one exactly (JSON writes 3.0 for some integers).
bool is_integral_number(const json& v);
// `v` as JSON, shortened for one line.
std::string value_text(const json& v);
// "a bool", "an int", "a string", ... for messages.
std::string json_kind(const json& v);
// A value outside the parameter's range, reported at `path`.
void check_range(double d, const ParamSpec& spec, const std::string& path, Diagnostics& out);
// A single (non-schedule) value of a numeric parameter.
void check_number(const json& v, const ParamSpec& spec, const std::string& path, Diagnostics& out);

}  // namespace yoloflow::detail
