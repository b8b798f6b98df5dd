// Python pickle opcodes (protocol 2, plus the few protocol 4 adds), as documented in
// CPython's Lib/pickletools.py.
#include "model/state_dict_pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

namespace yoloflow::core {

namespace {

class Emitter {
 public:
  std::string out;

  void op(char c) { out.push_back(c); }

  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }

  // Python picks the shortest of BININT1, BININT2, BININT, then LONG1.
  void integer(std::int64_t v) {
    if (v >= 0 && v <= 0xff) {
      op('K');
      out.push_back(static_cast<char>(v));
    } else if (v >= 0 && v <= 0xffff) {
      op('M');
      out.push_back(static_cast<char>(v & 0xff));
      out.push_back(static_cast<char>((v >> 8) & 0xff));
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      u32(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)));
    } else {
      // LONG1: little-endian two's complement, shortest length that keeps the sign.
      std::string bytes;
      auto u = static_cast<std::uint64_t>(v);
      for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
      while (bytes.size() > 1) {
        const auto last = static_cast<unsigned char>(bytes.back());
        const auto prev = static_cast<unsigned char>(bytes[bytes.size() - 2]);
        if ((last == 0x00 && !(prev & 0x80)) || (last == 0xff && (prev & 0x80))) {
          bytes.pop_back();
        } else {
          break;
        }
      }
      op('\x8a');
      out.push_back(static_cast<char>(bytes.size()));
      out += bytes;
    }
  }

  // Python memoizes every string and global: the first time BINUNICODE/GLOBAL + BINPUT,
  // afterwards BINGET of the memo slot.
  void str(const std::string& s) {
    if (get("s" + s)) return;
    op('X');
    u32(static_cast<std::uint32_t>(s.size()));
    out += s;
    put("s" + s);
  }

  void global(const std::string& module, const std::string& name) {
    const auto key = "g" + module + "\n" + name;
    if (get(key)) return;
    op('c');
    out += module + "\n" + name + "\n";
    put(key);
  }

  // Memoizes the object just emitted that is no string or global (tuples, results of REDUCE),
  // only to take the same memo slots Python takes.
  void put_anonymous() { put_slot(next_slot_++); }

  // Small tuples as Python writes them: EMPTY_TUPLE, TUPLE1..3, else MARK ... TUPLE.
  template <class F>
  void tuple(std::size_t n, F&& items) {
    if (n == 0) {
      op(')');
      return;  // Python does not memoize the empty tuple
    }
    if (n > 3) op('(');
    items();
    if (n == 1) op('\x85');
    else if (n == 2) op('\x86');
    else if (n == 3) op('\x87');
    else op('t');
    put_anonymous();
  }

 private:
  bool get(const std::string& key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) return false;
    if (it->second <= 0xff) {
      op('h');
      out.push_back(static_cast<char>(it->second));
    } else {
      op('j');
      u32(it->second);
    }
    return true;
  }

  void put(const std::string& key) {
    memo_[key] = next_slot_;
    put_slot(next_slot_++);
  }

  void put_slot(std::uint32_t slot) {
    if (slot <= 0xff) {
      op('q');
      out.push_back(static_cast<char>(slot));
    } else {
      op('r');
      u32(slot);
    }
  }

  std::map<std::string, std::uint32_t> memo_;
  std::uint32_t next_slot_ = 0;
};

void ints(Emitter& e, const std::vector<std::int64_t>& v) {
  e.tuple(v.size(), [&] {
    for (const auto x : v) e.integer(x);
  });
}

}  // namespace

