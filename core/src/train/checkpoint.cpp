#include "train/checkpoint.h"

#include <fstream>
#include <iterator>

#include <torch/serialize.h>

#include "util/atomic_file.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

constexpr const char* kFormat = "yoloflow-checkpoint-1";

c10::Dict<std::string, at::Tensor> to_dict(const TensorList& list) {
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [name, t] : list) d.insert(name, t.detach().to(torch::kCPU).contiguous());
  return d;
}

TensorList from_ivalue(const c10::IValue& v, const std::string& path, const std::string& key) {
  if (!v.isGenericDict()) throw Error(path + ": entry '" + key + "' is not a dict of tensors");
  TensorList out;
  for (const auto& item : v.toGenericDict()) {
    if (!item.key().isString() || !item.value().isTensor()) {
      throw Error(path + ": entry '" + key + "' holds something other than named tensors");
    }
    out.emplace_back(item.key().toStringRef(), item.value().toTensor());
  }
  return out;
}

}  // namespace

std::map<std::string, torch::Tensor> to_map(const TensorList& list) {
  std::map<std::string, torch::Tensor> m;
  for (const auto& [k, v] : list) m[k] = v;
  return m;
}

std::vector<char> serialize_checkpoint(const Checkpoint& c) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string(kFormat));
  d.insert("model", to_dict(c.model));
  d.insert("ema", to_dict(c.ema));
  d.insert("optimizer", to_dict(c.optimizer));
  d.insert("precision", to_dict(c.precision));
  d.insert("grads", to_dict(c.grads));
  d.insert("next_sequence", static_cast<int64_t>(c.next_sequence));
  d.insert("ema_updates", c.ema_updates);
  d.insert("epoch", static_cast<int64_t>(c.epoch));
  d.insert("step_in_epoch", c.step_in_epoch);
  d.insert("global_step", c.global_step);
  d.insert("best_fitness", c.best_fitness);
  d.insert("meta", c.meta.dump());
  return torch::pickle_save(c10::IValue(d));
}

void write_checkpoint_bytes(const std::string& path, const std::vector<char>& bytes) {
  write_file_atomic(path, std::string_view(bytes.data(), bytes.size()));
}

void save_checkpoint(const std::string& path, const Checkpoint& c) { write_checkpoint_bytes(path, serialize_checkpoint(c)); }

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot read checkpoint " + path + ": no such file or not readable");
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  c10::IValue v;
  try {
    v = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    throw Error(path + " is not a readable checkpoint (truncated or another format): " +
                std::string(e.what()).substr(0, 200));
  }
  if (!v.isGenericDict()) throw Error(path + " is not a yoloflow checkpoint (not a dict)");
  const auto d = v.toGenericDict();
  auto get = [&](const char* key) -> c10::IValue {
    if (!d.contains(key)) throw Error(path + " is not a yoloflow checkpoint: no '" + key + "' entry");
    return d.at(key);
  };
  if (!get("format").isString() || get("format").toStringRef() != kFormat) {
    throw Error(path + " is not a yoloflow checkpoint (format entry differs from " + kFormat + ")");
  }
  Checkpoint c;
  c.model = from_ivalue(get("model"), path, "model");
  c.ema = from_ivalue(get("ema"), path, "ema");
  c.optimizer = from_ivalue(get("optimizer"), path, "optimizer");
  c.precision = from_ivalue(get("precision"), path, "precision");
  if (d.contains("grads")) c.grads = from_ivalue(d.at("grads"), path, "grads");
  if (d.contains("next_sequence")) c.next_sequence = static_cast<std::uint64_t>(d.at("next_sequence").toInt());
  c.ema_updates = get("ema_updates").toInt();
  c.epoch = static_cast<int>(get("epoch").toInt());
  c.step_in_epoch = get("step_in_epoch").toInt();
  c.global_step = get("global_step").toInt();
  c.best_fitness = get("best_fitness").toDouble();
  try {
    c.meta = nlohmann::json::parse(get("meta").toStringRef());
  } catch (const std::exception& e) {
    throw Error(path + ": its 'meta' entry is not valid JSON: " + e.what());
  }
  return c;
}

}  // namespace yoloflow::core
