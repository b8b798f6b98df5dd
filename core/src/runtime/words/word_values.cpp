#include "runtime/words/word_values.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "runtime/pipeline/json_text.h"
#include "runtime/util/ascii_lower.h"
#include "runtime/util/string_affixes.h"

namespace yoloflow::core {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A Python int or float literal (1e-3, .5, 5., -2, 1_000): its JSON number.
bool parse_python_number(const std::string& text_in, nlohmann::json& out) {
  std::string text;
  for (char c : text_in) {
    if (c != '_') text += c;  // Python's digit separators
  }
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != std::string::npos) return false;
  const bool is_int = text.find_first_of(".eE") == std::string::npos;
  const char* begin = text.c_str();
  char* end = nullptr;
  if (is_int) {
    errno = 0;
    const long long v = std::strtoll(begin, &end, 10);
    if (end != begin + text.size()) return false;
    if (errno == ERANGE) {
      // Beyond 64 bits: the number it is (a float), for the range checks to name, not the
      // clamped LLONG_MAX strtoll returns.
      out = std::strtod(begin, nullptr);
    } else {
      out = v;
    }
  } else {
    const double v = std::strtod(begin, &end);
    if (end != begin + text.size()) return false;
    out = v;
  }
  return true;
}

// One scalar of a Python list or tuple.
nlohmann::json parse_item(const std::string& item_in) {
  const std::string item = trim(item_in);
  nlohmann::json v;
  if (parse_python_number(item, v)) return v;
  bool b = false;
  if (ascii_lower(item) == "true" || ascii_lower(item) == "false") {
    parse_word_bool(item, b);
    return b;
  }
  if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') && item.back() == item.front()) {
    return item.substr(1, item.size() - 2);
  }
  return item;
}

}  // namespace

bool parse_word_bool(const std::string& text, bool& value) {
  const std::string t = ascii_lower(trim(text));
  if (t == "true" || t == "yes" || t == "on" || t == "1") {
    value = true;
    return true;
  }
  if (t == "false" || t == "no" || t == "off" || t == "0") {
    value = false;
    return true;
  }
  return false;
}

nlohmann::json parse_word_value(const std::string& text_in) {
  // JSON first, read as files are (runtime/pipeline/json_text.h); a value it refuses is taken
  // as the Python spellings below, else as the string itself.
  nlohmann::json parsed;
  Diagnostics ignored;
  if (parse_json_text(text_in, parsed, ignored)) return parsed;
  const std::string text = trim(text_in);
  const std::string l = ascii_lower(text);
  if (l == "true") return true;
  if (l == "false") return false;
  nlohmann::json number;
  if (parse_python_number(text, number)) return number;
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    return text.substr(1, text.size() - 2);
  }
  // [0, 2] or (0, 2): a list of whatever it holds; 0,2 only of numbers.
  const bool bracketed = text.size() >= 2 && ((text.front() == '[' && text.back() == ']') ||
                                              (text.front() == '(' && text.back() == ')'));
  if (bracketed || text.find(',') != std::string::npos) {
    const std::string inner = bracketed ? text.substr(1, text.size() - 2) : text;
    nlohmann::json list = nlohmann::json::array();
    if (trim(inner).empty()) return list;
    bool all_numbers = true;
    for (const auto& part : split_at(inner, ',')) {
      if (trim(part).empty()) continue;  // (640,) is a one-item tuple
      const nlohmann::json item = parse_item(part);
      all_numbers = all_numbers && item.is_number();
      list.push_back(item);
    }
    if (bracketed || all_numbers) return list;
  }
  return text_in;
}

}  // namespace yoloflow::core
