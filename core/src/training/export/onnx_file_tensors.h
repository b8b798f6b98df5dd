#pragma once
// The tensors an ONNX file holds (initializers, Constant nodes' values, in subgraphs too),
// made whole and checked where the file is read, before any runtime sees them:
// - external data (a tensor whose bytes lie in another file, `location`, `offset`, `length`,
//   as ONNX writes models over 2 GiB) are read into the tensor, so that every runtime here gets
//   the same self-contained model. The location must be a regular file inside the model's
//   folder (a path to /dev/zero would never end, one with `..` or a link out of the folder reads
//   files the model has no business with) holding the bytes offset + length name;
// - every tensor's declared dims pass declared_tensor.h (non-negative, no overflow, at most
//   kMaxTensorBytes) and its data holds exactly the elements they declare, so no runtime
//   allocates more than the file and its data files hold.
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace yoloflow::core {

// All external data of one model together, read into memory: protobuf's own limit on a model
// file, which the ONNX format moves weights out of the file to get past; a YOLO11x in float32
// holds 230 MB.
constexpr std::uint64_t kMaxOnnxExternalBytes = std::uint64_t{2} << 30;

// Reads every external tensor of `model` (read from `model_path`) into the model and checks
// every tensor's dims and data. `name` starts messages ("--weights m.onnx"). Throws
// InvalidInput in one line naming the tensor and, for external data, the file it names:
//   "--weights m.onnx: tensor 'w' keeps its data in '/dev/zero', which is not a regular file (a character device)"
//   "--weights m.onnx: tensor 'w' keeps its data in '../w.bin', outside the model's folder"
//   "--weights m.onnx: tensor 'w' needs bytes 0 to 4096 of 'w.bin', which holds 100"
void load_onnx_file_tensors(onnx::ModelProto& model, const std::string& model_path, const std::string& name);

}  // namespace yoloflow::core
