// Weights files in PyTorch's own format (see weights_io.h).
#include "training/model/weights_io.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <caffe2/serialize/inline_container.h>

#include "training/model/state_dict_pickle.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "yoloflow/atomic_file.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

namespace {

using K = PickleValue::Kind;

std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

// A dict whose keys are strings and whose values are all tensors.
bool is_tensor_dict(const PickleValue* v) {
  if (!v || v->kind != K::Dict) return false;
  for (std::size_t k = 0; k + 1 < v->items.size(); k += 2) {
    if (v->items[k]->kind != K::String || v->items[k + 1]->kind != K::Tensor) return false;
  }
  return true;
}

NamedTensors tensors_of(TorchFile& file, const PickleValue& dict) {
  NamedTensors out;
  out.reserve(dict.items.size() / 2);
  for (std::size_t k = 0; k + 1 < dict.items.size(); k += 2) {
    const std::string& name = dict.items[k]->s;
    out.emplace_back(name, file.tensor(*dict.items[k + 1], name));
  }
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

NamedTensors read_weights(const std::string& path, const std::string& key) {
  TorchFile file = TorchFile::open(path);
  return read_weights(file, key);
}

NamedTensors read_weights(TorchFile& file, const std::string& key) {
  const PickleValue& root = file.root();
  if (root.kind == K::Dict && is_ultralytics_checkpoint(root)) {
    if (!key.empty() && key != "ema" && key != "model") {
      throw InvalidInput(file.name() + " is an Ultralytics checkpoint; its weights are under 'ema' or 'model', not '" +
                         key + "'");
    }
    UltralyticsCheckpoint u = read_ultralytics_checkpoint(file, key);
    check_finite(u.weights, file.name(), u.weights_entry);
    return std::move(u.weights);
  }
  if (is_tensor_dict(&root)) {
    if (!key.empty()) throw InvalidInput(file.name() + " is a plain state dict; it has no '" + key + "' entry");
    NamedTensors out = tensors_of(file, root);
    check_finite(out, file.name());
    return out;
  }
  if (root.kind == K::Dict) {
    // A yoloflow checkpoint trained without EMA has an empty "ema": the next key is meant.
    const std::vector<std::string> keys = key.empty() ? std::vector<std::string>{"ema", "model", "state_dict"}
                                                      : std::vector<std::string>{key};
    for (const auto& k : keys) {
      const PickleValue* v = root.get(k);
      if (is_tensor_dict(v) && (!key.empty() || !v->items.empty())) {
        NamedTensors out = tensors_of(file, *v);
        check_finite(out, file.name(), k);
        return out;
      }
    }
    std::string found;
    std::size_t listed = 0;
    for (std::size_t k = 0; k + 1 < root.items.size(); k += 2) {
      if (root.items[k]->kind != K::String) continue;
      if (++listed > 12) {
        found += ", ...";
        break;
      }
      found += (found.empty() ? "" : ", ") + root.items[k]->s;
    }
    throw InvalidInput(file.name() + " is a dict without a state dict under " +
                       (key.empty() ? std::string("'ema', 'model' or 'state_dict'") : "'" + key + "'") +
                       " (its keys: " + found + ")");
  }
  throw InvalidInput(file.name() + " holds " + root.describe() + ", not a dict name -> tensor");
}

void check_finite(const NamedTensors& tensors, const std::string& source, const std::string& entry) {
  std::string first;
  std::size_t bad = 0;
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !(t.is_floating_point() || t.is_complex()) || t.numel() == 0) continue;
    if (torch::isfinite(t).all().item<bool>()) continue;
    if (bad++ == 0) first = name;
  }
  if (bad == 0) return;
  throw InvalidInput(source + ": tensor '" + first + "'" + (entry.empty() ? std::string() : " of its " + entry) +
                     " holds NaN or infinite values" +
                     (bad > 1 ? " (" + std::to_string(bad) + " tensors do)" : std::string()) +
                     "; weights that diverged are refused");
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
    e.storage_type = storage_class(c.scalar_type());
    if (e.storage_type.empty()) {
      throw Error("cannot write tensor '" + name + "': dtype " + std::string(c10::toString(c.scalar_type())) +
                  " has no PyTorch storage class");
    }
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

