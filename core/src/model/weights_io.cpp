// Weights files in PyTorch's own format (see weights_io.h).
#include "model/weights_io.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <cstring>
#include <map>
#include <regex>
#include <memory>
#include <set>
#include <sstream>

#include <caffe2/serialize/inline_container.h>

#include "model/state_dict_pickle.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

namespace {

// Python's storage classes (module torch) and their dtypes.
const std::pair<const char*, c10::ScalarType> kStorageTypes[] = {
    {"FloatStorage", torch::kFloat},        {"DoubleStorage", torch::kDouble},
    {"HalfStorage", torch::kHalf},          {"BFloat16Storage", torch::kBFloat16},
    {"LongStorage", torch::kLong},          {"IntStorage", torch::kInt},
    {"ShortStorage", torch::kShort},        {"CharStorage", torch::kChar},
    {"ByteStorage", torch::kByte},          {"BoolStorage", torch::kBool},
    {"ComplexFloatStorage", torch::kComplexFloat}, {"ComplexDoubleStorage", torch::kComplexDouble},
};

std::string storage_type(const torch::Tensor& t, const std::string& name) {
  for (const auto& [type, dtype] : kStorageTypes) {
    if (dtype == t.scalar_type()) return type;
  }
  throw Error("cannot write tensor '" + name + "': dtype " + std::string(c10::toString(t.scalar_type())) +
              " has no PyTorch storage class");
}


std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// A dict whose keys are strings and whose values are all tensors.
bool is_tensor_dict(const c10::IValue& v) {
  if (!v.isGenericDict()) return false;
  for (const auto& e : v.toGenericDict()) {
    if (!e.key().isString() || !e.value().isTensor()) return false;
  }
  return true;
}

NamedTensors from_dict(const c10::IValue& v) {
  NamedTensors out;
  for (const auto& e : v.toGenericDict()) out.emplace_back(e.key().toStringRef(), e.value().toTensor());
  return out;
}

void collect_state(const torch::nn::Module& m, const std::string& prefix, NamedTensors& out) {
  for (const auto& p : m.named_parameters(false)) {
    if (p.value().defined()) out.emplace_back(prefix + p.key(), p.value());
  }
  for (const auto& b : m.named_buffers(false)) {
    if (b.value().defined()) out.emplace_back(prefix + b.key(), b.value());
  }
  for (const auto& c : m.named_children()) collect_state(*c.value(), prefix + c.key() + ".", out);
}

}  // namespace

