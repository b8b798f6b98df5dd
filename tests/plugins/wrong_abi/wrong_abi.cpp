// A plugin built against an SDK with another ABI version: its descriptor is written out by
// hand, as an old SDK's macro would have.
#include "yoloflow/plugin.h"

namespace {
void register_nothing(yoloflow::Registrar&) {}
}

extern "C" YOLOFLOW_EXPORT const yoloflow_plugin_descriptor_t* yoloflow_plugin_descriptor() {
  static const yoloflow_plugin_descriptor_t d = {
      YOLOFLOW_SDK_ABI_VERSION + 41, sizeof(yoloflow_plugin_descriptor_t), "test_wrong_abi", "1.0.0",
      "0.0.1", YOLOFLOW_PLUGIN_TORCH_VERSION, YOLOFLOW_PLUGIN_CXX11_ABI, YOLOFLOW_PLUGIN_COMPILER,
      &register_nothing};
  return &d;
}
