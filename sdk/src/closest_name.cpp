// "Did you mean": the closest of several names, for every unknown-name message.
#include "yoloflow/params.h"

#include <algorithm>
#include <cctype>
#include <limits>

namespace yoloflow {

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (best.empty()) return best;
  const std::size_t limit = std::max<std::size_t>(2, (std::max(name.size(), best.size()) + 2) / 3);
  const bool prefix = !name.empty() && (best.rfind(name, 0) == 0 || name.rfind(best, 0) == 0);
  return (best_d <= limit || prefix) ? best : std::string();
}

}  // namespace yoloflow
