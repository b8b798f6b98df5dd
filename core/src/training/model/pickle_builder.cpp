// The allowlist of globals a pickle may name, and what each becomes: the data-only
// constructions are carried out, anything else stays an inert object.
#include "training/model/pickle_builder.h"

#include <string>
#include <utility>

#include "runtime/util/string_affixes.h"

namespace yoloflow::core {

bool is_allowed_global(const std::string& module, const std::string& name) {
  // Whole modules whose names are classes or data-only functions (nothing is called anyway).
  if (module == "ultralytics" || starts_with(module, "ultralytics.")) return true;
  if (starts_with(module, "torch.nn.modules.") || module == "torch.nn.parameter") return true;
  if (module == "pathlib" || module == "pathlib._local") {
    return name == "Path" || name == "PosixPath" || name == "WindowsPath" || name == "PurePath" ||
           name == "PurePosixPath" || name == "PureWindowsPath";
  }
  if (module == "datetime") {
    return name == "date" || name == "time" || name == "datetime" || name == "timedelta" || name == "timezone";
  }
  if (module == "collections") return name == "OrderedDict" || name == "defaultdict";
  if (module == "builtins" || module == "__builtin__") return name == "set" || name == "frozenset";
  if (module == "_codecs") return name == "encode";
  if (module == "numpy") return name == "dtype" || name == "ndarray";
  if (module == "numpy.core.multiarray" || module == "numpy._core.multiarray") {
    return name == "scalar" || name == "_reconstruct";
  }
  if (module == "torch._utils") {
    return name == "_rebuild_tensor" || name == "_rebuild_tensor_v2" || name == "_rebuild_parameter" ||
           name == "_rebuild_parameter_with_state";
  }
  if (module == "torch.jit._pickle") {
    return name == "restore_type_tag" || name == "build_intlist" || name == "build_doublelist" ||
           name == "build_boollist" || name == "build_tensorlist";
  }
  if (module == "torch") {
    static const char* const names[] = {"Size",     "device",   "float32",    "float",     "float64",   "double",
                                        "float16",  "half",     "bfloat16",   "int64",     "long",      "int32",
                                        "int",      "int16",    "short",      "int8",      "uint8",     "bool",
                                        "complex64", "complex128", "cfloat", "cdouble", "strided"};
    for (const char* n : names) {
      if (name == n) return true;
    }
    // torch.FloatStorage, torch.HalfStorage...: what a storage's persistent id names.
    return name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0;
  }
  return false;
}

namespace {

using K = PickleValue::Kind;

// Dict keys that stand for themselves, as Python compares them: strings, and ints (with bools).
bool hashable_key(const PickleValue* k, std::string& out) {
  if (k->kind == K::String) {
    out = "s" + k->s;
    return true;
  }
  if (k->kind == K::Int || k->kind == K::Bool) {
    out = "i" + std::to_string(k->kind == K::Bool ? static_cast<std::int64_t>(k->b) : k->i);
    return true;
  }
  return false;
}

}  // namespace

PickleBuilder::PickleBuilder() : values_(std::make_shared<std::deque<PickleValue>>()) {}

void PickleBuilder::fail(const std::string& what) const { throw UnsupportedPickle(what, at_); }

PickleValue* PickleBuilder::make(K kind) {
  if (values_->size() >= kMaxPickleValues) {
    fail("more than " + std::to_string(kMaxPickleValues) + " values (refused as too large)");
  }
  PickleValue& v = values_->emplace_back();
  v.kind = kind;
  return &v;
}

PickleValue* PickleBuilder::sequence(K kind, std::vector<PickleValue*> items) {
  PickleValue* v = make(kind);
  v->items = std::move(items);
  return v;
}

PickleValue* PickleBuilder::expect(PickleValue* v, K kind, const char* where) const {
  if (v->kind != kind) fail(std::string(where) + " on " + v->describe());
  return v;
}

std::shared_ptr<const PickleValue> PickleBuilder::share(const PickleValue* root) const {
  return std::shared_ptr<const PickleValue>(values_, root);
}

void PickleBuilder::append(PickleValue* target, const std::vector<PickleValue*>& items) {
  if (target->kind != K::List && target->kind != K::Object) fail("APPEND to " + target->describe());
  target->items.insert(target->items.end(), items.begin(), items.end());
}

void PickleBuilder::set_items(PickleValue* target, const std::vector<PickleValue*>& kv) {
  if (kv.size() % 2) fail("an odd number of dict items");
  if (target->kind == K::Object) {  // a dict subclass: its items, kept as given
    target->dict_items.insert(target->dict_items.end(), kv.begin(), kv.end());
    return;
  }
  if (target->kind != K::Dict) fail("SETITEM on " + target->describe());
  // A repeated key replaces the value and keeps the first position (Python's dict); an index
  // per dict keeps that linear in the number of items.
  auto& index = target->key_index;
  std::string key;
  for (std::size_t k = 0; k < kv.size(); k += 2) {
    if (hashable_key(kv[k], key)) {
      const auto [it, fresh] = index.emplace(key, target->items.size());
      if (!fresh) {
        target->items[it->second + 1] = kv[k + 1];
        continue;
      }
    }
    target->items.push_back(kv[k]);
    target->items.push_back(kv[k + 1]);
  }
}

void PickleBuilder::build(PickleValue* target, PickleValue* state) {
  switch (target->kind) {
    case K::Object:
      target->state = state;
      return;
    case K::Dict:    // an OrderedDict's attributes (a state dict's _metadata)
    case K::Tensor:  // a Parameter's or tensor subclass' attributes
      return;
    default:
      fail("BUILD on " + target->describe());
  }
}

PickleValue* PickleBuilder::global(const std::string& module, const std::string& name) {
  if (!is_allowed_global(module, name)) fail("global '" + module + "." + name + "' is not allowed");
  PickleValue* v = make(K::Global);
  v->s = module + "." + name;
  return v;
}

PickleValue* PickleBuilder::object_of(const std::string& cls, PickleValue* args, PickleValue* kwargs) {
  PickleValue* v = make(K::Object);
  v->s = cls;
  v->args = args;
  v->kwargs = kwargs;
  return v;
}

PickleValue* PickleBuilder::construct(const std::string& cls, PickleValue* args, PickleValue* kwargs) {
  if (cls == "collections.OrderedDict" || cls == "collections.defaultdict") return make(K::Dict);
  if (cls == "builtins.set" || cls == "__builtin__.set" || cls == "builtins.frozenset" ||
      cls == "__builtin__.frozenset") {
    return make(K::Set);
  }
  return object_of(cls, args, kwargs);
}

PickleValue* PickleBuilder::arg(PickleValue* args, std::size_t k, const std::string& fn) const {
  if (args->items.size() <= k) fail(fn + " with too few arguments");
  return args->items[k];
}

PickleValue* PickleBuilder::reduce(const std::string& fn, PickleValue* args) {
  if (fn == "collections.OrderedDict" || fn == "collections.defaultdict") {
    PickleValue* d = make(K::Dict);
    // OrderedDict([(k, v), ...]); defaultdict's argument is its default factory.
    if (fn == "collections.OrderedDict" && !args->items.empty()) {
      const PickleValue* pairs = args->items[0];
      if (pairs->kind != K::List && pairs->kind != K::Tuple) fail("OrderedDict of " + pairs->describe());
      std::vector<PickleValue*> kv;
      for (PickleValue* p : pairs->items) {
        if (p->kind != K::Tuple || p->items.size() != 2) fail("OrderedDict item that is not a pair");
        kv.push_back(p->items[0]);
        kv.push_back(p->items[1]);
      }
      set_items(d, kv);
    }
    return d;
  }
  if (fn == "builtins.set" || fn == "__builtin__.set" || fn == "builtins.frozenset" || fn == "__builtin__.frozenset") {
    PickleValue* s = make(K::Set);
    if (!args->items.empty()) {
      const PickleValue* items = args->items[0];
      if (items->kind != K::List && items->kind != K::Tuple && items->kind != K::Set) {
        fail("set of " + items->describe());
      }
      s->items = items->items;
    }
    return s;
  }
  // LibTorch: a value with its static type attached, and typed lists.
  if (fn == "torch.jit._pickle.restore_type_tag") return arg(args, 0, fn);
  if (starts_with(fn, "torch.jit._pickle.build_")) {
    PickleValue* list = arg(args, 0, fn);
    if (list->kind != K::List) fail(fn + " of " + list->describe());
    return list;
  }
  if (fn == "torch._utils._rebuild_parameter" || fn == "torch._utils._rebuild_parameter_with_state") {
    return expect(arg(args, 0, fn), K::Tensor, fn.c_str());
  }
  if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
    // (storage, storage_offset, size, stride, ...)
    PickleValue* storage = expect(arg(args, 0, fn), K::Storage, fn.c_str());
    PickleValue* v = make(K::Tensor);
    v->tensor = std::make_unique<PickledTensor>(*storage->tensor);
    v->tensor->storage_offset = expect(arg(args, 1, fn), K::Int, fn.c_str())->i;
    v->tensor->sizes = ints(arg(args, 2, fn), fn);
    v->tensor->strides = ints(arg(args, 3, fn), fn);
    if (v->tensor->sizes.size() != v->tensor->strides.size()) fail(fn + " with sizes and strides of different lengths");
    return v;
  }
  // Any other allowed global: an inert object holding its arguments (nothing is called).
  return object_of(fn, args, nullptr);
}

