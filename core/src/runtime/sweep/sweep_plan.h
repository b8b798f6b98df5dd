#pragma once
// A sweep file (docs/sweeps.md) turned into the list of runs it describes: the grid's
// cartesian product plus the explicit runs, each with a stable name, a filesystem-safe
// folder name and its overrides as `path=value` arguments of `yoloflow train`.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace yoloflow::core {

struct SweepRun {
  std::string name;                    // "scale=n,precision.plugin=fp32" or an explicit name
  std::string folder;                  // filesystem-safe form of `name`
  std::vector<std::string> overrides;  // sweep-wide first, then this run's (later ones win)
};

struct SweepPlan {
  std::string file;  // the sweep file
  std::string name;  // "name", else the file's stem
  std::string base;  // the base pipeline, resolved against the sweep file's folder
  std::vector<SweepRun> runs;
};

// Reads and expands a sweep file. Throws yoloflow::InvalidInput naming the file and the JSON
// path of the first problem (unknown key, empty grid axis, duplicate run name, ...).
SweepPlan load_sweep_plan(const std::string& path);
// The same from an already parsed document; `base_dir` resolves a relative "base".
SweepPlan make_sweep_plan(const nlohmann::json& document, const std::string& file, const std::string& base_dir);

// "path=value" with the value written so the override parser reads it back as the same
// JSON value (strings that would parse as a number or boolean are quoted).
std::string override_argument(const std::string& path, const nlohmann::json& value);
// Short labels of grid keys: the last path component, with enough preceding ones ("params"
// and "stages" skipped) to tell the keys apart and never a bare "plugin".
std::vector<std::string> short_labels(const std::vector<std::string>& keys);
// A folder name made of [A-Za-z0-9._=,+-] only, at most 100 characters (longer names keep
// a prefix and a hash of the whole name so they stay distinct).
std::string folder_name(const std::string& run_name);

}  // namespace yoloflow::core
