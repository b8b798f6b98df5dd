#pragma once
// How `yoloflow val` and `predict` take an exported ONNX file: by its extension, and with the
// runtime --runtime names: auto (OpenCV's dnn where it reads the file, else the LibTorch
// evaluator), or one of them. Plain data: the commands include it without LibTorch or libonnx.
#include <string>

namespace yoloflow::core {

enum class OnnxRuntimeChoice { Auto, OpenCv, LibTorch };

// "auto", "opencv", "libtorch"; throws InvalidInput naming `option` otherwise.
OnnxRuntimeChoice parse_onnx_runtime(const std::string& name, const std::string& option);

// A weights path that names an ONNX file (.onnx, any case).
bool is_onnx_path(const std::string& path);

}  // namespace yoloflow::core
