#include "runtime/util/file_checks.h"

#include "yoloflow/user_file.h"

namespace yoloflow::core {

std::string not_a_regular_file(const std::string& path) {
  // Any budget: only the kind of the path matters here.
  const std::string why = file_refusal(path, kWeightsFileBudget);
  return why.rfind("holds ", 0) == 0 ? "" : why;
}

std::string read_regular_file(const std::string& path, std::uintmax_t max_bytes, const std::string& what) {
  const FileBudget budget{max_bytes, what == "pipeline" ? "a pipeline file" : "such a file"};
  return read_user_file(path, budget, what + " '" + path + "'");
}

std::string read_regular_file(const std::string& path, const std::string& name) {
  return read_user_file(path, kWeightsFileBudget, name);
}

std::string non_regular_kind(const std::string& path) {
  const std::string why = not_a_regular_file(path);
  const std::string prefix = "is not a regular file (";
  if (why.rfind(prefix, 0) != 0) return "";
  return why.substr(prefix.size(), why.size() - prefix.size() - 1);
}

}  // namespace yoloflow::core
