#include "training/export/onnx_file_tensors.h"

#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include "training/model/declared_tensor.h"
#include "runtime/util/file_checks.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;
using Tensor = onnx::TensorProto;

// Bytes per element of an ONNX type and its name in messages; 0 for a type without a fixed size
// (strings) or one this reader does not know.
struct TypeInfo {
  std::size_t bytes;
  const char* name;
};
TypeInfo type_info(int type) {
  switch (type) {
    case Tensor::FLOAT: return {4, "float32"};
    case Tensor::UINT8: return {1, "uint8"};
    case Tensor::INT8: return {1, "int8"};
    case Tensor::UINT16: return {2, "uint16"};
    case Tensor::INT16: return {2, "int16"};
    case Tensor::INT32: return {4, "int32"};
    case Tensor::INT64: return {8, "int64"};
    case Tensor::BOOL: return {1, "bool"};
    case Tensor::FLOAT16: return {2, "float16"};
    case Tensor::DOUBLE: return {8, "float64"};
    case Tensor::UINT32: return {4, "uint32"};
    case Tensor::UINT64: return {8, "uint64"};
    case Tensor::COMPLEX64: return {8, "complex64"};
    case Tensor::COMPLEX128: return {16, "complex128"};
    case Tensor::BFLOAT16: return {2, "bfloat16"};
    case Tensor::STRING: return {0, "string"};
    default: return {0, "an unknown type"};
  }
}

// The values a tensor holds in its typed fields (not raw_data), and how many make one element.
std::pair<std::uint64_t, std::uint64_t> typed_values(const Tensor& t) {
  switch (t.data_type()) {
    case Tensor::FLOAT: return {static_cast<std::uint64_t>(t.float_data_size()), 1};
    case Tensor::COMPLEX64: return {static_cast<std::uint64_t>(t.float_data_size()), 2};
    case Tensor::DOUBLE: return {static_cast<std::uint64_t>(t.double_data_size()), 1};
    case Tensor::COMPLEX128: return {static_cast<std::uint64_t>(t.double_data_size()), 2};
    case Tensor::INT64: return {static_cast<std::uint64_t>(t.int64_data_size()), 1};
    case Tensor::UINT32:
    case Tensor::UINT64: return {static_cast<std::uint64_t>(t.uint64_data_size()), 1};
    case Tensor::STRING: return {static_cast<std::uint64_t>(t.string_data_size()), 1};
    default: return {static_cast<std::uint64_t>(t.int32_data_size()), 1};  // the narrow types
  }
}

// Every tensor of a graph: initializers, sparse initializers, and the tensors of node
// attributes (Constant's value), in subgraphs (If, Loop, Scan bodies) too. Protobuf's parser
// bounds the nesting (100 levels).
void each_tensor(onnx::GraphProto& g, const std::function<void(Tensor&)>& f) {
  for (auto& t : *g.mutable_initializer()) f(t);
  for (auto& s : *g.mutable_sparse_initializer()) {
    f(*s.mutable_values());
    f(*s.mutable_indices());
  }
  for (auto& node : *g.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_t()) f(*a.mutable_t());
      for (auto& t : *a.mutable_tensors()) f(t);
      if (a.has_sparse_tensor()) {
        f(*a.mutable_sparse_tensor()->mutable_values());
        f(*a.mutable_sparse_tensor()->mutable_indices());
      }
      for (auto& s : *a.mutable_sparse_tensors()) {
        f(*s.mutable_values());
        f(*s.mutable_indices());
      }
      if (a.has_g()) each_tensor(*a.mutable_g(), f);
      for (auto& sub : *a.mutable_graphs()) each_tensor(sub, f);
    }
  }
}

