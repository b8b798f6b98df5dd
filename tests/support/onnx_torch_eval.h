#pragma once
// Runs an exported ONNX file through tests/support/onnx_torch_eval.py: the graph evaluated op
// by op by PyTorch in float64, a reference for what the file computes that shares no code with
// the exporter or with an ONNX runtime.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/model.h"

namespace yoloflow::test {

// A model's decoded output in the exported file's layout, Ultralytics' (B, 4 + nc, A): centre x,
// centre y, width, height in input pixels, then the class probabilities.
inline torch::Tensor export_layout(const Predictions& d) {
  const auto& b = d.boxes;  // (B, A, 4) xyxy
  const auto xywh = torch::stack({(b.select(2, 0) + b.select(2, 2)) / 2, (b.select(2, 1) + b.select(2, 3)) / 2,
                                  b.select(2, 2) - b.select(2, 0), b.select(2, 3) - b.select(2, 1)},
                                 1);  // (B, 4, A)
  return torch::cat({xywh, d.scores.transpose(1, 2)}, 1);
}

inline torch::Tensor onnx_torch_eval(const std::string& model, const torch::Tensor& images, const std::string& dir) {
  const auto x = images.to(torch::kFloat).contiguous();
  const auto in = dir + "/eval-in.bin", out = dir + "/eval-out.bin";
  {
    std::ofstream f(in, std::ios::binary);
    f.write(static_cast<const char*>(x.data_ptr()), static_cast<std::streamsize>(x.numel() * 4));
  }
  std::string cmd = python() + " " + YOLOFLOW_SOURCE_DIR + "/tests/support/onnx_torch_eval.py " + model + " " + in;
  for (auto d : x.sizes()) cmd += " " + std::to_string(d);
  const auto r = run_shell(cmd + " " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::int64_t> shape;
  std::istringstream words(r.output.substr(r.output.find("shape ") + 6));
  for (std::int64_t d; words >> d;) shape.push_back(d);
  std::ifstream f(out, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto y = torch::empty(shape, torch::kFloat);
  REQUIRE(bytes.size() == static_cast<std::size_t>(y.numel() * 4));
  std::memcpy(y.data_ptr(), bytes.data(), bytes.size());
  return y;
}

}  // namespace yoloflow::test