  // Streamed through the atomic writer: the archive goes to a temporary file that replaces
  // the target only once complete, so a full disk, an I/O error or a kill leaves the old file.
  // The zip writer is told every write succeeded: it throws on a short write, and its
  // destructor finishes the archive, which would throw again while that exception unwinds and
  // end the process. The writer keeps the first failure instead, swallows what follows, and
  // commit() reports it in one line.
  AtomicFileWriter out(path);
  try {
    // The records torch.save writes, in its order: data.pkl, byteorder, data/<key>..., version
    // (the writer adds `version` when it finishes). Writing to a function names the archive
    // folder "archive", as PyTorch 2.x does.
    caffe2::serialize::PyTorchStreamWriter zip([&out](const void* buf, std::size_t n) -> std::size_t {
      out.write(buf, n);
      return n;
    });
    zip.writeRecord("data.pkl", pickle.data(), pickle.size());
    const std::string byteorder = "little";
    zip.writeRecord("byteorder", byteorder.data(), byteorder.size());
    for (std::size_t i = 0; i < data.size() && out.ok(); ++i) {
      zip.writeRecord("data/" + entries[i].storage_key, data[i].data_ptr(), data[i].nbytes());
    }
    zip.writeEndOfFile();
  } catch (const c10::Error& e) {
    throw Error("failed writing weights file '" + path + "': " + e.what_without_backtrace());
  }
  out.commit();
}

NamedTensors module_state(const torch::nn::Module& module) {
  NamedTensors out;
  collect_state(module, "", out);
  return out;
}

std::string WeightsMismatch::describe(std::size_t limit) const {
  std::ostringstream os;
  auto list = [&](const std::vector<std::string>& names, const char* what) {
    for (std::size_t k = 0; k < names.size() && k < limit; ++k) os << "  " << what << ": " << names[k] << "\n";
    if (names.size() > limit) os << "  ... and " << names.size() - limit << " more " << what << "\n";
  };
  list(missing, "missing in file");
  list(unexpected, "not in model");
  list(wrong_shape, "wrong shape");
  list(wrong_dtype, "wrong dtype");
  return os.str();
}

std::string dtype_mismatch(const torch::Tensor& into, const torch::Tensor& from_file) {
  // What a tensor's numbers are: a copy between two of a kind only changes their precision.
  auto kind = [](const torch::Tensor& t) -> const char* {
    if (t.is_complex()) return "complex";
    if (t.is_floating_point()) return "floating-point";
    if (t.scalar_type() == torch::kBool) return "bool";
    return "integer";
  };
  const char* want = kind(into);
  const char* have = kind(from_file);
  if (std::string(want) == have) return "";
  return "holds " + dtype_name(from_file.scalar_type()) + " values where the model's " + dtype_name(into.scalar_type()) +
         " tensor takes " + want + " ones";
}

void check_fits(const torch::Tensor& into, const torch::Tensor& from_file, const std::string& name,
                const std::string& source) {
  if (from_file.sizes() != into.sizes()) {
    throw InvalidInput(source + ": tensor '" + name + "' has shape " + shape_str(from_file.sizes()) + " where the model's has " +
                       shape_str(into.sizes()));
  }
  if (const std::string why = dtype_mismatch(into, from_file); !why.empty()) {
    throw InvalidInput(source + ": tensor '" + name + "' " + why);
  }
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
    } else if (it->second->sizes() != t.sizes()) {
      if (!(options.may_differ && options.may_differ(name))) {
        mm.wrong_shape.push_back(name + ": file " + shape_str(it->second->sizes()) + " vs model " +
                                 shape_str(t.sizes()));
      }
    } else if (!dtype_mismatch(t, *it->second).empty()) {
      mm.wrong_dtype.push_back(name + ": file " + dtype_name(it->second->scalar_type()) + " vs model " +
                               dtype_name(t.scalar_type()));
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
  if (mm.missing.empty() && mm.unexpected.empty() && mm.wrong_shape.empty() && !mm.wrong_dtype.empty()) {
    // Names and shapes fit, so the file is meant for this model: one line says what is wrong.
    const std::map<std::string, torch::Tensor> file(weights.begin(), weights.end());
    for (const auto& [name, t] : module_state(module)) {
      const auto it = file.find(name);
      if (it == file.end() || it->second.sizes() != t.sizes()) continue;
      if (const std::string why = dtype_mismatch(t, it->second); !why.empty()) {
        throw InvalidInput("weights '" + source + "': tensor '" + name + "' " + why +
                           (mm.wrong_dtype.size() > 1 ? " (" + std::to_string(mm.wrong_dtype.size()) + " tensors do)" : ""));
      }
    }
  }
  if (!mm.empty()) {
    throw InvalidInput("weights '" + source + "' do not fit the model (" + std::to_string(mm.missing.size()) +
                       " missing, " + std::to_string(mm.unexpected.size()) + " unexpected, " +
                       std::to_string(mm.wrong_shape.size()) + " wrong shape" +
                       (mm.wrong_dtype.empty() ? std::string() : ", " + std::to_string(mm.wrong_dtype.size()) + " wrong dtype") +
                       "):\n" + mm.describe());
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
