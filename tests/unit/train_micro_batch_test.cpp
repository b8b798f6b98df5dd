// Micro-batch chunking and the out-of-memory guard's pieces: which errors count as out of
// memory (a real failed allocation of LibTorch's CPU allocator), how the micro-batch halves and
// where it stops.
#include <doctest/doctest.h>

#include <new>
#include <string>

#include <c10/util/Exception.h>
#include <torch/torch.h>

#include "train/micro_batches.h"
#include "train/oom_guard.h"
#include "yoloflow/error.h"

using namespace yoloflow::core;

namespace {

std::string sizes_of(const std::vector<MicroBatch>& chunks) {
  std::string s;
  std::int64_t next = 0;
  for (const auto& c : chunks) {
    CHECK(c.start == next);  // consecutive, no gap or overlap
    next = c.start + c.size;
    s += (s.empty() ? "" : ",") + std::to_string(c.size);
  }
  return s;
}

}  // namespace

TEST_CASE("micro_batches covers the batch in even chunks of at most micro_batch images") {
  CHECK(sizes_of(micro_batches(16, 0)) == "16");   // 0: the whole batch
  CHECK(sizes_of(micro_batches(16, 32)) == "16");  // above the batch: the whole batch
  CHECK(sizes_of(micro_batches(16, 8)) == "8,8");
  CHECK(sizes_of(micro_batches(16, 1)) == "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1");
  CHECK(sizes_of(micro_batches(10, 4)) == "4,3,3");  // no 2-image remainder chunk
  CHECK(sizes_of(micro_batches(7, 2)) == "2,2,2,1");
  CHECK(micro_batches(0, 4).empty());
}

TEST_CASE("a failed allocation of LibTorch's CPU allocator counts as out of memory") {
  bool thrown = false;
  try {
    // 1 PiB: more than any address space allows, so the allocator itself fails.
    auto t = torch::empty({std::int64_t{1} << 50}, torch::kUInt8);
    (void)t;
  } catch (const std::exception& e) {
    thrown = true;
    INFO(e.what());
    CHECK(is_out_of_memory(e));
    const auto message = short_message(e);
    CHECK(message.find("DefaultCPUAllocator") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  CHECK(thrown);
  CHECK(is_out_of_memory(std::bad_alloc()));
  CHECK(is_out_of_memory(c10::OutOfMemoryError(c10::SourceLocation{"f", "file.cpp", 1}, "CUDA out of memory. Tried to allocate 2.00 GiB")));
  // Other LibTorch errors (a shape mismatch) and plain errors are not retried.
  bool other = false;
  try {
    (void)torch::ones({2, 3}).matmul(torch::ones({2, 3}));
  } catch (const std::exception& e) {
    other = true;
    CHECK_FALSE(is_out_of_memory(e));
  }
  CHECK(other);
  CHECK_FALSE(is_out_of_memory(yoloflow::Error("not enough memory")));
}

TEST_CASE("the micro-batch halves from the batch and stops below one image with a clear error") {
  CHECK(halved_micro_batch(0, 16, "x") == 8);
  CHECK(halved_micro_batch(8, 16, "x") == 4);
  CHECK(halved_micro_batch(5, 16, "x") == 2);
  CHECK(halved_micro_batch(64, 16, "x") == 8);  // above the batch: the batch is what ran
  CHECK(halved_micro_batch(2, 16, "x") == 1);
  try {
    halved_micro_batch(1, 16, "CUDA out of memory");
    FAIL("no error below one image");
  } catch (const yoloflow::Error& e) {
    const std::string what = e.what();
    CHECK(what.find("micro-batch of 1 image") != std::string::npos);
    CHECK(what.find("CUDA out of memory") != std::string::npos);
  }
}
