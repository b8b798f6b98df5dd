#include "training/checkpoint/checkpoint.h"

#include <torch/serialize.h>

#include "training/model/torch_file.h"
#include "training/model/weights_io.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"
#include "runtime/pipeline/json_text.h"

namespace yoloflow::core {
namespace {

constexpr const char* kFormat = "yoloflow-checkpoint-1";

c10::Dict<std::string, at::Tensor> to_dict(const TensorList& list) {
  c10::Dict<std::string, at::Tensor> d;
  for (const auto& [name, t] : list) d.insert(name, t.detach().to(torch::kCPU).contiguous());
  return d;
}

using K = PickleValue::Kind;

TensorList tensors_in(TorchFile& file, const PickleValue* v, const std::string& key) {
  if (!v || v->kind != K::Dict) throw InvalidInput(file.name() + ": entry '" + key + "' is not a dict of tensors");
  TensorList out;
  for (std::size_t k = 0; k + 1 < v->items.size(); k += 2) {
    if (v->items[k]->kind != K::String || v->items[k + 1]->kind != K::Tensor) {
      throw InvalidInput(file.name() + ": entry '" + key + "' holds something other than named tensors");
    }
    out.emplace_back(v->items[k]->s, file.tensor(*v->items[k + 1], key + "." + v->items[k]->s));
  }
  return out;
}

}  // namespace

std::map<std::string, torch::Tensor> to_map(const TensorList& list) {
  std::map<std::string, torch::Tensor> m;
  for (const auto& [k, v] : list) m[k] = v;
  return m;
}

Checkpoint deployable_checkpoint(const Checkpoint& c) {
  Checkpoint d;
  for (const auto& [name, t] : c.ema.empty() ? c.model : c.ema) {
    d.ema.emplace_back(name, t.is_floating_point() ? t.to(torch::kHalf) : t);
  }
  d.ema_updates = c.ema_updates;
  d.epoch = c.epoch;
  d.step_in_epoch = c.step_in_epoch;
  d.next_sequence = c.next_sequence;
  d.global_step = c.global_step;
  d.best_fitness = c.best_fitness;
  d.meta = c.meta;
  d.meta["deployable_only"] = true;
  return d;
}

bool deployable_only(const Checkpoint& c) { return c.meta.value("deployable_only", false); }

std::vector<char> serialize_checkpoint(const Checkpoint& c) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("format", std::string(kFormat));
  d.insert("model", to_dict(c.model));
  d.insert("ema", to_dict(c.ema));
  d.insert("optimizer", to_dict(c.optimizer));
  d.insert("precision", to_dict(c.precision));
  d.insert("grads", to_dict(c.grads));
  c10::impl::GenericDict callbacks(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [name, list] : c.callbacks) callbacks.insert(name, to_dict(list));
  d.insert("callback_tensors", callbacks);
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

bool is_yoloflow_checkpoint(const TorchFile& file) {
  const PickleValue* format = file.root().get("format");
  return format && format->kind == K::String && format->s == kFormat;
}

Checkpoint load_checkpoint(const std::string& path) {
  TorchFile file = TorchFile::open(path, "checkpoint '" + path + "'");
  return read_checkpoint(file);
}

Checkpoint read_checkpoint(TorchFile& file) {
  const PickleValue& root = file.root();
  if (root.kind != K::Dict) throw InvalidInput(file.name() + " is not a yoloflow checkpoint: it holds " + root.describe());
  if (!is_yoloflow_checkpoint(file)) {
    throw InvalidInput(file.name() + " is not a yoloflow checkpoint: " +
                       (root.get("format") ? std::string("its format entry is not ") + kFormat
                                           : std::string("it has no 'format' entry")));
  }
  auto get = [&](const char* key, K kind) -> const PickleValue& {
    const PickleValue* v = root.get(key);
    if (!v) throw InvalidInput(file.name() + " is not a complete yoloflow checkpoint: no '" + key + "' entry");
    if (v->kind != kind) throw InvalidInput(file.name() + ": its '" + key + "' entry is " + v->describe());
    return *v;
  };
  Checkpoint c;
  c.model = tensors_in(file, root.get("model"), "model");
  c.ema = tensors_in(file, root.get("ema"), "ema");
  check_finite(c.model, file.name(), "model");
  check_finite(c.ema, file.name(), "ema");
  c.optimizer = tensors_in(file, root.get("optimizer"), "optimizer");
  c.precision = tensors_in(file, root.get("precision"), "precision");
  if (root.get("grads")) c.grads = tensors_in(file, root.get("grads"), "grads");
  // Written since callbacks keep tensors of their own; absent in earlier checkpoints.
  if (const PickleValue* callbacks = root.get("callback_tensors")) {
    if (callbacks->kind != K::Dict) throw InvalidInput(file.name() + ": entry 'callback_tensors' is not a dict");
    for (std::size_t k = 0; k + 1 < callbacks->items.size(); k += 2) {
      if (callbacks->items[k]->kind != K::String) throw InvalidInput(file.name() + ": entry 'callback_tensors' has a key that is no name");
      const std::string& name = callbacks->items[k]->s;
      c.callbacks[name] = tensors_in(file, callbacks->items[k + 1], "callback_tensors." + name);
    }
  }
  if (root.get("next_sequence")) c.next_sequence = static_cast<std::uint64_t>(get("next_sequence", K::Int).i);
  c.ema_updates = get("ema_updates", K::Int).i;
  c.epoch = static_cast<int>(get("epoch", K::Int).i);
  c.step_in_epoch = get("step_in_epoch", K::Int).i;
  c.global_step = get("global_step", K::Int).i;
  c.best_fitness = get("best_fitness", K::Float).f;
  // Read as every JSON text is (runtime/pipeline/json_text.h): one line naming the entry.
  c.meta = read_json_text(get("meta", K::String).s, file.name() + ": its 'meta' entry");
  return c;
}

}  // namespace yoloflow::core
