#pragma once
// Pipelines over the synthetic test plugin (tests/plugins/synthetic), for pipeline and
// graph tests.
#include <string>

#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"

namespace yoloflow::test {

inline std::string synthetic_plugin() {
  return test_plugin_dir("synthetic") + "/yoloflow_test_synthetic.so";
}

// A plugin manager with the synthetic plugin loaded (and nothing else).
inline core::PluginManager& synthetic_plugins() {
  static core::PluginManager* pm = [] {
    auto* m = new core::PluginManager();
    m->load(synthetic_plugin());
    return m;
  }();
  return *pm;
}

// source -> mark -> batch -> sink; `top` and the stages' params are spliced in as JSON text.
inline std::string synthetic_pipeline(const std::string& top = "",
                                      const std::string& source_params = "",
                                      const std::string& batch_params = "",
                                      const std::string& sink_params = "",
                                      const std::string& mark_params = "") {
  return std::string("{\n") + (top.empty() ? "" : "  " + top + ",\n") +
         "  \"stages\": {\n"
         "    \"source\": {\"plugin\": \"synthetic_source\", \"params\": {" + source_params + "}},\n"
         "    \"mark\":   {\"plugin\": \"synthetic_mark\", \"input\": \"source\", \"params\": {" + mark_params + "}},\n"
         "    \"batch\":  {\"plugin\": \"synthetic_batcher\", \"input\": \"mark\", \"params\": {" + batch_params + "}},\n"
         "    \"sink\":   {\"plugin\": \"synthetic_sink\", \"input\": \"batch\", \"params\": {" + sink_params + "}}\n"
         "  }\n"
         "}\n";
}

}  // namespace yoloflow::test
