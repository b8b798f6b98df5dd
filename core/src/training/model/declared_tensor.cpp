#include "training/model/declared_tensor.h"

#include <cstdio>
#include <limits>

namespace yoloflow::core {
namespace {

constexpr std::uint64_t kMaxCount = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// The sizes' own problems, and their product when there are none (`elements`; saturated at
// kMaxCount + 1 where it would overflow, which the budget refuses with the sizes in words).
std::string check_sizes(const std::vector<std::int64_t>& sizes, std::uint64_t& elements, bool& overflow) {
  if (sizes.size() > kMaxTensorDims) {
    return "has " + std::to_string(sizes.size()) + " dimensions; a tensor may have at most " +
           std::to_string(kMaxTensorDims);
  }
  elements = 1;
  overflow = false;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) {
      return "has a negative size (" + std::to_string(sizes[d]) + ") in dimension " + std::to_string(d);
    }
  }
  for (const std::int64_t s : sizes) {
    const auto size = static_cast<std::uint64_t>(s);
    if (size == 0) {  // an empty tensor holds nothing, whatever its other sizes say
      elements = 0;
      overflow = false;
      return "";
    }
    if (!overflow && elements > kMaxCount / size) overflow = true;
    if (!overflow) elements *= size;
  }
  return "";
}

std::string sizes_text(const std::vector<std::int64_t>& sizes) {
  std::string out = "[";
  for (std::size_t d = 0; d < sizes.size() && d < 8; ++d) out += (d ? ", " : "") + std::to_string(sizes[d]);
  if (sizes.size() > 8) out += ", ...";
  return out + "]";
}

// Refuses more than kMaxTensorBytes; `over` ends the phrase (" over a storage of 1 element").
std::string check_budget(const std::vector<std::int64_t>& sizes, std::uint64_t elements, bool overflow,
                         std::size_t element_size, const std::string& dtype, const std::string& over) {
  const std::uint64_t limit = kMaxTensorBytes / (element_size ? element_size : 1);
  if (!overflow && elements <= limit) return "";
  const std::string count = overflow ? "more than " + std::to_string(kMaxCount) + " elements (sizes " + sizes_text(sizes) + ")"
                                     : std::to_string(elements) + " elements";
  const std::string bytes =
      overflow || elements > kMaxCount / element_size ? std::string() : " (" + std::to_string(elements * element_size) + " bytes)";
  return "declares " + count + " of " + dtype + bytes + over + ": more than the " + bytes_text(kMaxTensorBytes) +
         " one tensor may hold";
}

}  // namespace

std::string check_declared_view(const DeclaredView& view, std::int64_t storage_elements, std::size_t element_size,
                                const std::string& dtype, std::uint64_t& elements) {
  if (view.strides.size() != view.sizes.size()) {
    return "has " + std::to_string(view.sizes.size()) + " sizes but " + std::to_string(view.strides.size()) + " strides";
  }
  bool overflow = false;
  if (std::string why = check_sizes(view.sizes, elements, overflow); !why.empty()) return why;
  for (std::size_t d = 0; d < view.strides.size(); ++d) {
    if (view.strides[d] < 0) {
      return "has a negative stride (" + std::to_string(view.strides[d]) + ") in dimension " + std::to_string(d);
    }
  }
  if (view.offset < 0) return "has a negative storage offset (" + std::to_string(view.offset) + ")";
  const std::string storage = " over a storage of " + std::to_string(storage_elements) +
                              (storage_elements == 1 ? " element" : " elements");
  if (std::string why = check_budget(view.sizes, elements, overflow, element_size, dtype, storage); !why.empty()) {
    return why;
  }
  if (elements == 0) {
    if (view.offset > storage_elements) {
      return "starts at element " + std::to_string(view.offset) + " of its storage, which holds " +
             std::to_string(storage_elements);
    }
    return "";
  }
  // The last element the view reaches: offset + sum((size - 1) * stride), each term and sum
  // checked against overflow.
  std::uint64_t last = static_cast<std::uint64_t>(view.offset);
  for (std::size_t d = 0; d < view.sizes.size(); ++d) {
    const auto reach = static_cast<std::uint64_t>(view.sizes[d] - 1);
    const auto stride = static_cast<std::uint64_t>(view.strides[d]);
    if (reach != 0 && stride > (kMaxCount - last) / reach) {
      return "reaches beyond element " + std::to_string(kMaxCount) + " of its storage, which holds " +
             std::to_string(storage_elements);
    }
    last += reach * stride;
  }
  if (storage_elements < 0 || last >= static_cast<std::uint64_t>(storage_elements)) {
    return "reaches element " + std::to_string(last) + " of its storage, which holds " + std::to_string(storage_elements);
  }
  return "";
}

std::string check_declared_dims(const std::vector<std::int64_t>& dims, std::size_t element_size,
                                const std::string& dtype, std::uint64_t& elements) {
  bool overflow = false;
  if (std::string why = check_sizes(dims, elements, overflow); !why.empty()) return why;
  return check_budget(dims, elements, overflow, element_size, dtype, "");
}

std::string bytes_text(std::uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < sizeof kUnits / sizeof kUnits[0]) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0 || value == static_cast<double>(static_cast<std::uint64_t>(value))) {
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(value), kUnits[unit]);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

}  // namespace yoloflow::core
