#include "runtime/sweep/sweep_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/override_path.h"
#include "runtime/util/file_checks.h"
#include "runtime/words/word_values.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool is_doc_key(const std::string& key) { return key.rfind("_doc", 0) == 0; }


// The value as it reads in a run name: strings without quotes, the rest as compact JSON.
std::string value_label(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

class PlanReader {
 public:
  explicit PlanReader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw InvalidInput(file_ + ": " + (path.empty() ? "" : path + ": ") + message);
  }

  // {"path": value, ...} -> override arguments, in the document's (sorted) key order.
  std::vector<std::string> overrides(const json& object, const std::string& path) const {
    if (!object.is_object()) fail(path, "must be an object of \"dotted.path\": value pairs");
    std::vector<std::string> out;
    for (auto it = object.begin(); it != object.end(); ++it) {
      if (is_doc_key(it.key())) continue;
      check_key(it.key(), path);
      out.push_back(override_argument(it.key(), it.value()));
    }
    return out;
  }

  void check_key(const std::string& key, const std::string& path) const {
    if (key.empty() || key.find('=') != std::string::npos || key.front() == '.' || key.back() == '.') {
      fail(path + "." + key, "is not a dotted pipeline path like \"stages.train.params.lr0\"");
    }
  }

 private:
  std::string file_;
};

}  // namespace

std::string override_argument(const std::string& path, const json& value) {
  if (value.is_string()) {
    const std::string s = value.get<std::string>();
    // `lr=1e-3` given as the string "1e-3" must stay a string: quote what the command line would
    // read as another value (JSON, then Python's spellings: True, .5, 0,2).
    const json read = parse_word_value(s);
    const bool parses = !(read.is_string() && read.get<std::string>() == s);
    return path + "=" + (parses ? value.dump() : s);
  }
  return path + "=" + value.dump();
}

std::vector<std::string> short_labels(const std::vector<std::string>& keys) {
  std::vector<std::vector<std::string>> parts;
  for (const auto& k : keys) {
    std::vector<std::string> p;
    for (const auto& c : split_path(k)) {
      if (c != "params" && c != "stages") p.push_back(c);
    }
    if (p.empty()) p.push_back(k);
    parts.push_back(p);
  }
  auto suffix = [](const std::vector<std::string>& p, std::size_t n) {
    std::string s;
    for (std::size_t i = p.size() - std::min(n, p.size()); i < p.size(); ++i) s += (s.empty() ? "" : ".") + p[i];
    return s;
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::size_t n = (parts[i].back() == "plugin" && parts[i].size() > 1) ? 2 : 1;
    for (; n < parts[i].size(); ++n) {
      bool unique = true;
      for (std::size_t j = 0; j < keys.size() && unique; ++j) {
        if (j != i && suffix(parts[j], n) == suffix(parts[i], n)) unique = false;
      }
      if (unique) break;
    }
    // Keys that stay equal after dropping "params"/"stages" fall back to the full path.
    std::string label = suffix(parts[i], n);
    for (std::size_t j = 0; j < keys.size(); ++j) {
      if (j != i && suffix(parts[j], parts[j].size()) == suffix(parts[i], parts[i].size())) label = keys[i];
    }
    out.push_back(label);
  }
  return out;
}

std::string folder_name(const std::string& run_name) {
  std::string out;
  for (char c : run_name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '=' || c == ',' || c == '+' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "run" + out;
  if (out.front() == '-' || out.front() == '.') out = "_" + out;  // not an option, not hidden
  const std::size_t kMax = 100;
  if (out.size() > kMax || out != run_name) {
    // Distinct names that sanitize (or truncate) to the same text must keep distinct folders.
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : run_name) h = (h ^ c) * 1099511628211ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    if (out.size() > kMax) out = out.substr(0, kMax - 9) + "-" + std::string(hex, 8);
    else if (out != run_name) out += "-" + std::string(hex, 8);
  }
  return out;
}

