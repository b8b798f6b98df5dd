// How the pickled values that only Python has are read as JSON: protocol 2's bytes
// (_codecs.encode), numpy scalars, pathlib's paths and Ultralytics' namespaces.
#include "training/model/pickle_json.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/util/string_affixes.h"

namespace yoloflow::core {

std::string utf8_or_marked(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = n > 0 && k + n <= s.size();
    for (std::size_t j = 1; ok && j < n; ++j) ok = (static_cast<unsigned char>(s[k + j]) >> 6) == 0x2;
    if (ok) {
      out.append(s, k, n);
      k += n;
    } else {
      out.push_back('?');
      ++k;
    }
  }
  return out;
}

namespace {

using K = PickleValue::Kind;

// The bytes protocol 2 writes as _codecs.encode(text, 'latin1'): each code point one byte.
bool latin1_bytes(const PickleValue& v, std::string& out) {
  if (v.kind == K::Bytes) {
    out = v.s;
    return true;
  }
  if (v.kind != K::Object || v.s != "_codecs.encode" || !v.args || v.args->items.size() != 2 ||
      v.args->items[0]->kind != K::String) {
    return false;
  }
  const std::string& s = v.args->items[0]->s;
  out.clear();
  for (std::size_t k = 0; k < s.size();) {
    const auto c = static_cast<unsigned char>(s[k]);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++k;
    } else if ((c >> 5) == 0x6 && k + 1 < s.size()) {
      const unsigned cp = ((c & 0x1f) << 6) | (static_cast<unsigned char>(s[k + 1]) & 0x3f);
      if (cp > 0xff) return false;
      out.push_back(static_cast<char>(cp));
      k += 2;
    } else {
      return false;
    }
  }
  return true;
}

// numpy.core.multiarray.scalar(numpy.dtype('f8', ...), bytes): the number it holds.
bool numpy_scalar(const PickleValue& v, nlohmann::ordered_json& out) {
  if (!ends_with(v.s, "multiarray.scalar") || !v.args || v.args->items.size() < 2) return false;
  const PickleValue* dtype = v.args->items[0];
  if (dtype->kind != K::Object || dtype->s != "numpy.dtype" || !dtype->args || dtype->args->items.empty() ||
      dtype->args->items[0]->kind != K::String) {
    return false;
  }
  std::string bytes;
  if (!latin1_bytes(*v.args->items[1], bytes)) return false;
  std::string order = "<";
  if (dtype->state && dtype->state->kind == K::Tuple && dtype->state->items.size() > 1 &&
      dtype->state->items[1]->kind == K::String) {
    order = dtype->state->items[1]->s;
  }
  if (order == ">") std::reverse(bytes.begin(), bytes.end());
  const std::string& code = dtype->args->items[0]->s;
  auto read = [&](auto x) {
    if (bytes.size() != sizeof x) return false;
    std::memcpy(&x, bytes.data(), sizeof x);
    out = x;
    return true;
  };
  if (code == "f8") return read(double{});
  if (code == "f4") return read(float{});
  if (code == "i8") return read(std::int64_t{});
  if (code == "i4") return read(std::int32_t{});
  if (code == "i2") return read(std::int16_t{});
  if (code == "i1") return read(std::int8_t{});
  if (code == "u8") return read(std::uint64_t{});
  if (code == "u4") return read(std::uint32_t{});
  if (code == "u2") return read(std::uint16_t{});
  if (code == "u1") return read(std::uint8_t{});
  if (code == "b1" && bytes.size() == 1) {
    out = bytes[0] != 0;
    return true;
  }
  return false;
}

// One conversion: its depth limit and what is left of its value budget, which a pickle's
// shared references (the same list memoized a thousand times) cannot multiply past.
class JsonWriter {
 public:
  JsonWriter(int max_depth, std::size_t max_values) : max_depth_(max_depth), budget_(max_values) {}

  nlohmann::ordered_json operator()(const PickleValue& v, int depth) {
    if (depth > max_depth_ || budget_ == 0) return "...";
    --budget_;
    switch (v.kind) {
      case K::None: return nullptr;
      case K::Bool: return v.b;
      case K::Int: return v.i;
      case K::Float: return v.f;
      case K::String: return utf8_or_marked(v.s);
      case K::Bytes: return "bytes (" + std::to_string(v.s.size()) + ")";
      case K::Tuple:
      case K::List:
      case K::Set: {
        nlohmann::ordered_json a = nlohmann::ordered_json::array();
        for (const PickleValue* x : v.items) a.push_back((*this)(*x, depth + 1));
        return a;
      }
      case K::Dict: return dict(v.items, depth);
      case K::Global: return v.s;
      case K::Storage: return "storage";
      case K::Tensor: return "tensor " + nlohmann::ordered_json(v.tensor ? v.tensor->sizes : std::vector<std::int64_t>{}).dump();
      case K::Object: return object(v, depth);
    }
    return nullptr;
  }

 private:
  nlohmann::ordered_json dict(const std::vector<PickleValue*>& items, int depth) {
    nlohmann::ordered_json o = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k + 1 < items.size(); k += 2) {
      const PickleValue* key = items[k];
      const std::string name = key->kind == K::String ? utf8_or_marked(key->s)
                               : key->kind == K::Int  ? std::to_string(key->i)
                                                      : (*this)(*key, depth + 1).dump();
      o[name] = (*this)(*items[k + 1], depth + 1);
    }
    return o;
  }

  nlohmann::ordered_json object(const PickleValue& v, int depth) {
    nlohmann::ordered_json number;
    if (numpy_scalar(v, number)) return number;
    if (starts_with(v.s, "pathlib.") && v.args) {  // PosixPath('a', 'b'): the parts
      std::string path;
      for (const PickleValue* part : v.args->items) {
        if (part->kind != K::String) continue;
        path += (path.empty() || path.back() == '/' ? "" : "/") + part->s;
      }
      return utf8_or_marked(path);
    }
    // Ultralytics' IterableSimpleNamespace (its train args): the attributes BUILD set.
    if (ends_with(v.s, "SimpleNamespace") && v.state && v.state->kind == K::Dict) return dict(v.state->items, depth);
    return "<" + v.s + ">";
  }

  int max_depth_;
  std::size_t budget_;
};

}  // namespace

nlohmann::ordered_json pickle_to_json(const PickleValue& value, int max_depth, std::size_t max_values) {
  return JsonWriter(max_depth, max_values)(value, 0);
}

}  // namespace yoloflow::core
