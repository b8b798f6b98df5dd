#include "runtime/util/process_clock.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace yoloflow::core {

double seconds_since_process_start() {
  // /proc/self/stat field 22 is the start time in clock ticks since boot; the command name
  // (field 2) may hold spaces and parentheses, so the fields are counted after its last ')'.
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (!std::getline(stat, line)) return -1.0;
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1.0;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  unsigned long long start_ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) start_ticks = std::stoull(field);
  }
  std::ifstream uptime_file("/proc/uptime");
  double uptime = 0.0;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (!(uptime_file >> uptime) || start_ticks == 0 || ticks_per_second <= 0) return -1.0;
  return uptime - static_cast<double>(start_ticks) / static_cast<double>(ticks_per_second);
}

}  // namespace yoloflow::core
