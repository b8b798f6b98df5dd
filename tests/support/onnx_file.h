#pragma once
// An exported ONNX file read back as the export tests check it: the model proto and its
// metadata entries (Ultralytics' keys: names, imgsz, stride, args...).
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <onnx/onnx_pb.h>

namespace yoloflow::test {

inline onnx::ModelProto read_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

// The metadata value of `key`, "<missing>" when the file has none.
inline std::string meta(const onnx::ModelProto& m, const std::string& key) {
  for (const auto& p : m.metadata_props()) {
    if (p.key() == key) return p.value();
  }
  return "<missing>";
}

}  // namespace yoloflow::test
