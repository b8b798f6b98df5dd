#pragma once
// The export formats of Ultralytics' `yolo export format=...` that yoloflow does not write,
// each with the way to it from the ONNX file yoloflow does write (`--format onnx`).
#include <string>

namespace yoloflow::core {

// For a format other than "onnx": one line saying it is not written and how to get there from
// the ONNX file; "" for "onnx". Unknown names get the list of formats.
std::string unsupported_export_format(const std::string& format);

}  // namespace yoloflow::core
