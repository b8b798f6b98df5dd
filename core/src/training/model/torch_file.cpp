#include "training/model/torch_file.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "training/model/declared_tensor.h"
#include "runtime/util/file_checks.h"
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

// What a file that is no zip archive starts with, in words.
std::string what_it_is(const std::string& bytes) {
  // torch.save's format before PyTorch 1.6: a pickled magic number first (PROTO 2, LONG1 of 10 bytes).
  static const unsigned char kLegacyMagic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  if (bytes.size() >= sizeof kLegacyMagic && std::memcmp(bytes.data(), kLegacyMagic, sizeof kLegacyMagic) == 0) {
    return "is a PyTorch file in the legacy format (torch.save before PyTorch 1.6, or with "
           "_use_new_zipfile_serialization=False), which yoloflow does not read: save it again with a current PyTorch";
  }
  const std::size_t n = std::min<std::size_t>(bytes.size(), 256);
  bool text = true;
  for (std::size_t k = 0; k < n && text; ++k) {
    const auto c = static_cast<unsigned char>(bytes[k]);
    text = c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c != 0x7f);  // bytes >= 0x80: UTF-8
  }
  if (text) {
    std::string first = bytes.substr(0, std::min<std::size_t>(bytes.find_first_of("\r\n"), 60));
    for (char& c : first) {
      if (static_cast<unsigned char>(c) >= 0x80) c = '?';
    }
    const bool lfs = first.rfind("version https://git-lfs", 0) == 0;
    return "is not a PyTorch file: it starts with text (\"" + first + "\")" +
           (lfs ? "; it is a Git LFS pointer: fetch the file itself (git lfs pull)" : "");
  }
  char hex[16];
  std::string start;
  for (std::size_t k = 0; k < std::min<std::size_t>(bytes.size(), 8); ++k) {
    std::snprintf(hex, sizeof hex, "%s%02x", k ? " " : "", static_cast<unsigned char>(bytes[k]));
    start += hex;
  }
  return "is not a PyTorch file (a zip archive): it starts with the bytes " + start;
}

// The folder of a PyTorch archive's records: the one holding data.pkl at the top level.
// PyTorch names it after the file ("archive" from a stream, "best" for best.pt).
std::string record_folder(const ZipArchive& zip, const std::string& name) {
  for (const auto& e : zip.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      return e.name.substr(0, slash + 1);
    }
  }
  for (const auto& e : zip.entries()) {
    const auto slash = e.name.find('/');
    if (slash != std::string::npos && (e.name.compare(slash, std::string::npos, "/constants.pkl") == 0 ||
                                       e.name.compare(slash, 6, "/code/") == 0)) {
      throw InvalidInput(name + " is a TorchScript archive (torch.jit.save), not a weights file; give the "
                         "weights it was made from (a state dict or a checkpoint)");
    }
  }
  std::string listed;
  for (std::size_t k = 0; k < zip.entries().size() && k < 3; ++k) listed += (k ? ", '" : "'") + zip.entries()[k].name + "'";
  throw InvalidInput(name + " is a zip archive but not a PyTorch file: it has no data.pkl" +
                     (listed.empty() ? std::string(" (it is empty)") : " (it holds " + listed + (zip.entries().size() > 3 ? ", ..." : "") + ")"));
}

}  // namespace

TorchFile TorchFile::open(const std::string& path, const std::string& name) {
  TorchFile f;
  f.path_ = path;
  f.name_ = name.empty() ? "weights file '" + path + "'" : name;
  auto bytes = std::make_shared<std::string>(read_regular_file(path, f.name_));
  f.bytes_ = bytes;
  if (bytes->empty()) throw InvalidInput(f.name_ + " is empty (0 bytes)");
  if (!starts_like_zip(*bytes)) throw InvalidInput(f.name_ + " " + what_it_is(*bytes));
  try {
    f.zip_ = std::make_shared<ZipArchive>(*bytes);
  } catch (const ZipError& e) {
    throw InvalidInput(f.name_ + " " + e.what());
  }
  f.prefix_ = record_folder(*f.zip_, f.name_);
  if (const ZipEntry* order = f.zip_->find(f.prefix_ + "byteorder")) {
    const std::string_view o = f.zip_->data(*order);
    if (o != "little") {
      throw InvalidInput(f.name_ + ": its tensors are stored " + std::string(o.substr(0, 16)) +
                         "-endian; yoloflow reads little-endian files");
    }
  }
  const std::uint16_t probe = 1;
  if (*reinterpret_cast<const unsigned char*>(&probe) != 1) throw Error("reading weights needs a little-endian host");
  try {
    f.root_ = unpickle(f.zip_->data(*f.zip_->find(f.prefix_ + "data.pkl")));
  } catch (const UnsupportedPickle& e) {
    throw InvalidInput(f.name_ + ": " + e.reason + " (byte " + std::to_string(e.offset) + " of " + f.prefix_ +
                       "data.pkl); yoloflow reads weights without running them, and a weights file may name only "
                       "classes of PyTorch, Ultralytics and plain data");
  }
  return f;
}

