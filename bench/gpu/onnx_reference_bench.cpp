// yoloflow_bench_onnx_reference: what bench/gpu/onnx-parity.sh compares exported ONNX files
// against. For one model it writes, into --out:
//   weights.pt            the weights (--weights as given, or a fresh model whose weights and
//                         batch-norm statistics are randomised with --seed: weights no test saw)
//   input_<tag>.npy       float32 images in [0, 1] for a few shapes (tag = BxHxW)
//   libtorch_<tag>.npy    yoloflow's LibTorch eval output for them on the CPU, (B, 4 + nc, A) as
//                         the export writes it: cx, cy, w, h in pixels, then probabilities
// and prints, per --batches, LibTorch's eager forward + decode latency per image on --device
// (fp32, eval, no grad, input already on the device) as one JSON line each.
//
//   yoloflow_bench_onnx_reference --model yolo11s --out DIR [--weights W] [--imgsz 640]
//       [--shapes 2x640x640,1x384x640,3x320x320] [--batches 1,32] [--iters 50] [--device cuda]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "training/builtin_components.h"
#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/error.h"

namespace {

using namespace yoloflow;

// NumPy's .npy format (version 1.0), float32 little-endian, C order.
void write_npy(const std::string& path, const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU, torch::kFloat).contiguous();
  std::ostringstream shape;
  shape << "(";
  for (auto d : c.sizes()) shape << d << ", ";
  shape << ")";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape.str() + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * 4));
  if (!out) throw Error("cannot write " + path);
}

torch::Tensor export_layout(Model& m, const torch::Tensor& images) {
  const auto d = m.decode(m.forward_train(images));
  const auto b = d.boxes;
  const auto xywh = torch::stack({(b.select(2, 0) + b.select(2, 2)) / 2, (b.select(2, 1) + b.select(2, 3)) / 2,
                                  b.select(2, 2) - b.select(2, 0), b.select(2, 3) - b.select(2, 1)},
                                 1);
  return torch::cat({xywh, d.scores.transpose(1, 2)}, 1);
}

void randomise(torch::nn::Module& module, std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard ng;
  for (auto& item : module.named_buffers()) {
    const auto& name = item.key();
    auto& t = item.value();
    if (name.find("running_mean") != std::string::npos) t.normal_(0.0, 0.2);
    if (name.find("running_var") != std::string::npos) t.uniform_(0.5, 2.0);
  }
  for (auto& item : module.named_parameters()) {
    const auto& name = item.key();
    auto& t = item.value();
    if (name.find("dfl") != std::string::npos) continue;  // the fixed integral
    if (name.find(".bn.weight") != std::string::npos) {
      t.uniform_(0.5, 1.5);
    } else if (name.find(".bn.bias") != std::string::npos || t.dim() == 1) {
      t.normal_(0.0, 0.2);
    } else {
      t.mul_(1.0 + 0.1 * torch::randn_like(t));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  yoloflow::core::use_builtin_components();
  CLI::App app{"Reference outputs and LibTorch latency for the ONNX parity check"};
  std::string model_name = "yolo11n", out, weights, device = "cuda", shapes = "2x640x640,1x384x640,3x320x320",
              batches = "1,32";
  int imgsz = 640, iters = 50, seed = 0;
  app.add_option("--model", model_name);
  app.add_option("--out", out)->required();
  app.add_option("--weights", weights);
  app.add_option("--imgsz", imgsz);
  app.add_option("--shapes", shapes);
  app.add_option("--batches", batches);
  app.add_option("--iters", iters);
  app.add_option("--seed", seed);
  app.add_option("--device", device);
  CLI11_PARSE(app, argc, argv);
  try {
    core::PluginManager pm;
    pm.load_all();
    auto m = core::create_model(pm.registry(), model_name, 80);
    if (!weights.empty()) {
      core::load_weights(m->module(), core::read_weights(weights), weights);
    } else {
      randomise(m->module(), static_cast<std::uint64_t>(seed));
    }
    m->module().eval();
    core::write_weights(out + "/weights.pt", core::module_state(m->module()));
    torch::NoGradGuard ng;
    torch::manual_seed(1234);
    std::stringstream ss(shapes);
    for (std::string s; std::getline(ss, s, ',');) {
      int b = 0, h = 0, w = 0;
      if (std::sscanf(s.c_str(), "%dx%dx%d", &b, &h, &w) != 3) throw InvalidInput("bad shape " + s);
      const auto x = torch::rand({b, 3, h, w});
      write_npy(out + "/input_" + s + ".npy", x);
      write_npy(out + "/libtorch_" + s + ".npy", export_layout(*m, x));
    }
    const torch::Device dev(device);
    if (dev.is_cuda() && !torch::cuda::is_available()) throw Error("no CUDA device");
    m->module().to(dev);
    std::stringstream bs(batches);
    for (std::string s; std::getline(bs, s, ',');) {
      const int b = std::stoi(s);
      const auto x = torch::rand({b, 3, imgsz, imgsz}, torch::TensorOptions().device(dev));
      auto sync = [&] {
        if (dev.is_cuda()) torch::cuda::synchronize();
      };
      for (int i = 0; i < 10; ++i) export_layout(*m, x);
      sync();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) export_layout(*m, x);
      sync();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::cout << "{\"model\": \"" << model_name << "\", \"runtime\": \"libtorch-eager\", \"device\": \"" << device
                << "\", \"batch\": " << b << ", \"imgsz\": " << imgsz << ", \"ms_per_image\": " << ms / iters / b
                << "}" << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