namespace {

[[noreturn]] void unreadable(const std::string& path, const std::string& why) {
  throw InvalidInput("cannot read weights file '" + path + "': " + why +
                     ". yoloflow reads files written by torch.save(state_dict) (a dict name -> "
                     "tensor); a full Ultralytics checkpoint pickles Python classes, so save its "
                     "state dict first: torch.save(YOLO('model.pt').model.float().state_dict(), 'sd.pt')");
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// Turns what our unpickler built into IValues, reading each storage once from the archive.
class TreeToIValue {
 public:
  explicit TreeToIValue(caffe2::serialize::PyTorchStreamReader& zip) : zip_(zip) {}

  c10::IValue operator()(const PickleValue& v) {
    using K = PickleValue::Kind;
    switch (v.kind) {
      case K::None: return {};
      case K::Bool: return v.b;
      case K::Int: return v.i;
      case K::Float: return v.f;
      case K::String: return v.s;
      case K::Tuple: {
        std::vector<c10::IValue> items;
        for (const auto& x : v.items) items.push_back((*this)(*x));
        return c10::ivalue::Tuple::create(std::move(items));
      }
      case K::List: {
        c10::impl::GenericList list(c10::AnyType::get());
        for (const auto& x : v.items) list.push_back((*this)(*x));
        return list;
      }
      case K::Dict: {
        c10::impl::GenericDict dict(c10::AnyType::get(), c10::AnyType::get());
        for (std::size_t k = 0; k + 1 < v.items.size(); k += 2) {
          dict.insert_or_assign((*this)(*v.items[k]), (*this)(*v.items[k + 1]));
        }
        return dict;
      }
      case K::Tensor: return tensor(v.tensor);
      case K::Global:
      case K::Storage: break;
    }
    throw UnsupportedPickle("a bare class or storage outside a tensor");
  }

 private:
  torch::Tensor tensor(const PickledTensor& t) {
    auto it = storages_.find(t.storage_key);
    if (it == storages_.end()) {
      c10::ScalarType dtype = c10::ScalarType::Undefined;
      for (const auto& [type, d] : kStorageTypes) {
        if (t.storage_type == type) dtype = d;
      }
      if (dtype == c10::ScalarType::Undefined) throw UnsupportedPickle("storage type torch." + t.storage_type);
      const auto record = "data/" + t.storage_key;
      if (!zip_.hasRecord(record)) throw UnsupportedPickle("no record " + record);
      const auto [data, size] = zip_.getRecord(record);
      // Checked before allocating: the element count comes from the file.
      const auto need = static_cast<std::uint64_t>(t.storage_numel) * c10::elementSize(dtype);
      if (t.storage_numel < 0 || size != need) {
        throw UnsupportedPickle("record " + record + " holds " + std::to_string(size) + " bytes, its storage of " +
                                std::to_string(t.storage_numel) + " elements needs " + std::to_string(need));
      }
      auto storage = torch::empty({t.storage_numel}, torch::TensorOptions().dtype(dtype));
      if (size > 0) std::memcpy(storage.data_ptr(), data.get(), size);
      it = storages_.emplace(t.storage_key, storage).first;
    }
    return it->second.as_strided(t.sizes, t.strides, t.storage_offset);
  }

  caffe2::serialize::PyTorchStreamReader& zip_;
  std::map<std::string, torch::Tensor> storages_;
};

// Python's torch.save and LibTorch's pickle_save files, both zip archives. Our unpickler reads
// what torch.save writes (OrderedDict included, which LibTorch's turns into None); anything it
// refuses (e.g. TorchScript classes) goes to LibTorch's unpickler.
c10::IValue read_root(const std::string& path) {
  {
    std::ifstream probe(path, std::ios::binary);
    if (!probe) throw InvalidInput("cannot open weights file '" + path + "'");
  }
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> zip;
  try {
    zip = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    unreadable(path, first_line(e.what_without_backtrace()));
  }
  std::string refused;
  try {
    if (zip->hasRecord("byteorder")) {
      const auto [data, size] = zip->getRecord("byteorder");
      const std::string order(static_cast<const char*>(data.get()), size);
      if (order != "little") unreadable(path, "its tensors are stored " + order + "-endian");
    }
    const auto [pkl, size] = zip->getRecord("data.pkl");
    const auto tree = unpickle(std::string(static_cast<const char*>(pkl.get()), size));
    return TreeToIValue(*zip)(*tree);
  } catch (const UnsupportedPickle& e) {
    refused = e.what();
  } catch (const c10::Error& e) {
    unreadable(path, first_line(e.what_without_backtrace()));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    unreadable(path, refused + "; LibTorch: " + first_line(e.what()));
  }
}

}  // namespace

NamedTensors read_weights(const std::string& path, const std::string& key) {
  const c10::IValue root = read_root(path);
  if (is_tensor_dict(root)) {
    if (!key.empty()) throw InvalidInput("weights file '" + path + "' is a plain state dict; it has no '" + key + "' entry");
    return from_dict(root);
  }
  if (root.isGenericDict()) {
    const auto dict = root.toGenericDict();
    std::vector<std::string> keys = key.empty() ? std::vector<std::string>{"ema", "model", "state_dict"}
                                                : std::vector<std::string>{key};
    for (const auto& k : keys) {
      const auto it = dict.find(c10::IValue(k));
      if (it != dict.end() && is_tensor_dict(it->value())) return from_dict(it->value());
    }
    std::string found;
    for (const auto& e : dict) {
      if (e.key().isString()) found += (found.empty() ? "" : ", ") + e.key().toStringRef();
    }
    throw InvalidInput("weights file '" + path + "' is a dict without a state dict under " +
                       (key.empty() ? std::string("'ema', 'model' or 'state_dict'") : "'" + key + "'") +
                       " (its keys: " + found + ")");
  }
  throw InvalidInput("weights file '" + path + "' holds a " + root.tagKind() +
                     ", not a dict name -> tensor");
}

void write_weights(const std::string& path, const NamedTensors& tensors) {
  // The storages are written as they lie in memory; torch.save marks them little-endian.
  const std::uint16_t probe = 1;
  if (*reinterpret_cast<const unsigned char*>(&probe) != 1) throw Error("writing weights needs a little-endian host");

  std::vector<torch::Tensor> data;
  std::vector<PickledTensor> entries;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw Error("cannot write tensor '" + name + "': it is undefined");
    if (t.layout() != torch::kStrided || t.is_quantized()) throw Error("cannot write tensor '" + name + "': only dense tensors");
    // Written from its first element: each file storage holds exactly this tensor's elements,
    // so offset 0 and row-major strides, whatever storage the tensor shares in memory.
    auto c = t.detach().to(torch::kCPU).contiguous();
    PickledTensor e;
    e.name = name;
    e.storage_type = storage_type(c, name);
    e.storage_key = std::to_string(entries.size());
    e.storage_numel = c.numel();
    e.sizes = c.sizes().vec();
    e.strides.assign(e.sizes.size(), 1);
    for (int i = static_cast<int>(e.sizes.size()) - 2; i >= 0; --i) {
      e.strides[i] = e.strides[i + 1] * std::max<std::int64_t>(e.sizes[i + 1], 1);
    }
    entries.push_back(std::move(e));
    data.push_back(std::move(c));
  }
  const auto pickle = pickle_state_dict(entries);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write weights file '" + path + "'");
  try {
    // The records torch.save writes, in its order: data.pkl, byteorder, data/<key>..., version
    // (the writer adds `version` when it finishes). Writing to a function names the archive
    // folder "archive", as PyTorch 2.x does.
    caffe2::serialize::PyTorchStreamWriter zip([&out](const void* buf, std::size_t n) -> std::size_t {
      out.write(static_cast<const char*>(buf), static_cast<std::streamsize>(n));
      return out ? n : 0;
    });
    zip.writeRecord("data.pkl", pickle.data(), pickle.size());
    const std::string byteorder = "little";
    zip.writeRecord("byteorder", byteorder.data(), byteorder.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
      zip.writeRecord("data/" + entries[i].storage_key, data[i].data_ptr(), data[i].nbytes());
    }
    zip.writeEndOfFile();
  } catch (const c10::Error& e) {
    throw Error("failed writing weights file '" + path + "': " + e.what_without_backtrace());
  }
  out.close();
  if (!out) throw Error("failed writing weights file '" + path + "'");
}

