#include "runtime/dist/dist_env.h"

#include <cerrno>
#include <cstdlib>

#include "yoloflow/error.h"

namespace yoloflow::core::dist {
namespace {

// An integer variable, or `fallback` when unset or empty.
int int_var(const GetEnv& getenv, const char* name, int fallback, int min_value) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || n < min_value || n > 1 << 20) {
    throw InvalidInput(std::string("environment variable ") + name + "='" + v + "' is not an integer >= " +
                       std::to_string(min_value));
  }
  return static_cast<int>(n);
}

bool has(const GetEnv& getenv, const char* name) {
  const char* v = getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

std::string DistEnv::describe() const {
  std::string s = "rank " + std::to_string(rank) + "/" + std::to_string(world_size) + " (local " +
                  std::to_string(local_rank) + ") via " + launcher;
  if (distributed()) {
    s += ", store " + master_addr + ":" + std::to_string(master_port) + (agent_store ? " (torchrun's)" : "");
  }
  return s;
}

DistEnv read_dist_env(const GetEnv& getenv_in) {
  const GetEnv getenv = getenv_in ? getenv_in : GetEnv([](const char* n) { return std::getenv(n); });
  DistEnv e;
  const char* rank_var = "RANK";
  const char* world_var = "WORLD_SIZE";
  const char* local_var = "LOCAL_RANK";
  if (has(getenv, "WORLD_SIZE") || has(getenv, "RANK")) {
    e.launcher = has(getenv, "TORCHELASTIC_RUN_ID") ? "torchrun" : "env";
  } else if (has(getenv, "SLURM_PROCID") && has(getenv, "SLURM_NTASKS")) {
    e.launcher = "slurm";
    rank_var = "SLURM_PROCID";
    world_var = "SLURM_NTASKS";
    local_var = "SLURM_LOCALID";
  } else {
    return e;  // one process
  }
  e.world_size = int_var(getenv, world_var, 1, 1);
  e.rank = int_var(getenv, rank_var, 0, 0);
  if (e.rank >= e.world_size) {
    throw InvalidInput(std::string("environment variable ") + rank_var + "=" + std::to_string(e.rank) +
                       " is not below " + world_var + "=" + std::to_string(e.world_size));
  }
  e.local_rank = int_var(getenv, local_var, 0, 0);
  e.local_world_size = int_var(getenv, e.launcher == "slurm" ? "SLURM_NTASKS_PER_NODE" : "LOCAL_WORLD_SIZE",
                               e.world_size, 1);
  if (!e.distributed()) return e;

  if (!has(getenv, "MASTER_ADDR")) {
    throw InvalidInput(std::string(world_var) + "=" + std::to_string(e.world_size) +
                       " asks for a distributed run, but MASTER_ADDR is not set: export the host of rank 0 "
                       "(e.g. MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)) and "
                       "MASTER_PORT");
  }
  e.master_addr = getenv("MASTER_ADDR");
  e.master_port = int_var(getenv, "MASTER_PORT", 29500, 1);
  if (e.master_port > 65535) {
    throw InvalidInput("environment variable MASTER_PORT=" + std::to_string(e.master_port) +
                       " is not a TCP port (1..65535)");
  }
  const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE");
  e.agent_store = agent != nullptr && (std::string(agent) == "True" || std::string(agent) == "true" ||
                                       std::string(agent) == "1");
  e.restart_count = int_var(getenv, "TORCHELASTIC_RESTART_COUNT", 0, 0);
  return e;
}

}  // namespace yoloflow::core::dist
