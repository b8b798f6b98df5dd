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
  struct Point {
    long epoch;
    bool from_end;  // a negative key: epochs + key
    double value;
  };
  std::vector<Point> pts;
  for (auto it = points.begin(); it != points.end(); ++it) {
    long e = 0;
    if (!parse_epoch_key(it.key(), e)) continue;
    const bool from_end = e < 0;
    // Steps keep a point counted from the end where it falls, before epoch 0 too: with
    // {"0": 1.0, "-N": 0.0} the value changes at epoch epochs - N, so for N == epochs from the
    // first epoch and for N > epochs never (Ultralytics' close_mosaic). A ramp starts at 0.
    if (from_end) e = linear ? std::max<long>(0, epochs + e) : epochs + e;
    pts.push_back({e, from_end, it->get<double>()});
  }
  // On one epoch the point counted from the end comes last, so it is the one a step takes:
  // "the last N epochs" holds even when N is all of them.
  std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    return a.epoch != b.epoch ? a.epoch < b.epoch : !a.from_end && b.from_end;
  });
  double v = pts.front().value;
  if (!linear) {
    for (const auto& p : pts) {
      if (p.epoch <= epoch) v = p.value;
    }
  } else if (epoch >= pts.back().epoch) {
    v = pts.back().value;
  } else {
    for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
      if (epoch >= pts[i].epoch && epoch < pts[i + 1].epoch) {
        const double t = static_cast<double>(epoch - pts[i].epoch) /
                         static_cast<double>(pts[i + 1].epoch - pts[i].epoch);
        v = pts[i].value + t * (pts[i + 1].value - pts[i].value);
      }
    }
  }
  if (spec.type == ParamType::Int) return static_cast<std::int64_t>(std::llround(v));
  return v;
}

}  // namespace yoloflow
