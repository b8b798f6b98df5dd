#include "runtime/util/path_words.h"

#include <filesystem>

#include "yoloflow/error.h"
#include "yoloflow/printable.h"

namespace yoloflow::core {
namespace {

// "name 'a\x00b'": the word and its value as the user can read it.
std::string named(const std::string& word, const std::string& value) {
  return word + " '" + printable(value) + "'";
}

}  // namespace

void check_path_word(const std::string& word, const std::string& value) {
  if (value.empty()) throw InvalidInput(word + " is empty: give the path of a file or folder");
  for (const char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) {
      throw InvalidInput(named(word, value) + " holds a NUL byte, which no file name can hold");
    }
    if (c < 0x20 || c == 0x7f) {
      throw InvalidInput(named(word, value) +
                         " holds a control character (shown escaped); give a name without one");
    }
  }
}

void check_name_word(const std::string& word, const std::string& value) {
  check_path_word(word, value);
  const std::filesystem::path p(value);
  if (p.is_absolute()) {
    throw InvalidInput(named(word, value) + " is an absolute path; it names a folder inside the runs folder");
  }
  // "a/../b" stays inside, "../x" and "a/../../x" leave it: count the depth as it is walked.
  int depth = 0;
  for (const auto& part : p) {
    if (part == "..") {
      if (--depth < 0) {
        throw InvalidInput(named(word, value) +
                           " leaves its folder through '..'; give a name that stays inside it");
      }
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
  }
  if (depth == 0) throw InvalidInput(named(word, value) + " names no folder inside its own; give a name");
}

}  // namespace yoloflow::core