std::vector<std::int64_t> PickleBuilder::ints(const PickleValue* v, const std::string& fn) const {
  if (v->kind != K::Tuple) fail(fn + " with sizes that are " + v->describe());
  std::vector<std::int64_t> out;
  for (const PickleValue* x : v->items) {
    if (x->kind != K::Int) fail(fn + " with a size that is " + x->describe());
    out.push_back(x->i);
  }
  return out;
}

PickleValue* PickleBuilder::storage(const PickleValue* pid) {
  const auto& p = pid->items;
  if (p.size() < 5 || p[0]->kind != K::String || p[0]->s != "storage") fail("a persistent id that is not a storage");
  if (p[1]->kind != K::Global || !starts_with(p[1]->s, "torch.")) fail("a storage whose type is " + p[1]->describe());
  if (p[2]->kind != K::String) fail("a storage whose key is " + p[2]->describe());
  if (p[4]->kind != K::Int) fail("a storage whose size is " + p[4]->describe());
  PickleValue* v = make(K::Storage);
  v->tensor = std::make_unique<PickledTensor>();
  v->tensor->storage_type = p[1]->s.substr(6);
  v->tensor->storage_key = p[2]->s;
  v->tensor->storage_numel = p[4]->i;
  return v;
}

}  // namespace yoloflow::core
