// PluginLibrary: a built plugin loaded and its components created as the host does, so that a
// plugin's tests meet the same descriptor checks, schema validation and defaults as a run.
#include <dlfcn.h>

#include <memory>
#include <string>
#include <utility>

#include "yoloflow/error.h"
#include "yoloflow/testing.h"

namespace yoloflow::testing {

PluginLibrary::PluginLibrary(const std::string& path) : path_(path) {
  // Never closed: components it made, and their vtables, may outlive this object.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw Error("cannot load plugin '" + path + "': " + dlerror());
  auto fn = reinterpret_cast<yoloflow_plugin_descriptor_fn>(dlsym(handle, YOLOFLOW_DESCRIPTOR_SYMBOL));
  if (fn == nullptr) throw Error("'" + path + "' is not a yoloflow plugin: it exports no " YOLOFLOW_DESCRIPTOR_SYMBOL);
  const yoloflow_plugin_descriptor_t* d = fn();
  if (d == nullptr || d->abi_version != YOLOFLOW_SDK_ABI_VERSION) {
    throw Error("'" + path + "' was built for SDK ABI " + (d ? std::to_string(d->abi_version) : std::string("?")) +
                ", this SDK is ABI " + std::to_string(YOLOFLOW_SDK_ABI_VERSION) + ": rebuild it against this SDK");
  }
  plugin_name_ = d->name;
  d->register_components(*this);
}

PluginLibrary::~PluginLibrary() = default;

void PluginLibrary::add(ComponentInfo info) {
  for (const auto& c : components_) {
    if (c.kind == info.kind && c.name == info.name) {
      throw Error("'" + path_ + "' registers " + kind_name(info.kind) + " '" + info.name + "' twice");
    }
  }
  components_.push_back(std::move(info));
}

const ComponentInfo& PluginLibrary::info(Kind kind, const std::string& name) const {
  std::string have;
  for (const auto& c : components_) {
    if (c.kind == kind && c.name == name) return c;
    have += (have.empty() ? "" : ", ") + std::string(kind_name(c.kind)) + " '" + c.name + "'";
  }
  throw Error("'" + path_ + "' has no " + kind_name(kind) + " '" + name + "' (it registers " +
              (have.empty() ? std::string("nothing") : have) + ")");
}

Component* PluginLibrary::create(Kind kind, const std::string& name, const json& params,
                                 const StageContext& context) {
  const ComponentInfo& c = info(kind, name);
  Diagnostics problems;
  c.schema.validate(params, "params", problems, nullptr, "plugin '" + name + "'");
  if (!problems.empty()) {
    std::string text;
    for (const auto& p : problems) text += (text.empty() ? "" : "; ") + p.path + ": " + p.message;
    throw InvalidInput(text);
  }
  std::unique_ptr<Component> component(c.factory());
  StageContext ctx = context;
  if (ctx.node.empty()) ctx.node = name;
  component->configure(Params(c.schema.resolve(params, ctx.epoch, ctx.epochs), "params"), ctx);
  return component.release();
}

}  // namespace yoloflow::testing
