// A stand-in for the NVIDIA driver's libnvidia-ml, for the gpu monitor's tests on machines
// without a GPU: the NVML functions the monitor loads, with the real signatures, over two
// devices whose counters are constant (so a test knows every reading exactly):
//   device i: name "Fake GPU i", UUID "GPU-fake-i", utilisation 40+10i % (memory 20 %),
//             memory used 5+i GiB of 80 GiB, power 300+i W, SM clock 1500+i MHz.
#include <cstring>

namespace {
constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotFound = 6;
constexpr unsigned long long kGiB = 1024ull * 1024ull * 1024ull;
struct FakeDevice {
  unsigned int index;
};
FakeDevice g_devices[2] = {{0}, {1}};
bool g_initialised = false;
}  // namespace

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

static FakeDevice* device_of(nvmlDevice_t d) { return reinterpret_cast<FakeDevice*>(d); }

extern "C" {
__attribute__((visibility("default"))) int nvmlInit_v2() {
  g_initialised = true;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlShutdown() {
  g_initialised = false;
  return kSuccess;
}
__attribute__((visibility("default"))) const char* nvmlErrorString(int r) {
  switch (r) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotFound: return "Not Found";
    default: return "Unknown Error";
  }
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* out) {
  if (!g_initialised) return kUninitialized;
  if (index >= 2 || !out) return kInvalidArgument;
  *out = reinterpret_cast<nvmlDevice_t>(&g_devices[index]);
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* out) {
  if (!g_initialised) return kUninitialized;
  for (unsigned int i = 0; i < 2; ++i) {
    const char expected[] = {'G', 'P', 'U', '-', 'f', 'a', 'k', 'e', '-', static_cast<char>('0' + i), '\0'};
    if (std::strcmp(uuid, expected) == 0) {
      *out = reinterpret_cast<nvmlDevice_t>(&g_devices[i]);
      return kSuccess;
    }
  }
  return kNotFound;
}
__attribute__((visibility("default"))) int nvmlDeviceGetName(nvmlDevice_t d, char* name, unsigned int length) {
  const char base[] = "Fake GPU ";
  if (length < sizeof base + 1) return kInvalidArgument;
  std::memcpy(name, base, sizeof base - 1);
  name[sizeof base - 1] = static_cast<char>('0' + device_of(d)->index);
  name[sizeof base] = '\0';
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) {
  u->gpu = 40 + 10 * device_of(d)->index;
  u->memory = 20;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  m->total = 80 * kGiB;
  m->used = (5 + device_of(d)->index) * kGiB;
  m->free = m->total - m->used;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int* milliwatts) {
  *milliwatts = (300 + device_of(d)->index) * 1000;
  return kSuccess;
}
__attribute__((visibility("default"))) int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int* mhz) {
  if (type != 1) return kInvalidArgument;  // only NVML_CLOCK_SM
  *mhz = 1500 + device_of(d)->index;
  return kSuccess;
}
}
