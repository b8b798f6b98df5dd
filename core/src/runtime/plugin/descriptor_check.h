#pragma once
// Reading a plugin's descriptor without trusting it. The descriptor function is plugin code
// and may return any pointer; the descriptor may hold any pointers. Each is checked against the
// memory of that very library before the host reads through it or calls it, and the versions
// against the host's, so a broken or foreign descriptor is refused with one line instead of
// crashing the host.
#include <string>

#include "runtime/plugin/library_mapping.h"
#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/plugin.h"

namespace yoloflow::core {

struct CheckedDescriptor {
  std::string problem;  // empty: the descriptor may be used
  std::string name, version;
  void (*register_components)(Registrar&) = nullptr;
};

// Checks, in this order (the layout is frozen only up to abi_version and descriptor_size): the
// pointer and the two version fields inside the library's readable memory, the SDK ABI version,
// the descriptor's size, the whole descriptor inside the library's readable memory, the
// LibTorch version and the C++ ABI, the name and version strings (inside the library,
// NUL-terminated there), the register function (inside the library's code).
CheckedDescriptor check_descriptor(const yoloflow_plugin_descriptor_t* descriptor, const LibraryMapping& library,
                                   const HostAbi& expected);

}  // namespace yoloflow::core
