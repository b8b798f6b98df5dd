#include "runtime/plugin/descriptor_check.h"

#include <cstddef>
#include <cstdint>

namespace yoloflow::core {
namespace {

const char* const kRebuild = "; rebuild the plugin with the SDK's YOLOFLOW_PLUGIN macro";

// The fields every ABI version starts with (plugin.h: the layout is frozen up to here).
constexpr std::size_t kHeaderBytes = offsetof(yoloflow_plugin_descriptor_t, descriptor_size) + sizeof(std::uint32_t);

// Why the descriptor string `field` (its member name) cannot be read; empty when it can.
// `what` names it for a null pointer ("plugin name").
std::string string_problem(const char* s, const char* field, const char* what, const LibraryMapping& library) {
  if (s == nullptr) return std::string("its descriptor names no ") + what + " (" + field + " is null)" + kRebuild;
  if (!library.readable(s, 1)) {
    return std::string("its descriptor's ") + field + " (" + pointer_text(s) + ") points outside the library's memory" +
           kRebuild;
  }
  if (!library.terminated_string(s)) {
    return std::string("its descriptor's ") + field + " (" + pointer_text(s) +
           ") is not NUL-terminated inside the library's memory" + kRebuild;
  }
  return {};
}

}  // namespace

CheckedDescriptor check_descriptor(const yoloflow_plugin_descriptor_t* d, const LibraryMapping& library,
                                   const HostAbi& expected) {
  CheckedDescriptor out;
  auto refuse = [&](std::string problem) {
    out.problem = std::move(problem);
    return out;
  };
  if (d == nullptr) return refuse("its descriptor function returned null");
  if (reinterpret_cast<std::uintptr_t>(d) % alignof(yoloflow_plugin_descriptor_t) != 0) {
    return refuse("its descriptor function returned a misaligned pointer (" + pointer_text(d) + ")" + kRebuild);
  }
  if (!library.readable(d, kHeaderBytes)) {
    return refuse("its descriptor function returned a pointer (" + pointer_text(d) +
                  ") outside the library's memory" + kRebuild);
  }
  if (d->abi_version != expected.abi_version) {
    return refuse("SDK ABI version mismatch: host expects " + std::to_string(expected.abi_version) +
                  ", plugin was built with " + std::to_string(d->abi_version) + "; rebuild the plugin against this SDK");
  }
  if (d->descriptor_size != sizeof(yoloflow_plugin_descriptor_t)) {
    return refuse("descriptor size mismatch: host expects " + std::to_string(sizeof(yoloflow_plugin_descriptor_t)) +
                  " bytes, plugin has " + std::to_string(d->descriptor_size));
  }
  if (!library.readable(d, sizeof(yoloflow_plugin_descriptor_t))) {
    return refuse("its descriptor (" + pointer_text(d) + ", " + std::to_string(sizeof(yoloflow_plugin_descriptor_t)) +
                  " bytes) runs past the end of the library's memory" + kRebuild);
  }
  if (auto p = string_problem(d->torch_version, "torch_version", "LibTorch version", library); !p.empty()) return refuse(p);
  const std::string torch = d->torch_version;
  if (torch != "none" && torch != expected.torch_version) {
    return refuse("LibTorch version mismatch: host uses " + expected.torch_version + ", plugin was built with " + torch +
                  "; rebuild the plugin against LibTorch " + expected.torch_version);
  }
  if (d->cxx11_abi != -1 && expected.cxx11_abi != -1 && d->cxx11_abi != expected.cxx11_abi) {
    return refuse("C++ ABI mismatch: host uses _GLIBCXX_USE_CXX11_ABI=" + std::to_string(expected.cxx11_abi) +
                  ", plugin was built with " + std::to_string(d->cxx11_abi));
  }
  if (auto p = string_problem(d->name, "name", "plugin name", library); !p.empty()) return refuse(p);
  if (auto p = string_problem(d->version, "version", "plugin version", library); !p.empty()) return refuse(p);
  if (d->name[0] == '\0') return refuse(std::string("its descriptor's name is empty") + kRebuild);
  if (d->register_components == nullptr) return refuse("its descriptor has no register function");
  if (!library.executable(reinterpret_cast<const void*>(d->register_components))) {
    return refuse("its descriptor's register function (" +
                  pointer_text(reinterpret_cast<const void*>(d->register_components)) +
                  ") is not in the library's code" + kRebuild);
  }
  out.name = d->name;
  out.version = d->version;
  out.register_components = d->register_components;
  return out;
}

}  // namespace yoloflow::core
