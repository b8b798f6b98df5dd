#include "cli/distributed_run.h"

#include <iostream>

#include "log/logging.h"
#include "yoloflow/log.h"

namespace yoloflow::cli {

DistributedRun::DistributedRun(const std::string& log_level) : env_(core::dist::read_dist_env()) {
  core::dist::install_env(env_);
  if (!env_.distributed()) return;
  if (!env_.is_main()) {
    LogLevel level = LogLevel::Info;
    core::parse_log_level(log_level, level);
    if (level < LogLevel::Warn) core::init_logging(LogLevel::Warn);
    // The command's own progress lines go to std::cout: rank 0 prints them for everyone.
    std::cout.setstate(std::ios::badbit);
  }
  YF_LOG_INFO("data parallel: " << env_.describe());
}

DistributedRun::~DistributedRun() {
  if (!ended_) core::dist::end_run(false, "it stopped with an error (its log says which)");
}

void DistributedRun::end(bool ok, const std::string& reason) {
  if (ended_) return;
  ended_ = true;
  core::dist::end_run(ok, reason);
}

}  // namespace yoloflow::cli
