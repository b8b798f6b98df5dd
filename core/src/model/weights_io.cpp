// Weights files in PyTorch's own format (see weights_io.h).
#include "model/weights_io.h"

#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "yoloflow/error.h"

namespace yoloflow::core {

namespace {

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

NamedTensors read_weights(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("cannot open weights file '" + path + "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue root;
  try {
    root = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string first = e.what();
    first = first.substr(0, first.find('\n'));
    throw InvalidInput("cannot read weights file '" + path + "': " + first +
                       ". yoloflow reads files written by torch.save(state_dict) (a dict name -> "
                       "tensor); a full Ultralytics checkpoint pickles Python classes, so save its "
                       "state dict first: torch.save(YOLO('model.pt').model.float().state_dict(), 'sd.pt')");
  }
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
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, t] : tensors) dict.insert(name, t.detach().to(torch::kCPU).contiguous());
  const auto bytes = torch::pickle_save(dict);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write weights file '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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

}  // namespace yoloflow::core