SweepPlan make_sweep_plan(const json& doc, const std::string& file, const std::string& base_dir) {
  PlanReader r(file);
  if (!doc.is_object()) r.fail("", "a sweep file must be a JSON object with \"base\" and \"grid\" or \"runs\"");
  static const std::set<std::string> kKeys = {"name", "base", "grid", "runs", "overrides"};
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (!is_doc_key(it.key()) && !kKeys.count(it.key())) {
      r.fail(it.key(), "unknown key; a sweep has name, base, grid, runs, overrides (and _doc)");
    }
  }
  SweepPlan plan;
  plan.file = file;
  plan.name = fs::path(file).stem().string();
  if (auto it = doc.find("name"); it != doc.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) r.fail("name", "must be a non-empty string");
    plan.name = it->get<std::string>();
  }
  if (folder_name(plan.name) != plan.name) {
    r.fail("name", "'" + plan.name + "' must be a folder name: letters, digits and ._=,+- only");
  }
  auto base = doc.find("base");
  if (base == doc.end() || !base->is_string() || base->get<std::string>().empty()) {
    r.fail("base", "missing: the pipeline file every run starts from, relative to the sweep file");
  }
  fs::path base_path = base->get<std::string>();
  if (base_path.is_relative()) base_path = fs::path(base_dir) / base_path;
  plan.base = base_path.lexically_normal().string();

  std::vector<std::string> common;
  if (auto it = doc.find("overrides"); it != doc.end()) common = r.overrides(*it, "overrides");

  // The grid: keys in the document's (alphabetical) order, the last one varying fastest.
  std::vector<std::string> keys;
  std::vector<std::vector<json>> axes;
  if (auto it = doc.find("grid"); it != doc.end()) {
    if (!it->is_object()) r.fail("grid", "must be an object of \"dotted.path\": [values...]");
    for (auto g = it->begin(); g != it->end(); ++g) {
      if (is_doc_key(g.key())) continue;
      r.check_key(g.key(), "grid");
      if (!g.value().is_array() || g.value().empty()) {
        r.fail("grid." + g.key(), "must be a non-empty array of values");
      }
      keys.push_back(g.key());
      axes.emplace_back(g.value().begin(), g.value().end());
    }
  }
  std::set<std::string> names, folders;
  auto add_run = [&](SweepRun run, const std::string& path) {
    // A run's own value of a path the sweep-wide "overrides" also set replaces it here: the
    // command line of `yoloflow train` refuses a word given twice.
    std::vector<std::string> kept;
    for (std::size_t i = 0; i < run.overrides.size(); ++i) {
      const std::string key = run.overrides[i].substr(0, run.overrides[i].find('=')) + "=";
      const bool later = std::any_of(run.overrides.begin() + static_cast<long>(i) + 1, run.overrides.end(),
                                     [&](const std::string& o) { return o.compare(0, key.size(), key) == 0; });
      if (!later) kept.push_back(run.overrides[i]);
    }
    run.overrides = std::move(kept);
    // Plugin switches first: parameters of the new plugin only validate once it is chosen
    // (keys come sorted, and "x.params.lr0" sorts before "x.plugin").
    std::stable_partition(run.overrides.begin(), run.overrides.end(), [](const std::string& o) {
      const std::string key = o.substr(0, o.find('='));
      return key == "plugin" || (key.size() > 7 && key.compare(key.size() - 7, 7, ".plugin") == 0);
    });
    run.folder = folder_name(run.name);
    if (!names.insert(run.name).second) r.fail(path, "a second run named '" + run.name + "'");
    if (!folders.insert(run.folder).second) r.fail(path, "a second run with folder '" + run.folder + "'");
    plan.runs.push_back(std::move(run));
  };
  if (!keys.empty()) {
    const auto labels = short_labels(keys);
    std::vector<std::size_t> pick(keys.size(), 0);
    for (;;) {
      SweepRun run;
      run.overrides = common;
      for (std::size_t k = 0; k < keys.size(); ++k) {
        const json& v = axes[k][pick[k]];
        run.name += (k ? "," : "") + labels[k] + "=" + value_label(v);
        run.overrides.push_back(override_argument(keys[k], v));
      }
      add_run(std::move(run), "grid");
      std::size_t k = keys.size();
      while (k > 0 && ++pick[k - 1] == axes[k - 1].size()) pick[--k] = 0;
      if (k == 0) break;
    }
  }
  if (auto it = doc.find("runs"); it != doc.end()) {
    if (!it->is_array()) r.fail("runs", "must be an array of {\"name\": ..., \"overrides\": {...}}");
    for (std::size_t i = 0; i < it->size(); ++i) {
      const std::string path = "runs[" + std::to_string(i) + "]";
      const json& entry = (*it)[i];
      if (!entry.is_object()) r.fail(path, "must be an object {\"name\": ..., \"overrides\": {...}}");
      for (auto e = entry.begin(); e != entry.end(); ++e) {
        if (!is_doc_key(e.key()) && e.key() != "name" && e.key() != "overrides") {
          r.fail(path + "." + e.key(), "unknown key; a run has name and overrides");
        }
      }
      SweepRun run;
      run.overrides = common;
      std::vector<std::string> own;
      if (auto o = entry.find("overrides"); o != entry.end()) own = r.overrides(*o, path + ".overrides");
      run.overrides.insert(run.overrides.end(), own.begin(), own.end());
      if (auto n = entry.find("name"); n != entry.end()) {
        if (!n->is_string() || n->get<std::string>().empty()) r.fail(path + ".name", "must be a non-empty string");
        run.name = n->get<std::string>();
      } else {
        // Unnamed: named after its own overrides, like a grid point.
        const json given = entry.value("overrides", json::object());
        std::vector<std::string> okeys;
        for (auto o = given.begin(); o != given.end(); ++o) {
          if (!is_doc_key(o.key())) okeys.push_back(o.key());
        }
        if (okeys.empty()) r.fail(path, "needs a \"name\" or at least one override");
        const auto labels = short_labels(okeys);
        for (std::size_t k = 0; k < okeys.size(); ++k) {
          run.name += (k ? "," : "") + labels[k] + "=" + value_label(given.at(okeys[k]));
        }
      }
      add_run(std::move(run), path);
    }
  }
  if (plan.runs.empty()) r.fail("", "no runs: give a non-empty \"grid\" or \"runs\"");
  return plan;
}

SweepPlan load_sweep_plan(const std::string& path) {
  const std::string text = read_regular_file(path, kMaxPipelineBytes, "sweep file");
  json doc;
  Diagnostics diags;
  if (!parse_json_text(text, doc, diags)) {
    const Diagnostic& d = diags.front();
    throw InvalidInput(path + ": " + (d.path.empty() ? "" : d.path + ": ") + d.message);
  }
  const std::string dir = fs::path(path).parent_path().string();
  return make_sweep_plan(doc, path, dir.empty() ? "." : dir);
}

}  // namespace yoloflow::core