std::string pickle_state_dict(const std::vector<PickledTensor>& tensors) {
  Emitter e;
  e.op('\x80');
  e.out.push_back('\x02');  // PROTO 2
  // OrderedDict() as collections.OrderedDict.__reduce__ gives it: REDUCE on an empty tuple.
  e.global("collections", "OrderedDict");
  e.op(')');
  e.op('R');
  e.put_anonymous();
  // Items in batches of 1000, as Python's pickler batches SETITEMS.
  for (std::size_t begin = 0; begin < tensors.size(); begin += 1000) {
    const auto end = std::min(tensors.size(), begin + 1000);
    if (end - begin > 1) e.op('(');
    for (std::size_t i = begin; i < end; ++i) {
      const auto& t = tensors[i];
      e.str(t.name);
      e.global("torch._utils", "_rebuild_tensor_v2");
      e.op('(');  // its arguments: (storage, offset, size, stride, requires_grad, hooks)
      // The persistent id torch.save gives a storage: ('storage', type, key, location, numel).
      e.op('(');
      e.str("storage");
      e.global("torch", t.storage_type);
      e.str(t.storage_key);
      e.str("cpu");
      e.integer(t.storage_numel);
      e.op('t');
      e.put_anonymous();
      e.op('Q');  // BINPERSID
      e.integer(t.storage_offset);
      ints(e, t.sizes);
      ints(e, t.strides);
      e.op('\x89');  // NEWFALSE: requires_grad
      e.global("collections", "OrderedDict");  // backward hooks: OrderedDict()
      e.op(')');
      e.op('R');
      e.put_anonymous();
      e.op('t');
      e.put_anonymous();
      e.op('R');
      e.put_anonymous();
    }
    e.op(end - begin > 1 ? 'u' : 's');  // SETITEMS, or SETITEM for a single pair
  }
  e.op('.');
  return std::move(e.out);
}

}  // namespace yoloflow::core

namespace yoloflow::core {

namespace {

using Value = std::shared_ptr<PickleValue>;

Value make(PickleValue::Kind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  return v;
}

class Unpickler {
 public:
  explicit Unpickler(const std::string& bytes) : in_(bytes) {}

