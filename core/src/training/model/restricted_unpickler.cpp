// The opcode machine: Python pickle opcodes (protocols 2 to 5), as documented in CPython's
// Lib/pickletools.py, read from the bytes onto a stack and a memo. What the values become, and
// which globals a pickle may name, is pickle_builder.h.
#include "training/model/restricted_unpickler.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "training/model/pickle_builder.h"

namespace yoloflow::core {

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

class Unpickler {
 public:
  explicit Unpickler(std::string_view bytes) : in_(bytes) {}

  std::shared_ptr<const PickleValue> run() {
    while (true) {
      values_.at(pos_);
      const auto op = static_cast<unsigned char>(byte());
      switch (op) {
        case 0x80: {                                   // PROTO
          const auto version = static_cast<unsigned char>(byte());
          if (version > 5) fail("pickle protocol " + std::to_string(version) + " (at most 5 is known)");
          break;
        }
        case 0x95: take(8); break;                     // FRAME: framing only
        case '.': {                                    // STOP
          return values_.share(pop());
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
          values_.append(top(), {v});
          break;
        }
        case 'e': {                                    // APPENDS
          auto items = pop_mark();
          values_.append(top(), items);
          break;
        }
        case '}': push(make(K::Dict)); break;          // EMPTY_DICT
        case 'd': {                                    // DICT
          auto items = pop_mark();
          PickleValue* d = make(K::Dict);
          values_.set_items(d, items);
          push(d);
          break;
        }
        case 's': {                                    // SETITEM
          PickleValue* v = pop();
          PickleValue* k = pop();
          values_.set_items(top(), {k, v});
          break;
        }
        case 'u': {                                    // SETITEMS
          auto items = pop_mark();
          values_.set_items(top(), items);
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
          push(values_.global(module, name));
          break;
        }
        case 0x93: {                                   // STACK_GLOBAL
          PickleValue* name = pop();
          PickleValue* module = pop();
          if (module->kind != K::String || name->kind != K::String) fail("STACK_GLOBAL without two strings");
          push(values_.global(module->s, name->s));
          break;
        }
        case 'R': {                                    // REDUCE
          PickleValue* args = expect(pop(), K::Tuple, "REDUCE");
          PickleValue* fn = expect(pop(), K::Global, "REDUCE");
          push(values_.reduce(fn->s, args));
          break;
        }
        case 0x81: {                                   // NEWOBJ: cls.__new__(cls, *args)
          PickleValue* args = expect(pop(), K::Tuple, "NEWOBJ");
          PickleValue* cls = expect(pop(), K::Global, "NEWOBJ");
          push(values_.construct(cls->s, args, nullptr));
          break;
        }
        case 0x92: {                                   // NEWOBJ_EX: cls.__new__(cls, *args, **kwargs)
          PickleValue* kwargs = expect(pop(), K::Dict, "NEWOBJ_EX");
          PickleValue* args = expect(pop(), K::Tuple, "NEWOBJ_EX");
          PickleValue* cls = expect(pop(), K::Global, "NEWOBJ_EX");
          push(values_.construct(cls->s, args, kwargs));
          break;
        }
        case 'b': {                                    // BUILD: __setstate__ or __dict__.update
          PickleValue* state = pop();
          values_.build(top(), state);
          break;
        }
        case 'Q': push(values_.storage(expect(pop(), K::Tuple, "BINPERSID"))); break;  // BINPERSID
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
  [[noreturn]] void fail(const std::string& what) const { values_.fail(what); }
  PickleValue* make(K kind) { return values_.make(kind); }

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
  PickleValue* expect(PickleValue* v, K kind, const char* where) const { return values_.expect(v, kind, where); }

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
  PickleValue* sequence(K kind, std::vector<PickleValue*> items) { return values_.sequence(kind, std::move(items)); }

  std::string_view in_;
  std::size_t pos_ = 0;
  PickleBuilder values_;  // knows where the opcode being read starts, for errors
  std::vector<PickleValue*> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, PickleValue*> memo_;
};

}  // namespace

std::shared_ptr<const PickleValue> unpickle(std::string_view bytes) { return Unpickler(bytes).run(); }

}  // namespace yoloflow::core
