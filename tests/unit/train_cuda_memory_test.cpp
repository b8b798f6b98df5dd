// The train sink's allocator setting: "auto" turns expandable segments on only where they can
// take effect, and never overrides what the user set.
#include <doctest/doctest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "training/device/cuda_memory.h"
#include "yoloflow/error.h"
#include "yoloflow/torch_compat.h"

using namespace yoloflow::core;

namespace {
constexpr const char* kVar = "PYTORCH_CUDA_ALLOC_CONF";

// Restores the variable as the test found it.
struct SavedAllocConf {
  std::optional<std::string> saved;
  SavedAllocConf() {
    if (const char* v = std::getenv(kVar)) saved = v;
    ::unsetenv(kVar);
  }
  ~SavedAllocConf() {
    if (saved) {
      ::setenv(kVar, saved->c_str(), 1);
    } else {
      ::unsetenv(kVar);
    }
  }
};

std::optional<std::string> alloc_conf() {
  const char* v = std::getenv(kVar);
  return v ? std::optional<std::string>(v) : std::nullopt;
}
}  // namespace

TEST_CASE("cuda_alloc_conf \"auto\": expandable segments only with CUDA and LibTorch 2.1+, never over the user's") {
#if defined(YOLOFLOW_WITH_CUDA) && YOLOFLOW_TORCH_AT_LEAST(2, 1)
  CHECK(expandable_segments_conf() == "expandable_segments:True");
#else
  CHECK(expandable_segments_conf().empty());
#endif
  SavedAllocConf guard;
  const c10::Device cpu(c10::kCPU);
  apply_cuda_alloc_conf("auto", "stages.train.params.cuda_alloc_conf", cpu);
  CHECK_FALSE(alloc_conf().has_value());  // a CPU run leaves the allocator alone

  ::setenv(kVar, "garbage_collection_threshold:0.6", 1);
  apply_cuda_alloc_conf("auto", "stages.train.params.cuda_alloc_conf", c10::Device(c10::kCUDA, 0));
  CHECK(alloc_conf() == std::string("garbage_collection_threshold:0.6"));  // the user's stays

  ::unsetenv(kVar);
  apply_cuda_alloc_conf("", "stages.train.params.cuda_alloc_conf", cpu);
  CHECK_FALSE(alloc_conf().has_value());
}

TEST_CASE("cuda_alloc_conf with a value sets PYTORCH_CUDA_ALLOC_CONF, or says why it is too late") {
  SavedAllocConf guard;
  try {
    apply_cuda_alloc_conf("expandable_segments:True", "stages.train.params.cuda_alloc_conf", c10::Device(c10::kCPU));
    CHECK(alloc_conf() == std::string("expandable_segments:True"));
  } catch (const yoloflow::InvalidInput& e) {
    // Only where an earlier test of this process created a CUDA context.
    const std::string what = e.what();
    CHECK(what.find("stages.train.params.cuda_alloc_conf") != std::string::npos);
    CHECK(what.find("CUDA was already initialised") != std::string::npos);
    CHECK_FALSE(alloc_conf().has_value());
  }
}
