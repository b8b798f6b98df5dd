// Python pickle opcodes (protocols 2 to 5), as documented in CPython's Lib/pickletools.py.
#include "training/model/restricted_unpickler.h"

#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
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

const PickleValue* PickleValue::get(const std::string& key) const {
  if (kind != Kind::Dict) return nullptr;
  const auto it = key_index.find("s" + key);
  return it == key_index.end() ? nullptr : items[it->second + 1];
}

std::string PickleValue::describe() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::String: return "a string";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Set: return "a set";
    case Kind::Global: return "the class " + s;
    case Kind::Object: return "an object " + s;
    case Kind::Storage: return "a storage";
    case Kind::Tensor: return "a tensor";
  }
  return "a value";
}

namespace {

using K = PickleValue::Kind;

// Owns every value of one pickle.
struct Arena {
  std::deque<PickleValue> values;
};

class Unpickler {
 public:
  explicit Unpickler(std::string_view bytes) : in_(bytes), arena_(std::make_shared<Arena>()) {}

  std::shared_ptr<const PickleValue> run() {
    while (true) {
      at_ = pos_;
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: {                                   // PROTO
          const auto version = static_cast<unsigned char>(byte());
          if (version > 5) fail("pickle protocol " + std::to_string(version) + " (at most 5 is known)");
          break;
        }
        case 0x95: take(8); break;                     // FRAME: framing only
        case '.': {                                    // STOP
          PickleValue* root = pop();
          return std::shared_ptr<const PickleValue>(arena_, root);
        }
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '0': pop(); break;                        // POP
        case '1': pop_mark(); break;                   // POP_MARK
        case '2': push(top()); break;                  // DUP
        case 'N': push(make(K::None)); break;
        case 0x88: push_bool(true); break;             // NEWTRUE
        case 0x89: push_bool(false); break;            // NEWFALSE
        case 'J': push_int(static_cast<std::int32_t>(le(4))); break;  // BININT
        case 'K': push_int(static_cast<std::int64_t>(le(1))); break;  // BININT1
        case 'M': push_int(static_cast<std::int64_t>(le(2))); break;  // BININT2
        case 0x8a: push_int(long_n(le(1))); break;     // LONG1
        case 0x8b: push_int(long_n(le(4))); break;     // LONG4
        case 'G': {                                    // BINFLOAT: big-endian double
          std::uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(byte());
          PickleValue* v = make(K::Float);
          std::memcpy(&v->f, &bits, sizeof bits);
          push(v);
          break;
        }
        case 'X': push_text(K::String, le(4)); break;  // BINUNICODE
        case 0x8c: push_text(K::String, le(1)); break; // SHORT_BINUNICODE
        case 0x8d: push_text(K::String, le(8)); break; // BINUNICODE8
        case 'T': push_text(K::String, le(4)); break;  // BINSTRING (Python 2 str)
        case 'U': push_text(K::String, le(1)); break;  // SHORT_BINSTRING
        case 'B': push_text(K::Bytes, le(4)); break;   // BINBYTES
        case 'C': push_text(K::Bytes, le(1)); break;   // SHORT_BINBYTES
        case 0x8e: push_text(K::Bytes, le(8)); break;  // BINBYTES8
        case 0x96: push_text(K::Bytes, le(8)); break;  // BYTEARRAY8
        case ')': push(make(K::Tuple)); break;         // EMPTY_TUPLE
        case 't': push(sequence(K::Tuple, pop_mark())); break;  // TUPLE
        case 0x85: case 0x86: case 0x87: {             // TUPLE1..3
          const std::size_t n = op - 0x84;
          std::vector<PickleValue*> items(n);
          for (std::size_t k = n; k-- > 0;) items[k] = pop();
          push(sequence(K::Tuple, std::move(items)));
          break;
        }
        case ']': push(make(K::List)); break;          // EMPTY_LIST
        case 'l': push(sequence(K::List, pop_mark())); break;  // LIST
        case 'a': {                                    // APPEND
          PickleValue* v = pop();
          append(top(), {v});
          break;
        }
        case 'e': {                                    // APPENDS
          auto items = pop_mark();
          append(top(), items);
          break;
        }
        case '}': push(make(K::Dict)); break;          // EMPTY_DICT
        case 'd': {                                    // DICT
          auto items = pop_mark();
          PickleValue* d = make(K::Dict);
          set_items(d, items);
          push(d);
          break;
        }
        case 's': {                                    // SETITEM
          PickleValue* v = pop();
          PickleValue* k = pop();
          set_items(top(), {k, v});
          break;
        }
        case 'u': {                                    // SETITEMS
          auto items = pop_mark();
          set_items(top(), items);
          break;
        }
        case 0x8f: push(make(K::Set)); break;          // EMPTY_SET
        case 0x90: {                                   // ADDITEMS
          auto items = pop_mark();
          PickleValue* set = expect(top(), K::Set, "ADDITEMS");
          set->items.insert(set->items.end(), items.begin(), items.end());
          break;
        }
        case 0x91: push(sequence(K::Set, pop_mark())); break;  // FROZENSET
        case 'c': {                                    // GLOBAL
          const std::string module = line();
          const std::string name = line();
          push_global(module, name);
          break;
        }
        case 0x93: {                                   // STACK_GLOBAL
          PickleValue* name = pop();
          PickleValue* module = pop();
          if (module->kind != K::String || name->kind != K::String) fail("STACK_GLOBAL without two strings");
          push_global(module->s, name->s);
          break;
        }
        case 'R': {                                    // REDUCE
          PickleValue* args = expect(pop(), K::Tuple, "REDUCE");
          PickleValue* fn = expect(pop(), K::Global, "REDUCE");
          push(reduce(fn->s, args));
          break;
        }
        case 0x81: {                                   // NEWOBJ: cls.__new__(cls, *args)
          PickleValue* args = expect(pop(), K::Tuple, "NEWOBJ");
          PickleValue* cls = expect(pop(), K::Global, "NEWOBJ");
          push(construct(cls->s, args, nullptr));
          break;
        }
        case 0x92: {                                   // NEWOBJ_EX: cls.__new__(cls, *args, **kwargs)
          PickleValue* kwargs = expect(pop(), K::Dict, "NEWOBJ_EX");
          PickleValue* args = expect(pop(), K::Tuple, "NEWOBJ_EX");
          PickleValue* cls = expect(pop(), K::Global, "NEWOBJ_EX");
          push(construct(cls->s, args, kwargs));
          break;
        }
        case 'b': {                                    // BUILD: __setstate__ or __dict__.update
          PickleValue* state = pop();
          build(top(), state);
          break;
        }
        case 'Q': push(storage(expect(pop(), K::Tuple, "BINPERSID"))); break;  // BINPERSID
        case 'h': push(memo_get(le(1))); break;        // BINGET
        case 'j': push(memo_get(le(4))); break;        // LONG_BINGET
        case 'q': memo_[le(1)] = top(); break;         // BINPUT
        case 'r': memo_[le(4)] = top(); break;         // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break; // MEMOIZE
        default: {
          // Also the text opcodes of protocols 0 and 1 (INST and OBJ import by name), the
          // extension registry (EXT1/2/4) and out-of-band buffers: nothing PyTorch writes.
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(std::string("unsupported opcode ") + hex);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UnsupportedPickle(what, at_);
  }

  PickleValue* make(K kind) {
    if (arena_->values.size() >= kMaxPickleValues) {
      fail("more than " + std::to_string(kMaxPickleValues) + " values (refused as too large)");
    }
    PickleValue& v = arena_->values.emplace_back();
    v.kind = kind;
    return &v;
  }

  char byte() {
    if (pos_ >= in_.size()) fail("the pickle ends without STOP");
    return in_[pos_++];
  }

  std::string_view take(std::uint64_t n) {
    if (n > in_.size() - pos_) {
      fail("a length of " + std::to_string(n) + " bytes where " + std::to_string(in_.size() - pos_) + " are left");
    }
    const auto s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  std::uint64_t le(int n) {
    const auto s = take(static_cast<std::uint64_t>(n));
    std::uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(s[k])) << (8 * k);
    return v;
  }

  // LONG1/LONG4: little-endian two's complement of n bytes.
  std::int64_t long_n(std::uint64_t n) {
    if (n > 8) fail("an integer wider than 64 bits");
    if (n == 0) return 0;
    std::uint64_t v = le(static_cast<int>(n));
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<std::int64_t>(v);
  }

  std::string line() {
    const auto end = in_.find('\n', pos_);
    if (end == std::string_view::npos || end - pos_ > 1000) fail("GLOBAL without a name line");
    std::string s(in_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }

  void push(PickleValue* v) { stack_.push_back(v); }
  PickleValue* pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("stack underflow");
    PickleValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleValue* top() const {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  std::vector<PickleValue*> pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const auto m = marks_.back();
    marks_.pop_back();
    std::vector<PickleValue*> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  PickleValue* memo_get(std::uint64_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) fail("unknown memo slot " + std::to_string(k));
    return it->second;
  }
  PickleValue* expect(PickleValue* v, K kind, const char* where) const {
    if (v->kind != kind) fail(std::string(where) + " on " + v->describe());
    return v;
  }

  void push_bool(bool b) {
    PickleValue* v = make(K::Bool);
    v->b = b;
    push(v);
  }
  void push_int(std::int64_t i) {
    PickleValue* v = make(K::Int);
    v->i = i;
    push(v);
  }
  void push_text(K kind, std::uint64_t n) {
    const auto s = take(n);
    PickleValue* v = make(kind);
    v->s.assign(s.data(), s.size());
    push(v);
  }
  PickleValue* sequence(K kind, std::vector<PickleValue*> items) {
    PickleValue* v = make(kind);
    v->items = std::move(items);
    return v;
  }

  void push_global(const std::string& module, const std::string& name) {
    if (!is_allowed_global(module, name)) fail("global '" + module + "." + name + "' is not allowed");
    PickleValue* v = make(K::Global);
    v->s = module + "." + name;
    push(v);
  }

  void append(PickleValue* target, const std::vector<PickleValue*>& items) {
    if (target->kind != K::List && target->kind != K::Object) fail("APPEND to " + target->describe());
    target->items.insert(target->items.end(), items.begin(), items.end());
  }

  // Dict keys that stand for themselves, as Python compares them: strings, and ints (with bools).
  static bool hashable_key(const PickleValue* k, std::string& out) {
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

  void set_items(PickleValue* target, const std::vector<PickleValue*>& kv) {
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

  void build(PickleValue* target, PickleValue* state) {
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

  PickleValue* object_of(const std::string& cls, PickleValue* args, PickleValue* kwargs) {
    PickleValue* v = make(K::Object);
    v->s = cls;
    v->args = args;
    v->kwargs = kwargs;
    return v;
  }

  // NEWOBJ(_EX): a dict, a set, or an inert object of that class.
  PickleValue* construct(const std::string& cls, PickleValue* args, PickleValue* kwargs) {
    if (cls == "collections.OrderedDict" || cls == "collections.defaultdict") return make(K::Dict);
    if (cls == "builtins.set" || cls == "__builtin__.set" || cls == "builtins.frozenset" ||
        cls == "__builtin__.frozenset") {
      return make(K::Set);
    }
    return object_of(cls, args, kwargs);
  }

  PickleValue* arg(PickleValue* args, std::size_t k, const std::string& fn) const {
    if (args->items.size() <= k) fail(fn + " with too few arguments");
    return args->items[k];
  }

  PickleValue* reduce(const std::string& fn, PickleValue* args) {
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

  std::vector<std::int64_t> ints(const PickleValue* v, const std::string& fn) const {
    if (v->kind != K::Tuple) fail(fn + " with sizes that are " + v->describe());
    std::vector<std::int64_t> out;
    for (const PickleValue* x : v->items) {
      if (x->kind != K::Int) fail(fn + " with a size that is " + x->describe());
      out.push_back(x->i);
    }
    return out;
  }

  // torch.save's persistent id of a storage: ('storage', torch.<Type>Storage, key, location, numel).
  PickleValue* storage(const PickleValue* pid) {
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

  std::string_view in_;
  std::size_t pos_ = 0;
  std::size_t at_ = 0;  // where the opcode being read starts
  std::shared_ptr<Arena> arena_;
  std::vector<PickleValue*> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, PickleValue*> memo_;
};

}  // namespace

std::shared_ptr<const PickleValue> unpickle(std::string_view bytes) { return Unpickler(bytes).run(); }

}  // namespace yoloflow::core