  Value run() {
    while (true) {
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: byte(); break;                      // PROTO
        case 0x95: take(8); break;                     // FRAME (protocol 4): framing only
        case '.': return pop();                        // STOP
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case '0': pop(); break;                        // POP
        case '1': pop_mark(); break;                   // POP_MARK
        case '2': push(top()); break;                  // DUP
        case 'N': push(make(PickleValue::Kind::None)); break;
        case 0x88: push_bool(true); break;             // NEWTRUE
        case 0x89: push_bool(false); break;            // NEWFALSE
        case 'J': push_int(static_cast<std::int32_t>(le(4))); break;  // BININT
        case 'K': push_int(static_cast<std::int64_t>(le(1))); break;  // BININT1
        case 'M': push_int(static_cast<std::int64_t>(le(2))); break;  // BININT2
        case 0x8a: push_int(long1(static_cast<std::size_t>(le(1)))); break;  // LONG1
        case 'G': {                                    // BINFLOAT: big-endian double
          std::uint64_t bits = 0;
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(byte());
          auto v = make(PickleValue::Kind::Float);
          std::memcpy(&v->f, &bits, sizeof bits);
          push(v);
          break;
        }
        case 'X': push_string(take(le(4))); break;     // BINUNICODE
        case 0x8c: push_string(take(le(1))); break;    // SHORT_BINUNICODE
        case ')': push(make(PickleValue::Kind::Tuple)); break;  // EMPTY_TUPLE
        case 't': push(tuple_of(pop_mark())); break;   // TUPLE
        case 0x85: case 0x86: case 0x87: {             // TUPLE1..3
          const std::size_t n = op - 0x84;
          if (stack_.size() < n) fail("stack underflow");
          std::vector<Value> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push(tuple_of(std::move(items)));
          break;
        }
        case ']': push(make(PickleValue::Kind::List)); break;  // EMPTY_LIST
        case 'a': {                                    // APPEND
          auto v = pop();
          expect(top(), PickleValue::Kind::List)->items.push_back(v);
          break;
        }
        case 'e': {                                    // APPENDS
          auto items = pop_mark();
          auto& list = expect(top(), PickleValue::Kind::List)->items;
          list.insert(list.end(), items.begin(), items.end());
          break;
        }
        case '}': push(make(PickleValue::Kind::Dict)); break;  // EMPTY_DICT
        case 's': {                                    // SETITEM
          auto v = pop();
          auto k = pop();
          set_items(top(), {k, v});
          break;
        }
        case 'u': {                                    // SETITEMS
          auto items = pop_mark();
          set_items(top(), items);
          break;
        }
        case 'c': {                                    // GLOBAL
          auto module = line();
          auto name = line();
          push_global(module + "." + name);
          break;
        }
        case 0x93: {                                   // STACK_GLOBAL
          auto name = pop();
          auto module = pop();
          if (module->kind != PickleValue::Kind::String || name->kind != PickleValue::Kind::String) fail("bad STACK_GLOBAL");
          push_global(module->s + "." + name->s);
          break;
        }
        case 'R': {                                    // REDUCE
          auto args = expect(pop(), PickleValue::Kind::Tuple);
          auto fn = expect(pop(), PickleValue::Kind::Global);
          push(call(fn->s, args->items));
          break;
        }
        case 'b': {                                    // BUILD: an OrderedDict's attributes (_metadata)
          pop();
          expect(top(), PickleValue::Kind::Dict);
          break;
        }
        case 'Q': push(storage(expect(pop(), PickleValue::Kind::Tuple)->items)); break;  // BINPERSID
        case 'h': push(memo_get(le(1))); break;        // BINGET
        case 'j': push(memo_get(le(4))); break;        // LONG_BINGET
        case 'q': memo_[le(1)] = top(); break;         // BINPUT
        case 'r': memo_[le(4)] = top(); break;         // LONG_BINPUT
        case 0x94: memo_[memo_.size()] = top(); break; // MEMOIZE
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail(std::string("unsupported opcode ") + hex);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw UnsupportedPickle(what + " at byte " + std::to_string(pos_));
  }

  char byte() {
    if (pos_ >= in_.size()) fail("unexpected end of pickle");
    return in_[pos_++];
  }

  std::string take(std::uint64_t n) {
    if (n > in_.size() - pos_) fail("unexpected end of pickle");
    auto s = in_.substr(pos_, static_cast<std::size_t>(n));
    pos_ += static_cast<std::size_t>(n);
    return s;
  }

  std::uint64_t le(int n) {
    std::uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(byte())) << (8 * k);
    return v;
  }

