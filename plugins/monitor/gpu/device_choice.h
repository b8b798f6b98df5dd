#pragma once
// Which GPU a run trains on, as NVML names it.
//
// CUDA index: a data-parallel run trains rank r of a node on cuda:<LOCAL_RANK> (SLURM_LOCALID
// under srun), whatever `device` says; otherwise `device` "cuda:N" means N, and "cuda"/"auto" 0.
// CUDA numbers only the devices CUDA_VISIBLE_DEVICES lists, in its order; an entry is an NVML
// index or a GPU-/MIG- UUID (looked up by UUID). Without the variable the CUDA index is taken
// as the NVML index: NVML counts in PCI bus order, as CUDA does with CUDA_DEVICE_ORDER=PCI_BUS_ID
// and, in practice, on machines of identical GPUs.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace yoloflow::gpu_monitor {

struct DeviceChoice {
  int cuda_index = 0;
  bool by_uuid = false;
  int nvml_index = 0;
  std::string uuid;
  std::string error;  // non-empty: no device could be chosen, and why
};

using GetEnv = const char* (*)(const char*);

// -1 when the run does not train on a GPU ("cpu").
inline int cuda_index_of_run(const std::string& device, GetEnv getenv = nullptr) {
  if (!getenv) getenv = [](const char* name) -> const char* { return std::getenv(name); };
  if (device == "cpu") return -1;
  const bool slurm = !getenv("WORLD_SIZE") && getenv("SLURM_NTASKS");
  const char* world = getenv(slurm ? "SLURM_NTASKS" : "WORLD_SIZE");
  if (world && std::atoi(world) > 1) {
    const char* local = getenv(slurm ? "SLURM_LOCALID" : "LOCAL_RANK");
    return local ? std::max(0, std::atoi(local)) : 0;
  }
  if (device.rfind("cuda:", 0) == 0) return std::max(0, std::atoi(device.c_str() + 5));
  return 0;
}

inline std::string trimmed(const std::string& s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

inline DeviceChoice choose_device(int cuda_index, const char* cuda_visible_devices) {
  DeviceChoice d;
  d.cuda_index = cuda_index;
  d.nvml_index = cuda_index;
  if (!cuda_visible_devices) return d;
  std::vector<std::string> entries;
  std::istringstream in(cuda_visible_devices);
  for (std::string e; std::getline(in, e, ',');) entries.push_back(trimmed(e));
  if (entries.size() == 1 && entries[0].empty()) entries.clear();
  if (cuda_index >= static_cast<int>(entries.size())) {
    d.error = "the run uses cuda:" + std::to_string(cuda_index) + " but CUDA_VISIBLE_DEVICES='" +
              cuda_visible_devices + "' makes " + std::to_string(entries.size()) + " device" +
              (entries.size() == 1 ? "" : "s") + " visible";
    return d;
  }
  const std::string& e = entries[static_cast<std::size_t>(cuda_index)];
  if (!e.empty() && e.size() < 6 && e.find_first_not_of("0123456789") == std::string::npos) {
    d.nvml_index = std::stoi(e);
  } else if (e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0) {
    d.by_uuid = true;
    d.uuid = e;
  } else {
    d.error = "cannot tell which GPU CUDA_VISIBLE_DEVICES entry '" + e +
              "' is (expected an index or a GPU-/MIG- UUID)";
  }
  return d;
}

}  // namespace yoloflow::gpu_monitor
