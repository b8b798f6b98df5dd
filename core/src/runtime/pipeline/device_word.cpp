#include "runtime/pipeline/device_word.h"

#include <algorithm>
#include <cctype>

namespace yoloflow::core {
namespace {

// A CUDA index as written: digits only, at most 4 of them (no machine has 10000 GPUs, and the
// number then always fits an int).
bool read_index(const std::string& digits, int& index) {
  if (digits.empty() || digits.size() > 4) return false;
  if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) return false;
  index = std::stoi(digits);
  return true;
}

}  // namespace

bool read_device_word(const std::string& text_in, std::string& canonical) {
  std::string text;
  for (unsigned char c : text_in) {
    if (!std::isspace(c)) text += static_cast<char>(std::tolower(c));
  }
  // Quoted as Python writes a string: device='cpu'.
  if (text.size() >= 2 && (text.front() == '\'' || text.front() == '"') && text.back() == text.front()) {
    text = text.substr(1, text.size() - 2);
  }
  int index = 0;
  if (text == "auto" || text == "-1") {
    canonical = "auto";
  } else if (text == "cpu" || text == "cuda") {
    canonical = text;
  } else if (text.rfind("cuda:", 0) == 0 && read_index(text.substr(5), index)) {
    canonical = "cuda:" + std::to_string(index);
  } else if (read_index(text, index)) {
    canonical = "cuda:" + std::to_string(index);
  } else {
    return false;
  }
  return true;
}

std::string device_refusal(const std::string& option, const std::string& text) {
  std::string shown = text.size() > 40 ? text.substr(0, 37) + "..." : text;
  if (shown.empty()) shown = "\"\"";
  // "device=mps", "--device mps"
  const bool word = !option.empty() && option.back() == '=';
  return (option.empty() ? "" : option + (word ? "" : " ")) + shown +
         " is not a device yoloflow runs on; the devices are cpu, cuda, cuda:N (N = 0, 1, ...), a CUDA index N "
         "(Ultralytics' device=0) and auto or -1 (CUDA when present, else the CPU)";
}

}  // namespace yoloflow::core