  std::int64_t long1(std::size_t n) {
    if (n > 8) fail("integer wider than 64 bits");
    if (n == 0) return 0;
    std::uint64_t v = le(static_cast<int>(n));
    if (n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    return static_cast<std::int64_t>(v);
  }

  std::string line() {
    const auto end = in_.find('\n', pos_);
    if (end == std::string::npos) fail("unterminated GLOBAL");
    auto s = in_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  void push(Value v) { stack_.push_back(std::move(v)); }
  Value pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) fail("stack underflow");
    auto v = stack_.back();
    stack_.pop_back();
    return v;
  }
  const Value& top() const {
    if (stack_.empty()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const auto m = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  const Value& memo_get(std::uint64_t k) const {
    const auto it = memo_.find(k);
    if (it == memo_.end()) fail("unknown memo slot " + std::to_string(k));
    return it->second;
  }
  const Value& expect(const Value& v, PickleValue::Kind kind) const {
    if (v->kind != kind) fail("unexpected value type");
    return v;
  }

  void push_bool(bool b) {
    auto v = make(PickleValue::Kind::Bool);
    v->b = b;
    push(v);
  }
  void push_int(std::int64_t i) {
    auto v = make(PickleValue::Kind::Int);
    v->i = i;
    push(v);
  }
  void push_string(std::string s) {
    auto v = make(PickleValue::Kind::String);
    v->s = std::move(s);
    push(v);
  }
  static Value tuple_of(std::vector<Value> items) {
    auto v = make(PickleValue::Kind::Tuple);
    v->items = std::move(items);
    return v;
  }

  void push_global(const std::string& name) {
    static const char* const allowed[] = {"collections.OrderedDict", "torch._utils._rebuild_tensor_v2",
                                          "torch._utils._rebuild_tensor", "torch._utils._rebuild_parameter",
                                          "torch.jit._pickle.restore_type_tag"};
    bool ok = name.rfind("torch.", 0) == 0 && name.size() > 13 && name.compare(name.size() - 7, 7, "Storage") == 0 &&
              name.find('.', 6) == std::string::npos;  // torch.<Type>Storage
    for (const char* a : allowed) ok = ok || name == a;
    if (!ok) fail("global '" + name + "' is not allowed");
    auto v = make(PickleValue::Kind::Global);
    v->s = name;
    push(v);
  }

  void set_items(const Value& dict, const std::vector<Value>& kv) {
    expect(dict, PickleValue::Kind::Dict);
    if (kv.size() % 2) fail("odd number of dict items");
    for (std::size_t k = 0; k < kv.size(); k += 2) {
      // A repeated key replaces the value, keeping the first position (Python's dict).
      bool found = false;
      if (kv[k]->kind == PickleValue::Kind::String) {
        for (std::size_t j = 0; j < dict->items.size(); j += 2) {
          if (dict->items[j]->kind == PickleValue::Kind::String && dict->items[j]->s == kv[k]->s) {
            dict->items[j + 1] = kv[k + 1];
            found = true;
            break;
          }
        }
      }
      if (!found) {
        dict->items.push_back(kv[k]);
        dict->items.push_back(kv[k + 1]);
      }
    }
  }

  std::vector<std::int64_t> ints(const Value& v) const {
    expect(v, PickleValue::Kind::Tuple);
    std::vector<std::int64_t> out;
    for (const auto& x : v->items) out.push_back(expect(x, PickleValue::Kind::Int)->i);
    return out;
  }

  // ('storage', torch.<Type>Storage, key, location, numel)
  Value storage(const std::vector<Value>& pid) const {
    if (pid.size() < 5 || pid[0]->kind != PickleValue::Kind::String || pid[0]->s != "storage") {
      fail("persistent id is not a storage");
    }
    auto v = make(PickleValue::Kind::Storage);
    v->tensor.storage_type = expect(pid[1], PickleValue::Kind::Global)->s.substr(6);
    v->tensor.storage_key = expect(pid[2], PickleValue::Kind::String)->s;
    v->tensor.storage_numel = expect(pid[4], PickleValue::Kind::Int)->i;
    return v;
  }

  Value call(const std::string& fn, const std::vector<Value>& args) const {
    if (fn == "collections.OrderedDict") {
      if (!args.empty()) fail("OrderedDict with arguments");
      return make(PickleValue::Kind::Dict);
    }
    if (fn == "torch.jit._pickle.restore_type_tag") {
      if (args.empty()) fail("restore_type_tag without a value");
      return args[0];
    }
    if (fn == "torch._utils._rebuild_parameter") {
      if (args.empty()) fail("_rebuild_parameter without data");
      return expect(args[0], PickleValue::Kind::Tensor);
    }
    if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
      if (args.size() < 4) fail(fn + " with too few arguments");
      auto v = make(PickleValue::Kind::Tensor);
      v->tensor = expect(args[0], PickleValue::Kind::Storage)->tensor;
      v->tensor.storage_offset = expect(args[1], PickleValue::Kind::Int)->i;
      v->tensor.sizes = ints(args[2]);
      v->tensor.strides = ints(args[3]);
      if (v->tensor.sizes.size() != v->tensor.strides.size()) fail("sizes and strides differ in length");
      return v;
    }
    fail("call of '" + fn + "' is not allowed");
  }

  const std::string& in_;
  std::size_t pos_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, Value> memo_;
};

}  // namespace

std::shared_ptr<PickleValue> unpickle(const std::string& bytes) { return Unpickler(bytes).run(); }

}  // namespace yoloflow::core
