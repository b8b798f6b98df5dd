#pragma once
// A pickled value (restricted_unpickler.h) as JSON, for what a weights file says of itself: its
// training arguments, metrics, version and date. Python types map to JSON where they have a
// counterpart; what only Python has (numpy scalars, paths, namespaces) is read for its value,
// and anything else is named, never expanded without bound.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "training/model/restricted_unpickler.h"

namespace yoloflow::core {

// A pickled value as JSON: None, bools, numbers, strings, lists, tuples and dicts (in their
// order) as they are; numpy scalars as numbers; paths as strings; other objects as their class
// name; tensors as "tensor [sizes]". Nesting beyond `max_depth` and more than `max_values`
// values are cut (marked "...").
nlohmann::ordered_json pickle_to_json(const PickleValue& value, int max_depth = 16, std::size_t max_values = 20000);

// Valid UTF-8 as it is; any other byte becomes '?', so that the JSON can be written (a
// pickle's strings are bytes as far as this reader knows).
std::string utf8_or_marked(const std::string& s);

}  // namespace yoloflow::core
