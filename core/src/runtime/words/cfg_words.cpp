#include "runtime/words/cfg_words.h"

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "runtime/words/ultralytics_arguments.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

// A value as Ultralytics' words write it (Python's spelling of what yaml.safe_load returns).
std::string word_value(const YAML::Node& node, const std::string& at) {
  if (node.IsNull()) return "None";
  if (node.IsSequence()) {
    std::string out = "[";
    for (std::size_t i = 0; i < node.size(); ++i) out += (i ? ", " : "") + word_value(node[i], at);
    return out + "]";
  }
  if (node.IsMap()) throw InvalidInput(at + " is a mapping; an argument's value is a number, a word or a list");
  const std::string s = node.Scalar();
  if (node.Tag() == "?") {  // plain (unquoted) scalars: YAML's null and booleans
    if (s == "null" || s == "Null" || s == "NULL" || s == "~" || s.empty()) return "None";
    if (s == "true" || s == "True" || s == "TRUE") return "True";
    if (s == "false" || s == "False" || s == "FALSE") return "False";
  }
  return s;
}

}  // namespace

std::vector<std::string> cfg_file_words(const std::string& path, const std::string& word,
                                        const std::vector<std::string>& given) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw InvalidInput(word + ": no such file");
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw InvalidInput(word + " is not YAML: line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (doc.IsNull()) return {};
  if (!doc.IsMap()) throw InvalidInput(word + " is not a mapping of arguments (key: value lines)");
  std::vector<std::string> out;
  for (const auto& kv : doc) {
    const std::string key = kv.first.Scalar();
    // save_dir is where the run went (an args.yaml's last line), not an argument: Ultralytics
    // leaves it out of a cfg's words too.
    if (key == "cfg" || key == "save_dir" || std::find(given.begin(), given.end(), key) != given.end()) continue;
    out.push_back(key + "=" + word_value(kv.second, word + " line " + std::to_string(kv.second.Mark().line + 1) + ": " + key));
  }
  return out;
}

void expand_cfg_words(std::vector<std::string>& args, std::size_t first) {
  for (std::size_t i = first; i < args.size(); ++i) {
    if (args[i].rfind("cfg=", 0) != 0) continue;
    if (is_ultralytics_none(args[i].substr(4))) {  // cfg=None (a replayed args.yaml): no file
      args.erase(args.begin() + static_cast<long>(i--));
      continue;
    }
    std::vector<std::string> keys;
    for (const auto& a : args) {
      if (!a.empty() && a[0] != '-' && a.find('=') != std::string::npos) keys.push_back(a.substr(0, a.find('=')));
    }
    const auto words = cfg_file_words(args[i].substr(4), args[i], keys);
    args.erase(args.begin() + static_cast<long>(i));
    args.insert(args.begin() + static_cast<long>(i), words.begin(), words.end());
    if (words.empty()) {
      --i;  // the next word now stands at i
      continue;
    }
    i += words.size() - 1;
  }
}

}  // namespace yoloflow::core
