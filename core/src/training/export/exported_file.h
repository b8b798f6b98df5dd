#pragma once
// What an exported ONNX file says of itself, for `yoloflow val` and `predict` on it: the
// metadata Ultralytics' export and ours write (imgsz, names, stride, batch, args), and what
// the graph holds (float type, QDQ nodes, NMS, symbolic sizes), from which the runtime that
// runs it here is chosen (exported_runtime.h).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace yoloflow::core {

struct ExportedFile {
  std::string path;
  std::shared_ptr<onnx::ModelProto> model;
  std::map<std::string, std::string> metadata;
  std::vector<std::string> names;  // one per class
  int nc = 0;
  std::int64_t height = 0, width = 0;  // of the input (the metadata's imgsz for a --dynamic file)
  std::int64_t batch = 0;              // 0: symbolic
  std::int64_t stride = 32;
  bool half = false, int8 = false, nms = false, dynamic = false;
  // "detect", or "segment" for a file whose output0 carries `masks` mask coefficients per
  // anchor after the class probabilities and whose output1 holds the prototypes
  // (batch, masks, height / 4, width / 4), as Ultralytics exports YOLO11-seg.
  std::string task = "detect";
  std::int64_t masks = 0;
  std::string description;  // the metadata's description, or the producer

  // "float32", "float16", "int8 QDQ", with " + NMS" and ", dynamic" as they apply.
  std::string variant() const;
};

// Reads `path` (an .onnx file, a regular file: runtime/util/file_checks.h) and its external data
// (onnx_file_tensors.h: every tensor complete and checked); `option` names it in messages
// ("--weights"). Throws InvalidInput in one line when it is missing, not an ONNX model, holds
// a tensor or external data that are refused, or is not a detector's (one input (B, 3, H, W)
// of at most 8192 pixels a side and 1 GiB a batch, an output (B, 4 + nc, anchors) or an NMS
// output (B, max_det, 6), at most 100000 classes) or a segmentation model's (the metadata's
// task segment: output0 (B, 4 + nc + masks, anchors), output1 (B, masks, H/4, W/4)).
ExportedFile read_exported_file(const std::string& path, const std::string& option);

// Parses Python's repr of the names dict Ultralytics writes: {0: 'person', 1: "o'clock"}.
// Returns false when the text is not such a dict.
bool parse_names_metadata(const std::string& text, std::map<int, std::string>& out);

}  // namespace yoloflow::core
