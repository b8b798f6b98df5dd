#pragma once
// The shape a file declares for a tensor, checked before anything is allocated or viewed.
// A weights file (torch_file.h) and an exported ONNX file (export/exported_file.h) each say a
// tensor's sizes themselves, and whatever copies the tensor first believes them: a view of one
// stored float with stride 0 may declare 2^40 elements, stays inside its storage, and asks for
// 4 TiB the moment anything materialises it. Every tensor read from a file is checked here:
// sizes, strides and offset non-negative, every product and sum computed without overflow,
// the view inside its storage, and the element count within a budget.
// Torch-free: it only does arithmetic on what the file says.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace yoloflow::core {

// The most bytes one tensor read from a file may hold, its declared elements times their size:
// 1 GiB. The largest weight of the largest YOLO11 (yolo11x: a 3x3 conv from 768 to 768
// channels, 5.3 million float32 values) holds 21 MB, so this leaves a factor of 50 for wider
// models of plugins, while a declared shape can no longer ask for more than a machine running
// yoloflow has: one copy of the largest tensor allowed fits, whatever the file says.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 30;
// PyTorch's own kernels take at most 25 dimensions; a YOLO weight has at most 4.
constexpr std::size_t kMaxTensorDims = 64;

// A strided view as a pickled tensor declares it (PyTorch's _rebuild_tensor_v2).
struct DeclaredView {
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;  // one per size, in elements
  std::int64_t offset = 0;            // in elements
};

// Checks `view` over a storage of `storage_elements` elements of `element_size` bytes each
// (`dtype` names them: "float32"). Returns "" and sets `elements` to the view's element count
// when it is good; otherwise what is wrong, as a phrase to follow "tensor 'NAME' ":
//   "declares 1099511627776 elements of float32 (4398046511104 bytes) over a storage of 1
//    element: more than the 1 GiB one tensor may hold"
//   "has a negative size (-3) in dimension 1"
//   "reaches element 20 of its storage, which holds 16"
std::string check_declared_view(const DeclaredView& view, std::int64_t storage_elements, std::size_t element_size,
                                const std::string& dtype, std::uint64_t& elements);

// The same for a dense tensor of `dims` (ONNX's TensorProto), which has no storage of its own
// to stay inside: sizes non-negative, their product without overflow and within the budget.
std::string check_declared_dims(const std::vector<std::int64_t>& dims, std::size_t element_size,
                                const std::string& dtype, std::uint64_t& elements);

// "1 GiB", "21 MB", "4 TiB": a byte count for messages, in the largest unit it reaches.
std::string bytes_text(std::uint64_t bytes);

}  // namespace yoloflow::core
