#include "runtime/sweep/run_state.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "runtime/pipeline/json_text.h"
#include "runtime/run/results_csv.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/user_file.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* kMarker = "sweep-status.json";

bool read_json(const std::string& path, json& out) {
  // Through the bounded reader: a marker is a few hundred bytes, and a named pipe put in its
  // place must not block the sweep.
  std::string text, why;
  if (!try_read_user_file(path, FileBudget{std::uint64_t{1} << 20, "a sweep status file"}, text, why)) return false;
  // A torn or foreign file counts as absent; read as every JSON text is (strict, bounded).
  Diagnostics ignored;
  return parse_json_text(text, out, ignored);
}

}  // namespace

bool RunState::finished() const {
  return marker.status == "done" || (epochs > 0 && epochs_done >= epochs);
}

std::string RunState::status() const {
  if (finished()) return "done";
  if (marker.status == "failed") return "failed";
  if (marker.status == "running") return "running";
  if (marker.status == "interrupted" || has_checkpoint) return "interrupted";
  return "pending";
}

RunState read_run_state(const std::string& dir) {
  RunState s;
  json m;
  if (read_json(dir + "/" + kMarker, m) && m.is_object()) {
    s.marker.status = m.value("status", "");
    s.marker.reason = m.value("reason", "");
    s.marker.invalid = m.value("invalid", false);
  }
  json p;
  if (read_json(dir + "/pipeline.json", p) && p.is_object() && p.contains("epochs") && p["epochs"].is_number_integer() &&
      p["epochs"].get<std::int64_t>() > 0 && p["epochs"].get<std::int64_t>() <= 100000) {
    s.epochs = p["epochs"].get<int>();
  }
  if (fs::exists(dir + "/results.csv")) {
    try {
      ResultsCsv csv(dir + "/results.csv");
      csv.load();
      s.epochs_done = static_cast<int>(csv.rows().size());
    } catch (const std::exception&) {
      s.epochs_done = 0;
    }
  }
  s.has_checkpoint = fs::exists(dir + "/weights/last.pt") && fs::exists(dir + "/pipeline.json");
  return s;
}

void write_run_marker(const std::string& dir, const RunMarker& marker) {
  json m = {{"status", marker.status}, {"reason", marker.reason}, {"invalid", marker.invalid}};
  write_file_atomic(dir + "/" + kMarker, m.dump(2) + "\n");
}

}  // namespace yoloflow::core
