#pragma once
// The data path allocates and frees image-sized buffers (a 4.9 MB mosaic canvas, 1.2 MB
// warps, cache copies) thousands of times a second. With glibc's defaults, freed memory at
// the top of a heap goes back to the OS and large blocks are fresh mappings, so every new
// buffer page-faults again on first write (measured on the 2-core machine: the fused chain
// from the RAM cache on one thread, 272-308 img/s with the defaults, 393-409 with freed
// memory kept; docs/performance.md).
namespace yoloflow::core {

// Once per process (later calls do nothing): blocks up to 32 MB (glibc's largest allowed
// threshold) come from the heap instead of their own mappings, and up to 1 GB of freed heap
// stays mapped for reuse. Skipped when GLIBC_TUNABLES sets malloc options (the user's
// choice wins) or the C library is not glibc. Returns whether the settings were applied.
bool keep_freed_memory_mapped();

}  // namespace yoloflow::core
