#include "yoloflow/data_yaml.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "yoloflow/directory_walk.h"
#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace fs = std::filesystem;

namespace yoloflow {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw InvalidInput("data.yaml '" + file + "': " + what);
}

// What a YAML value is, for a message about one of the wrong type.
std::string kind_of(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a list";
  if (node.IsNull()) return "empty";
  return "'" + node.Scalar() + "'";
}

// Every value is read through these, so that a value of the wrong type is named with its key and
// its line rather than as yaml-cpp's "bad conversion".
std::string text_of(const YAML::Node& node, const std::string& file, const std::string& key, const char* expected) {
  if (!node.IsScalar()) {
    fail(file, key + " (line " + std::to_string(node.Mark().line + 1) + ") must be " + expected + ", not " +
                   kind_of(node));
  }
  return node.Scalar();
}

long integer_of(const YAML::Node& node, const std::string& file, const std::string& key) {
  const std::string text = text_of(node, file, key, "a whole number");
  long value = 0;
  if (!YAML::convert<long>::decode(node, value)) {
    fail(file, key + " (line " + std::to_string(node.Mark().line + 1) + ") must be a whole number, not '" + text + "'");
  }
  return value;
}

std::string resolve(const fs::path& base, const std::string& p) {
  fs::path path(p);
  if (path.is_relative()) path = base / path;
  return path.lexically_normal().string();
}

// A split's path; one that starts with "../" and does not exist is tried without it, as
// Ultralytics does for Roboflow's exports (their data.yaml says `train: ../train/images`
// beside a `train/` folder).
std::string resolve_split(const fs::path& root, const std::string& p) {
  const std::string direct = resolve(root, p);
  if (p.rfind("../", 0) == 0 && !unreachable_path(direct).empty()) {
    const std::string stripped = resolve(root, p.substr(3));
    if (unreachable_path(stripped).empty()) return stripped;
  }
  return direct;
}

std::vector<std::string> read_names(const YAML::Node& node, const std::string& file) {
  std::vector<std::string> names;
  if (node.IsSequence()) {
    std::size_t i = 0;
    for (const auto& n : node) names.push_back(text_of(n, file, "'names' entry " + std::to_string(i++), "a class name"));
    return names;
  }
  if (!node.IsMap()) {
    fail(file, "'names' (line " + std::to_string(node.Mark().line + 1) + ") must be a list or a map {id: name}, not " +
                   kind_of(node));
  }
  std::map<long, std::string> by_id;
  for (const auto& kv : node) {
    const long id = integer_of(kv.first, file, "'names' key");
    if (id < 0) fail(file, "'names' has a negative class id " + std::to_string(id));
    if (id > 100000) fail(file, "'names' has class id " + std::to_string(id) + "; at most 100000 classes are supported");
    by_id[id] = text_of(kv.second, file, "'names' value of id " + std::to_string(id), "a class name");
  }
  long expected = 0;
  for (const auto& [id, name] : by_id) {
    if (id != expected) fail(file, "'names' ids must be 0..n-1 without gaps; missing id " + std::to_string(expected));
    names.push_back(name);
    ++expected;
  }
  return names;
}

DataYaml parse(const YAML::Node& doc, const fs::path& file) {
  DataYaml out;
  out.file = file.string();
  if (!doc.IsMap()) fail(out.file, "expected a mapping with 'train', 'val' and 'names', not " + kind_of(doc));
  const fs::path folder = file.parent_path();
  const YAML::Node path = doc["path"];
  const std::string root = path && !path.IsNull() ? text_of(path, out.file, "'path'", "a folder") : "";
  out.root = root.empty() ? folder.lexically_normal().string() : resolve(folder, root);
  if (!out.root.empty() && out.root.back() == '/' && out.root.size() > 1) out.root.pop_back();
  // /proc, /sys...: the kernel's state, where /proc/self/cwd leads back into the run's own folder.
  if (const std::string pseudo = pseudo_file_system(out.root); !pseudo.empty()) {
    fail(out.file, "'path' " + out.root + " is on a pseudo file system (" + pseudo + "), which holds no dataset");
  }

  for (const char* split : {"train", "val", "test"}) {
    const YAML::Node n = doc[split];
    if (!n || n.IsNull()) continue;
    const std::string key = std::string("'") + split + "'";
    std::vector<std::string> entries;
    if (n.IsSequence()) {
      std::size_t i = 0;
      for (const auto& e : n) {
        entries.push_back(resolve_split(out.root, text_of(e, out.file, key + " entry " + std::to_string(i++), "a path")));
      }
    } else {
      entries.push_back(resolve_split(out.root, text_of(n, out.file, key, "a path or a list of paths")));
    }
    out.splits[split] = std::move(entries);
  }

  if (doc["names"]) out.names = read_names(doc["names"], out.file);
  if (doc["nc"]) {
    const long nc = integer_of(doc["nc"], out.file, "'nc'");
    if (nc <= 0) fail(out.file, "'nc' must be positive, found " + std::to_string(nc));
    if (nc > 100000) fail(out.file, "'nc' is " + std::to_string(nc) + "; at most 100000 classes are supported");
    if (out.names.empty()) {
      for (long i = 0; i < nc; ++i) out.names.push_back("class" + std::to_string(i));
    } else if (static_cast<long>(out.names.size()) != nc) {
      fail(out.file, "'nc' is " + std::to_string(nc) + " but 'names' lists " + std::to_string(out.names.size()) +
                         " classes");
    }
  }
  if (out.names.empty()) fail(out.file, "no class names: give 'names' (list or {id: name} map)");
  return out;
}

}  // namespace

DataYaml read_data_yaml(const std::string& path) {
  std::error_code ec;
  const fs::path file = fs::absolute(path, ec).lexically_normal();
  // A folder is named as such: the user most likely meant the data.yaml inside it.
  if (fs::is_directory(file, ec)) fail(path, "is a folder; name the data.yaml file inside it");
  // Only a regular file of a sensible size is read: a named pipe would block, a device never end.
  const std::string text = read_user_file(file.string(), kDataYamlBudget, "data.yaml '" + path + "'");
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(file.string(), std::string("not valid YAML: ") + e.what());
  }
  try {
    return parse(doc, file);
  } catch (const YAML::Exception& e) {
    // Whatever the checks above did not foresee: still one line naming the file and the place.
    fail(file.string(), "a value of an unexpected type at line " + std::to_string(e.mark.line + 1) + ", column " +
                            std::to_string(e.mark.column + 1));
  }
}

}  // namespace yoloflow
