#pragma once
// Which process of a data-parallel run this is, read from the environment the standard
// launchers set: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, with MASTER_ADDR/MASTER_PORT exported by the job script).
// No LibTorch here: the CLI and the graph runner read it without the c10d headers.
#include <functional>
#include <string>

namespace yoloflow::core::dist {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;        // picks the GPU: cuda:<local_rank>
  int local_world_size = 1;
  std::string master_addr;   // host of the rendezvous store (rank 0's TCPStore, or torchrun's)
  int master_port = 29500;
  // torchrun's agent already serves a TCPStore at MASTER_ADDR:MASTER_PORT: connect to it
  // (under /worker/attempt_<restart_count>) instead of starting one on rank 0.
  bool agent_store = false;
  int restart_count = 0;
  std::string launcher = "none";  // "torchrun", "env" (RANK/WORLD_SIZE set by hand), "slurm"

  bool distributed() const { return world_size > 1; }
  bool is_main() const { return rank == 0; }
  // "rank 1/2 (local 1) via torchrun, store 127.0.0.1:29500"
  std::string describe() const;
};

using GetEnv = std::function<const char*(const char*)>;

// Reads the environment (std::getenv when `getenv` is empty). One process (world 1) when no
// launcher variables are set. Throws yoloflow::InvalidInput naming the variable when a value
// is malformed or inconsistent (RANK >= WORLD_SIZE, missing MASTER_ADDR, ...).
DistEnv read_dist_env(const GetEnv& getenv = {});

}  // namespace yoloflow::core::dist