torch::Tensor TorchFile::tensor(const PickleValue& value, const std::string& what) {
  if (value.kind != PickleValue::Kind::Tensor || !value.tensor) {
    throw InvalidInput(name_ + ": '" + what + "' is " + value.describe() + ", not a tensor");
  }
  const PickledTensor& t = *value.tensor;
  const std::string record = prefix_ + "data/" + t.storage_key;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  for (const auto& [type, d] : kStorageTypes) {
    if (t.storage_type == type) dtype = d;
  }
  if (dtype == c10::ScalarType::Undefined) {
    throw InvalidInput(name_ + ": tensor '" + what + "' has a storage of type torch." + t.storage_type +
                       ", which yoloflow does not read");
  }
  const ZipEntry* entry = zip_->find(record);
  if (!entry) throw InvalidInput(name_ + ": tensor '" + what + "' names the record " + record + ", which it lacks");
  // Everything the file declares is checked before anything is allocated: the storage's
  // element count against its record's bytes, then the view's sizes, strides and offset
  // against that storage and the budget of one tensor (declared_tensor.h).
  const std::uint64_t element = c10::elementSize(dtype);
  if (t.storage_numel < 0 || static_cast<std::uint64_t>(t.storage_numel) > entry->size / element ||
      static_cast<std::uint64_t>(t.storage_numel) * element != entry->size) {
    throw InvalidInput(name_ + ": record " + record + " holds " + std::to_string(entry->size) +
                       " bytes, its storage of " + std::to_string(t.storage_numel) + " elements needs " +
                       (t.storage_numel < 0 ? std::string("a size of at least 0")
                                            : std::to_string(static_cast<std::uint64_t>(t.storage_numel) * element)));
  }
  std::uint64_t elements = 0;
  const std::string problem =
      check_declared_view({t.sizes, t.strides, t.storage_offset}, t.storage_numel, element, dtype_name(dtype), elements);
  if (!problem.empty()) throw InvalidInput(name_ + ": tensor '" + what + "' " + problem);
  // Views may share a storage (tied weights), so the tensors of a file may declare more than
  // it stores; but not much more: a file of many views repeating one stored value would make
  // whatever copies them all (check_finite, weights export) take memory and time without end.
  if (counted_.insert(&t).second) {
    declared_bytes_ += elements * element;
    if (declared_bytes_ > bytes_->size() + kMaxTensorBytes) {
      throw InvalidInput(name_ + ": tensor '" + what + "' brings what its tensors declare to " +
                         std::to_string(declared_bytes_) + " bytes, more than the file's " +
                         std::to_string(bytes_->size()) + " bytes plus " + bytes_text(kMaxTensorBytes) +
                         ": its views repeat the values it stores that often");
    }
  }
  auto it = storages_.find(t.storage_key);
  if (it == storages_.end()) {
    auto storage = torch::empty({t.storage_numel}, torch::TensorOptions().dtype(dtype));
    if (entry->size > 0) std::memcpy(storage.data_ptr(), zip_->data(*entry).data(), entry->size);
    it = storages_.emplace(t.storage_key, storage).first;
  } else if (it->second.scalar_type() != dtype || it->second.numel() != t.storage_numel) {
    throw InvalidInput(name_ + ": tensor '" + what + "' reads record " + record + " as " + std::to_string(t.storage_numel) +
                       " values of " + dtype_name(dtype) + ", which an earlier tensor read as " +
                       std::to_string(it->second.numel()) + " values of " + dtype_name(it->second.scalar_type()));
  }
  try {
    return it->second.as_strided(t.sizes, t.strides, t.storage_offset);
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    throw InvalidInput(name_ + ": tensor '" + what + "' cannot be made: " + why.substr(0, why.find('\n')));
  }
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return c10::toString(dtype);
  }
}

std::string storage_class(c10::ScalarType dtype) {
  for (const auto& [type, d] : kStorageTypes) {
    if (d == dtype) return type;
  }
  return "";
}

}  // namespace yoloflow::core
