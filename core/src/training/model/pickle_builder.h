#pragma once
// The values of one pickle as restricted_unpickler.cpp's opcode machine makes them: the arena
// that owns them and bounds how many there are, what the container opcodes do to them (APPEND,
// SETITEM, BUILD), and what an allowed global becomes when the pickle names, calls or
// instantiates it (GLOBAL, REDUCE, NEWOBJ, BINPERSID): a dict, a set, a tensor's storage record
// and layout, or an inert object holding its arguments. The allowlist (is_allowed_global,
// restricted_unpickler.h) is defined here too, beside the constructions it admits, so that a
// global and what it becomes are read and changed together. Nothing here calls what a pickle
// names. Torch-free: it only handles bytes.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "training/model/restricted_unpickler.h"

namespace yoloflow::core {

class PickleBuilder {
 public:
  PickleBuilder();

  // The offset of the opcode being carried out: every error names it.
  void at(std::size_t offset) { at_ = offset; }
  // Throws UnsupportedPickle at that offset.
  [[noreturn]] void fail(const std::string& what) const;

  // A new value in the arena; refuses more than kMaxPickleValues.
  PickleValue* make(PickleValue::Kind kind);
  PickleValue* sequence(PickleValue::Kind kind, std::vector<PickleValue*> items);
  // `v` when it is of `kind`, else fails naming `where` (the opcode or function).
  PickleValue* expect(PickleValue* v, PickleValue::Kind kind, const char* where) const;
  // `root` as the result: it keeps the whole arena alive.
  std::shared_ptr<const PickleValue> share(const PickleValue* root) const;

  // APPEND(S): items added to a list, or to an object (a list subclass).
  void append(PickleValue* target, const std::vector<PickleValue*>& items);
  // SETITEM(S), DICT: key, value... set in a dict (a repeated key keeps its first position, as
  // in Python), or added to an object (a dict subclass) as given.
  void set_items(PickleValue* target, const std::vector<PickleValue*>& kv);
  // BUILD: the state of an object; ignored on dicts and tensors.
  void build(PickleValue* target, PickleValue* state);

  // GLOBAL, STACK_GLOBAL: the class or function `module.name`, when allowed.
  PickleValue* global(const std::string& module, const std::string& name);
  // NEWOBJ(_EX): a dict, a set, or an inert object of the class `cls`.
  PickleValue* construct(const std::string& cls, PickleValue* args, PickleValue* kwargs);
  // REDUCE: what the data-only functions build (dicts, sets, LibTorch's typed lists, tensors);
  // an inert object holding its arguments for any other allowed global.
  PickleValue* reduce(const std::string& fn, PickleValue* args);
  // BINPERSID: torch.save's persistent id of a storage,
  // ('storage', torch.<Type>Storage, key, location, numel).
  PickleValue* storage(const PickleValue* pid);

 private:
  PickleValue* object_of(const std::string& cls, PickleValue* args, PickleValue* kwargs);
  PickleValue* arg(PickleValue* args, std::size_t k, const std::string& fn) const;
  std::vector<std::int64_t> ints(const PickleValue* v, const std::string& fn) const;

  // A deque: values never move, so they can point at each other.
  std::shared_ptr<std::deque<PickleValue>> values_;
  std::size_t at_ = 0;
};

}  // namespace yoloflow::core
