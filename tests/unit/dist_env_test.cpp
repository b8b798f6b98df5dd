// Reading torchrun's and srun's environment: ranks, the store address, bad values named.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "runtime/dist/dist_env.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using namespace yoloflow::core::dist;

namespace {
DistEnv read(const std::map<std::string, std::string>& vars) {
  return read_dist_env([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
std::string error_of(const std::map<std::string, std::string>& vars) {
  try {
    read(vars);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("dist env: no launcher variables is one process") {
  const DistEnv e = read({{"PATH", "/usr/bin"}});
  CHECK(e.world_size == 1);
  CHECK(e.rank == 0);
  CHECK_FALSE(e.distributed());
  CHECK(e.is_main());
  CHECK(e.launcher == "none");
}

TEST_CASE("dist env: torchrun's variables, agent store and restart count") {
  const DistEnv e = read({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                          {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"}, {"TORCHELASTIC_RUN_ID", "x"},
                          {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  CHECK(e.rank == 3);
  CHECK(e.world_size == 4);
  CHECK(e.local_rank == 1);
  CHECK(e.local_world_size == 2);
  CHECK(e.master_addr == "node7");
  CHECK(e.master_port == 29400);
  CHECK(e.agent_store);
  CHECK(e.restart_count == 2);
  CHECK(e.launcher == "torchrun");
  CHECK(e.distributed());
  CHECK_FALSE(e.is_main());
  CHECK(e.describe().find("rank 3/4") != std::string::npos);
}

TEST_CASE("dist env: Slurm's SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID with MASTER_ADDR") {
  const DistEnv e = read({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                          {"MASTER_ADDR", "10.0.0.1"}});
  CHECK(e.launcher == "slurm");
  CHECK(e.rank == 5);
  CHECK(e.world_size == 8);
  CHECK(e.local_rank == 1);
  CHECK(e.master_port == 29500);  // PyTorch's default when MASTER_PORT is unset
  CHECK_FALSE(e.agent_store);
  // RANK/WORLD_SIZE win over Slurm's (torchrun started inside a Slurm job).
  const DistEnv t = read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"RANK", "1"}, {"WORLD_SIZE", "2"},
                          {"MASTER_ADDR", "h"}});
  CHECK(t.rank == 1);
  CHECK(t.world_size == 2);
  CHECK(t.launcher == "env");
  // One Slurm task is one process, no MASTER_ADDR needed.
  CHECK_FALSE(read({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}}).distributed());
}

TEST_CASE("dist env: malformed or inconsistent values are named") {
  CHECK(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("RANK='x'") != std::string::npos);
  CHECK(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("not below WORLD_SIZE=2") !=
        std::string::npos);
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0'") != std::string::npos);
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).find("MASTER_ADDR is not set") != std::string::npos);
  CHECK(error_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}).find("MASTER_ADDR") != std::string::npos);
  CHECK(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}})
            .find("MASTER_PORT=70000") != std::string::npos);
}
