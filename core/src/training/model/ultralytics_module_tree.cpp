// The module tree walk, bounded: a pickle can nest and repeat modules at will, so the walk
// counts modules and depth and refuses a tree no YOLO11 comes near.
#include "training/model/ultralytics_module_tree.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

using K = PickleValue::Kind;

constexpr std::size_t kMaxModules = 100000;  // yolo11x has about 600
constexpr int kMaxModuleDepth = 64;

class ModuleTreeWalk {
 public:
  explicit ModuleTreeWalk(TorchFile& file) : file_(file) {}

  // Adds the state dict of the module tree under `module` to `out`, its names prefixed.
  void collect(const PickleValue& module, const std::string& prefix, int depth, NamedTensors& out) {
    const std::string where = prefix.empty() ? std::string("(root)") : prefix.substr(0, prefix.size() - 1);
    if (++modules_ > kMaxModules) fail("is refused: its module tree has more than " + std::to_string(kMaxModules) + " modules");
    if (depth > kMaxModuleDepth) fail("is refused: its module tree is nested deeper than " + std::to_string(kMaxModuleDepth));
    if (module.kind != K::Object || !module.state || module.state->kind != K::Dict) {
      fail("is not a readable Ultralytics checkpoint: module '" + where + "' is " + module.describe() +
           " without a pickled state dict");
    }
    const PickleValue& state = *module.state;
    std::vector<std::string> non_persistent;
    if (const PickleValue* np = state.get("_non_persistent_buffers_set"); np && np->kind == K::Set) {
      for (const PickleValue* n : np->items) {
        if (n->kind == K::String) non_persistent.push_back(n->s);
      }
    }
    for (const char* group : {"_parameters", "_buffers"}) {
      const PickleValue& tensors = dict_in(state, group, where);
      for (std::size_t k = 0; k + 1 < tensors.items.size(); k += 2) {
        const PickleValue* name = tensors.items[k];
        const PickleValue* value = tensors.items[k + 1];
        if (name->kind != K::String) fail("is not a readable Ultralytics checkpoint: module '" + where + "' has a tensor name that is " + name->describe());
        if (value->kind == K::None) continue;
        if (std::strcmp(group, "_buffers") == 0 &&
            std::find(non_persistent.begin(), non_persistent.end(), name->s) != non_persistent.end()) {
          continue;
        }
        out.emplace_back(prefix + name->s, file_.tensor(*value, prefix + name->s));
      }
    }
    const PickleValue& children = dict_in(state, "_modules", where);
    for (std::size_t k = 0; k + 1 < children.items.size(); k += 2) {
      const PickleValue* name = children.items[k];
      const PickleValue* child = children.items[k + 1];
      if (name->kind != K::String) fail("is not a readable Ultralytics checkpoint: module '" + where + "' has a child name that is " + name->describe());
      if (child->kind == K::None) continue;
      collect(*child, prefix + name->s + ".", depth + 1, out);
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InvalidInput(file_.name() + " " + what); }

  const PickleValue& dict_in(const PickleValue& state, const char* key, const std::string& module) const {
    const PickleValue* v = state.get(key);
    if (!v || v->kind != K::Dict) {
      fail("is not a readable Ultralytics checkpoint: module '" + module + "' has no " + key + " dict in its pickled state");
    }
    return *v;
  }

  TorchFile& file_;
  std::size_t modules_ = 0;
};

}  // namespace

NamedTensors ultralytics_state_dict(TorchFile& file, const PickleValue& model) {
  NamedTensors out;
  ModuleTreeWalk(file).collect(model, "", 0, out);
  return out;
}

const PickleValue* ultralytics_child_module(const PickleValue* module, const std::string& name) {
  if (!module || module->kind != K::Object || !module->state) return nullptr;
  const PickleValue* children = module->state->get("_modules");
  if (!children) return nullptr;
  const PickleValue* c = children->get(name);
  return c && c->kind == K::Object ? c : nullptr;
}

}  // namespace yoloflow::core