NamedTensors module_state(const torch::nn::Module& module) {
  NamedTensors out;
  collect_state(module, "", out);
  return out;
}

std::string WeightsMismatch::describe() const {
  std::ostringstream os;
  for (const auto& n : missing) os << "  missing in file: " << n << "\n";
  for (const auto& n : unexpected) os << "  not in model: " << n << "\n";
  for (const auto& n : wrong_shape) os << "  wrong shape: " << n << "\n";
  return os.str();
}

WeightsMismatch compare_weights(const torch::nn::Module& module, const NamedTensors& weights,
                                const LoadOptions& options) {
  WeightsMismatch mm;
  const auto state = module_state(module);
  std::map<std::string, const torch::Tensor*> file;
  for (const auto& [n, t] : weights) file[n] = &t;
  std::set<std::string> model_names;
  for (const auto& [name, t] : state) {
    model_names.insert(name);
    const auto it = file.find(name);
    if (it == file.end()) {
      mm.missing.push_back(name);
    } else if (it->second->sizes() != t.sizes() && !(options.may_differ && options.may_differ(name))) {
      mm.wrong_shape.push_back(name + ": file " + shape_str(it->second->sizes()) + " vs model " +
                               shape_str(t.sizes()));
    }
  }
  for (const auto& [n, t] : weights) {
    if (!model_names.count(n)) mm.unexpected.push_back(n);
  }
  return mm;
}

LoadReport load_weights(torch::nn::Module& module, const NamedTensors& weights,
                        const std::string& source, const LoadOptions& options) {
  const auto mm = compare_weights(module, weights, options);
  if (!mm.empty()) {
    throw InvalidInput("weights '" + source + "' do not fit the model (" + std::to_string(mm.missing.size()) +
                       " missing, " + std::to_string(mm.unexpected.size()) + " unexpected, " +
                       std::to_string(mm.wrong_shape.size()) + " wrong shape):\n" + mm.describe());
  }
  std::map<std::string, torch::Tensor> file(weights.begin(), weights.end());
  LoadReport report;
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : module_state(module)) {
    const auto& src = file.at(name);
    if (src.sizes() != t.sizes()) {
      report.kept_initial.push_back(name);
      continue;
    }
    t.copy_(src);  // converts dtype and device, keeps the model's memory format
    ++report.loaded;
  }
  return report;
}

bool is_class_head_tensor(const std::string& name) {
  static const std::regex cls_branch(R"(^model\.\d+\.cv3\..*)");
  return std::regex_match(name, cls_branch);
}

int classes_in(const NamedTensors& weights) {
  static const std::regex re(R"(^model\.\d+\.cv3\.0\.2\.bias$)");
  for (const auto& [n, t] : weights) {
    if (std::regex_match(n, re)) return static_cast<int>(t.size(0));
  }
  return 0;
}

}  // namespace yoloflow::core
