// Python pickle opcodes (protocol 2), as documented in CPython's Lib/pickletools.py.
#include "training/model/state_dict_pickle.h"

#include <algorithm>
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
