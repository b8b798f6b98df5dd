// Per-epoch schedules of numeric parameters ({"steps": ...}, {"linear": ...}): checked and
// evaluated.
#include "yoloflow/params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "param_checks.h"
#include "yoloflow/error.h"

namespace yoloflow {

using namespace detail;

bool is_schedule(const json& value) {
  return value.is_object() && value.size() == 1 &&
         (value.contains("steps") || value.contains("linear"));
}

namespace {

bool parse_epoch_key(const std::string& key, long& out) {
  if (key.empty()) return false;
  std::size_t pos = 0;
  try {
    out = std::stol(key, &pos);
  } catch (...) {
    return false;
  }
  return pos == key.size();
}

}  // namespace

void validate_schedule(const json& value, const ParamSpec& spec, const std::string& path,
                       Diagnostics& out) {
  const std::string mode = value.contains("steps") ? "steps" : "linear";
  const json& points = value[mode];
  const std::string p = path + "." + mode;
  if (!points.is_object() || points.empty()) {
    out.push_back({p, "expected an object mapping epochs to values, e.g. {\"0\": 1.0, \"-10\": 0.0}"});
    return;
  }
  for (auto it = points.begin(); it != points.end(); ++it) {
    long epoch = 0;
    if (!parse_epoch_key(it.key(), epoch)) {
      out.push_back({p + "." + it.key(), "'" + it.key() +
                                             "' is not an epoch: keys are integers (negative "
                                             "counts from the end)"});
      continue;
    }
    // A schedule holds plain numbers: "auto" and fractions are resolved once, before the run.
    ParamSpec plain = spec;
    plain.specials.clear();
    plain.fraction = false;
    if (it->is_string() || is_schedule(*it)) {
      std::string not_here;
      for (const auto& special : spec.specials) not_here += (not_here.empty() ? "" : ", ") + ("\"" + special + "\"");
      if (spec.fraction) not_here += not_here.empty() ? "a fraction" : " or a fraction";
      out.push_back({p + "." + it.key(), "expected " + plain.describe_type() + ": a schedule takes plain values" +
                                             (not_here.empty() ? std::string() : " (not " + not_here + ")")});
      continue;
    }
    check_number(*it, plain, p + "." + it.key(), out);
  }
}

json evaluate_schedule(const json& value, const ParamSpec& spec, int epoch, int epochs) {
  const bool linear = value.contains("linear");
  const json& points = value[linear ? "linear" : "steps"];
  std::vector<std::pair<long, double>> pts;
  for (auto it = points.begin(); it != points.end(); ++it) {
    long e = 0;
    if (!parse_epoch_key(it.key(), e)) continue;
    if (e < 0) e = std::max<long>(0, epochs + e);
    pts.emplace_back(e, it->get<double>());
  }
  std::stable_sort(pts.begin(), pts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  double v = pts.front().second;
  if (!linear) {
    for (const auto& [e, val] : pts) {
      if (e <= epoch) v = val;
    }
  } else if (epoch >= pts.back().first) {
    v = pts.back().second;
  } else {
    for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
      if (epoch >= pts[i].first && epoch < pts[i + 1].first) {
        const double t = static_cast<double>(epoch - pts[i].first) /
                         static_cast<double>(pts[i + 1].first - pts[i].first);
        v = pts[i].second + t * (pts[i + 1].second - pts[i].second);
      }
    }
  }
  if (spec.type == ParamType::Int) return static_cast<std::int64_t>(std::llround(v));
  return v;
}

}  // namespace yoloflow
