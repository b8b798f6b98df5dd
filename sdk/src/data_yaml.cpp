#include "yoloflow/data_yaml.h"

#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "yoloflow/error.h"

namespace fs = std::filesystem;

namespace yoloflow {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw InvalidInput("data.yaml '" + file + "': " + what);
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
  std::error_code ec;
  if (p.rfind("../", 0) == 0 && !fs::exists(direct, ec)) {
    const std::string stripped = resolve(root, p.substr(3));
    if (fs::exists(stripped, ec)) return stripped;
  }
  return direct;
}

std::vector<std::string> read_names(const YAML::Node& node, const std::string& file) {
  std::vector<std::string> names;
  if (node.IsSequence()) {
    for (const auto& n : node) {
      if (!n.IsScalar()) fail(file, "'names' entries must be strings");
      names.push_back(n.as<std::string>());
    }
    return names;
  }
  if (!node.IsMap()) fail(file, "'names' must be a list or a map {id: name}");
  std::map<long, std::string> by_id;
  for (const auto& kv : node) {
    long id = -1;
    try {
      id = kv.first.as<long>();
    } catch (const YAML::Exception&) {
      fail(file, "'names' key '" + kv.first.as<std::string>() + "' is not a class id");
    }
    if (id < 0) fail(file, "'names' has a negative class id " + std::to_string(id));
    if (!kv.second.IsScalar()) fail(file, "'names' value of id " + std::to_string(id) + " must be a string");
    by_id[id] = kv.second.as<std::string>();
  }
  long expected = 0;
  for (const auto& [id, name] : by_id) {
    if (id != expected) fail(file, "'names' ids must be 0..n-1 without gaps; missing id " + std::to_string(expected));
    names.push_back(name);
    ++expected;
  }
  return names;
}

}  // namespace

DataYaml read_data_yaml(const std::string& path) {
  std::error_code ec;
  const fs::path file = fs::absolute(path, ec).lexically_normal();
  // Only a regular file of a sensible size is read: a named pipe would block, a device never end.
  const auto status = fs::status(file, ec);
  switch (status.type()) {
    case fs::file_type::regular: break;
    case fs::file_type::not_found: fail(path, "file not found");
    case fs::file_type::directory: fail(path, "is a folder; name the data.yaml file inside it");
    case fs::file_type::fifo: fail(path, "is a named pipe, not a regular file");
    default:
      if (ec == std::errc::too_many_symbolic_link_levels) fail(path, "is a loop of symbolic links");
      fail(path, ec ? "cannot be read (" + ec.message() + ")" : std::string("is not a regular file"));
  }
  constexpr std::uintmax_t kMaxBytes = 64u << 20;
  if (const auto size = fs::file_size(file, ec); !ec && size > kMaxBytes) {
    fail(path, "holds " + std::to_string(size) + " bytes; a data.yaml is at most 64 MiB");
  }
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    fail(file.string(), std::string("not valid YAML: ") + e.what());
  }
  if (!doc.IsMap()) fail(file.string(), "expected a mapping with 'train', 'val' and 'names'");

  DataYaml out;
  out.file = file.string();
  const fs::path folder = file.parent_path();
  if (doc["path"] && doc["path"].IsScalar() && !doc["path"].as<std::string>().empty()) {
    out.root = resolve(folder, doc["path"].as<std::string>());
  } else {
    out.root = folder.lexically_normal().string();
  }
  if (!out.root.empty() && out.root.back() == '/' && out.root.size() > 1) out.root.pop_back();

  for (const char* split : {"train", "val", "test"}) {
    const YAML::Node n = doc[split];
    if (!n || n.IsNull()) continue;
    std::vector<std::string> entries;
    if (n.IsScalar()) {
      entries.push_back(resolve_split(out.root, n.as<std::string>()));
    } else if (n.IsSequence()) {
      for (const auto& e : n) {
        if (!e.IsScalar()) fail(out.file, std::string("'") + split + "' entries must be paths");
        entries.push_back(resolve_split(out.root, e.as<std::string>()));
      }
    } else {
      fail(out.file, std::string("'") + split + "' must be a path or a list of paths");
    }
    out.splits[split] = std::move(entries);
  }

  if (doc["names"]) {
    out.names = read_names(doc["names"], out.file);
  }
  if (doc["nc"]) {
    long nc = -1;
    try {
      nc = doc["nc"].as<long>();
    } catch (const YAML::Exception&) {
      fail(out.file, "'nc' must be an integer");
    }
    if (nc <= 0) fail(out.file, "'nc' must be positive, found " + std::to_string(nc));
    if (nc > 100000) fail(out.file, "'nc' is " + std::to_string(nc) + "; at most 100000 classes are supported");
    if (out.names.empty()) {
      for (long i = 0; i < nc; ++i) out.names.push_back("class" + std::to_string(i));
    } else if (static_cast<long>(out.names.size()) != nc) {
      fail(out.file, "'nc' is " + std::to_string(nc) + " but 'names' lists " +
                         std::to_string(out.names.size()) + " classes");
    }
  }
  if (out.names.empty()) fail(out.file, "no class names: give 'names' (list or {id: name} map)");
  return out;
}

}  // namespace yoloflow
