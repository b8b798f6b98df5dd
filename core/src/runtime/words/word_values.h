#pragma once
// Values of command-line words as Ultralytics users write them, which are Python literals more
// often than JSON: True/False in any case, None, numbers as Python prints them (1e-3, .5, 5.),
// lists as [0,2], (0,2) or 0,2, and quoted strings ('ram').
#include <string>

#include <nlohmann/json.hpp>

namespace yoloflow::core {

// The JSON value `text` stands for: JSON first (schedules and component objects are JSON), then
// the Python spellings above; anything else is the string itself (`name=coco`, `cache=none`:
// Python's None is no value a parameter takes, so "none" stays the word). A bare comma
// list becomes a list only when each item is a number, so a string holding a comma stays one.
nlohmann::json parse_word_value(const std::string& text);

// True/False, yes/no, on/off, 1/0 in any case (Ultralytics' own bool words); sets `value` and
// returns true when `text` is one of them.
bool parse_word_bool(const std::string& text, bool& value);

}  // namespace yoloflow::core