// A whole number of external_data (offset, length), or false.
bool parse_count(const std::string& text, std::uint64_t& out) {
  if (text.empty() || text.size() > 19) return false;
  out = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

// Whether `inner` is `outer` or lies below it (both canonical).
bool is_within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

class FileTensors {
 public:
  FileTensors(const std::string& model_path, std::string name) : name_(std::move(name)) {
    folder_ = fs::path(model_path).parent_path();
    if (folder_.empty()) folder_ = ".";
  }

  void load(Tensor& t) {
    const std::string what = "tensor '" + t.name() + "'";
    const TypeInfo type = type_info(t.data_type());
    std::uint64_t elements = 0;
    const std::vector<std::int64_t> dims(t.dims().begin(), t.dims().end());
    if (const std::string why = check_declared_dims(dims, type.bytes ? type.bytes : 1, type.name, elements); !why.empty()) {
      fail(what + " " + why);
    }
    if (t.data_location() == Tensor::EXTERNAL) read_external(t, what, elements * type.bytes, type.bytes != 0);
    // The data hold exactly what the dims declare: nothing a runtime allocates from the dims
    // is larger than what the file (or its data file) holds.
    if (t.has_raw_data()) {
      if (type.bytes != 0 && t.raw_data().size() != elements * type.bytes) {
        fail(what + " declares " + std::to_string(elements) + " elements of " + type.name + " (" +
             std::to_string(elements * type.bytes) + " bytes), but its data hold " + std::to_string(t.raw_data().size()) +
             " bytes");
      }
    } else if (const auto [values, per_element] = typed_values(t); values != elements * per_element && type.bytes != 0) {
      fail(what + " declares " + std::to_string(elements) + " elements of " + type.name + ", but holds " +
           std::to_string(values) + " values");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw InvalidInput(name_ + ": " + why); }

  // Reads the bytes `t`'s external data name into its raw_data.
  void read_external(Tensor& t, const std::string& what, std::uint64_t expected, bool sized) {
    std::string location;
    std::string offset_text = "0", length_text;
    for (const auto& e : t.external_data()) {
      if (e.key() == "location") location = e.value();
      if (e.key() == "offset") offset_text = e.value();
      if (e.key() == "length") length_text = e.value();
    }
    if (location.empty()) fail(what + " keeps its data in another file, but names none (no location)");
    if (location.find('\0') != std::string::npos) fail(what + " keeps its data in a file whose name holds a NUL byte");
    const std::string in = what + " keeps its data in '" + location + "'";
    const fs::path named(location);
    const fs::path path = named.is_absolute() ? named : folder_ / named;
    // What the path is first: a device or pipe is named as such wherever it lies.
    if (const std::string kind = non_regular_kind(path.string()); !kind.empty()) {
      fail(in + ", which is not a regular file (" + kind + ")");
    }
    const fs::path normal = named.lexically_normal();
    if (named.is_absolute() || (!normal.empty() && *normal.begin() == "..")) {
      fail(in + ", outside the model's folder: external data lie beside the model, named relative to its folder");
    }
    std::error_code ec, folder_ec, exists_ec;
    const fs::path real = fs::weakly_canonical(path, ec);
    const fs::path real_folder = fs::weakly_canonical(folder_, folder_ec);
    if (ec || folder_ec || !fs::exists(real, exists_ec)) {
      fail(in + ", which does not exist (looked for " + path.string() + ")");
    }
    if (!is_within(real, real_folder)) {
      fail(in + ", a link out of the model's folder (to " + real.string() + "): external data lie beside the model");
    }
    std::uint64_t offset = 0, length = expected;
    if (!parse_count(offset_text, offset)) fail(what + ": its external data offset '" + offset_text + "' is not a byte count");
    if (!length_text.empty() && !parse_count(length_text, length)) {
      fail(what + ": its external data length '" + length_text + "' is not a byte count");
    }
    if (sized && length != expected) {
      fail(in + " as " + std::to_string(length) + " bytes, but its dims declare " + std::to_string(expected));
    }
    const std::string& bytes = file(real, in);
    if (offset > bytes.size() || length > bytes.size() - offset) {
      fail(what + " needs bytes " + std::to_string(offset) + " to " + std::to_string(offset + length) + " of '" + location +
           "', which holds " + std::to_string(bytes.size()));
    }
    t.set_raw_data(bytes.substr(offset, length));
    t.clear_external_data();
    t.set_data_location(Tensor::DEFAULT);
  }

  // A data file's bytes, read once however many tensors it holds; all of them together within
  // kMaxOnnxExternalBytes, checked before each is read.
  const std::string& file(const fs::path& real, const std::string& in) {
    const auto it = files_.find(real.string());
    if (it != files_.end()) return it->second;
    std::error_code ec;
    const std::uint64_t size = fs::file_size(real, ec);
    if (!ec && read_ + size > kMaxOnnxExternalBytes) {
      fail(in + ", which brings the model's external data to " + std::to_string(read_ + size) + " bytes, more than the " +
           bytes_text(kMaxOnnxExternalBytes) + " yoloflow reads");
    }
    std::string bytes = read_regular_file(real.string(), name_ + ": the external data file '" + real.string() + "'");
    read_ += bytes.size();
    return files_.emplace(real.string(), std::move(bytes)).first->second;
  }

  std::string name_;
  fs::path folder_;
  std::map<std::string, std::string> files_;
  std::uint64_t read_ = 0;
};

}  // namespace

void load_onnx_file_tensors(onnx::ModelProto& model, const std::string& model_path, const std::string& name) {
  if (!model.has_graph()) return;
  FileTensors tensors(model_path, name);
  each_tensor(*model.mutable_graph(), [&](Tensor& t) { tensors.load(t); });
}

}  // namespace yoloflow::core
