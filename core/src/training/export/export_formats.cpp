#include "training/export/export_formats.h"

#include <map>

namespace yoloflow::core {

std::string unsupported_export_format(const std::string& format) {
  if (format == "onnx") return "";
  // Ultralytics' format argument -> how the ONNX file becomes it (each tool's own converter).
  static const std::map<std::string, std::string> routes{
      {"engine",
       "TensorRT engines are built on the machine that runs them: export --format onnx (--int8 --data D.yaml for "
       "INT8, --half for FP16), then `trtexec --onnx=model.onnx --saveEngine=model.engine` (add --int8 for the QDQ "
       "file, --fp16 for a half one)"},
      {"torchscript", "TorchScript is not written: run the .pt weights in LibTorch or PyTorch, or export --format onnx"},
      {"openvino", "export --format onnx, then `ovc model.onnx` (OpenVINO reads the ONNX file directly too; the QDQ "
                   "file of --int8 runs as INT8)"},
      {"coreml", "coremltools converts from PyTorch, not from ONNX (since coremltools 6): write the weights as a "
                 "PyTorch state dict (`yoloflow weights export`) and convert them there"},
      {"saved_model", "export --format onnx, then `onnx2tf -i model.onnx` (TensorFlow SavedModel)"},
      {"pb", "export --format onnx, then `onnx2tf -i model.onnx` (TensorFlow)"},
      {"tflite", "export --format onnx, then `onnx2tf -i model.onnx` (writes .tflite files, float32, float16 and "
                 "int8 with its own calibration)"},
      {"edgetpu", "export --format onnx, then `onnx2tf -i model.onnx -oiqt` and `edgetpu_compiler` on the int8 "
                  ".tflite"},
      {"tfjs", "export --format onnx, then `onnx2tf -i model.onnx` and `tensorflowjs_converter` on the SavedModel"},
      {"paddle", "export --format onnx, then `x2paddle --framework=onnx --model=model.onnx --save_dir=paddle`"},
      {"mnn", "export --format onnx, then `MNNConvert -f ONNX --modelFile model.onnx --MNNModel model.mnn`"},
      {"ncnn", "export --format onnx, then `pnnx model.onnx` or `onnx2ncnn model.onnx model.param model.bin`"},
      {"imx", "export --format onnx --int8 --data D.yaml, then Sony's Model Compression Toolkit / imxconv-pt"},
      {"rknn", "export --format onnx, then rknn-toolkit2 (`rknn.load_onnx(model='model.onnx')`, rknn.build, "
               "rknn.export_rknn)"},
      {"executorch", "ExecuTorch programs come from PyTorch: run the .pt weights there, or export --format onnx"},
      {"axelera", "export --format onnx, then the Axelera Voyager SDK's compiler on the ONNX file"},
      {"deepx", "export --format onnx, then DEEPX's DX-COM compiler on the ONNX file"},
      {"qnn", "export --format onnx, then `qnn-onnx-converter --input_network model.onnx` (Qualcomm AI Engine Direct)"},
  };
  const auto it = routes.find(format);
  if (it == routes.end()) {
    return "--format " + format + " is not an export format; yoloflow writes onnx (Ultralytics' other formats: "
           "torchscript, openvino, engine, coreml, saved_model, pb, tflite, edgetpu, tfjs, paddle, mnn, ncnn, imx, "
           "rknn, executorch, axelera, deepx, qnn are reached from the ONNX file)";
  }
  return "--format " + format + " is not written by yoloflow: " + it->second;
}

}  // namespace yoloflow::core
