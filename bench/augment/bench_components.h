#pragma once
// The data benchmarks' components: a plugin component made and configured as a pipeline stage
// is (parameters checked against its schema, defaults filled in), from the build's plugins.
#include <memory>
#include <string>

#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/component.h"
#include "yoloflow/error.h"
#include "yoloflow/params.h"

namespace yoloflow::bench {

template <class T>
std::unique_ptr<T> make(core::PluginManager& pm, Kind kind, const std::string& name, const json& params,
                        int imgsz) {
  const auto* rc = pm.registry().find(kind, name);
  if (!rc) throw Error("plugin component '" + name + "' not found; is the build's plugin folder there?");
  Diagnostics diags;
  rc->info.schema.validate(params, "params", diags);
  if (!diags.empty()) throw InvalidInput(diags[0].message);
  auto c = pm.registry().create_as<T>(kind, name, "bench");
  StageContext ctx;
  ctx.node = name;
  ctx.imgsz = imgsz;
  c->configure(Params(rc->info.schema.resolve(params), "bench." + name), ctx);
  return c;
}

}  // namespace yoloflow::bench
