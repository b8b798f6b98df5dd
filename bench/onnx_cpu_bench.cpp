// yoloflow_bench_onnx_cpu: latency per image on the CPU of trained weights and of the ONNX
// files exported from them, each run the way `yoloflow val` and `predict` run it: the weights in
// LibTorch (eager forward + decode: the baseline, timed in the same invocation), a float32 file
// in OpenCV's dnn, and every file in yoloflow's LibTorch evaluator of the ONNX operators.
// Prints ms per image and the ratio to the baseline at each batch size.
//   yoloflow_bench_onnx_cpu --weights W.pt --model yolo11n --onnx fp32.onnx,int8.onnx --batch 1 --iters 5
// The files' batch must be the --batch given (export --batch N); a --dynamic file takes any.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <opencv2/core/utility.hpp>
#include <thread>

#include "log/logging.h"
#include "runtime/plugin/plugin_manager.h"
#include "training/builtin_components.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/export/exported_runtime.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

double ms_per_image(Model& model, const torch::Tensor& x, int iters, int warmup) {
  torch::NoGradGuard ng;
  for (int i = 0; i < warmup; ++i) model.decode(model.forward_train(x));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) model.decode(model.forward_train(x));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return ms / iters / static_cast<double>(x.size(0));
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  core::init_logging(LogLevel::Warn);
  core::use_builtin_components();
  CLI::App app{"Latency per image of weights (LibTorch) and of their exported ONNX files on the CPU"};
  std::string weights, arch, onnx_list;
  int batch = 1, imgsz = 640, iters = 5, warmup = 1;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  app.add_option("--weights", weights, "The weights the files were exported from (the baseline)")->required();
  app.add_option("--model", arch, "Architecture of a plain state dict (yolo11n)");
  app.add_option("--onnx", onnx_list, "Exported files, comma-separated")->required();
  app.add_option("--batch", batch, "Images per forward pass")->capture_default_str();
  app.add_option("--imgsz", imgsz, "Square image size")->capture_default_str();
  app.add_option("--iters", iters, "Timed iterations")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed iterations first")->capture_default_str();
  app.add_option("--threads", threads, "Threads of LibTorch and of OpenCV alike (default: every core)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  // The same threads for every runtime, so the ratios compare the runtimes, not their pools.
  torch::set_num_threads(std::max(1, threads));
  cv::setNumThreads(std::max(1, threads));
  try {
    core::PluginManager pm;
    pm.load_all();
    torch::manual_seed(0);
    const auto x = torch::rand({batch, 3, imgsz, imgsz});
    auto loaded = core::load_checkpoint_model(pm.registry(), weights, torch::Device(torch::kCPU), "--weights", arch);
    const double base = ms_per_image(*loaded.model, x, iters, warmup);
    std::cout << std::fixed << std::setprecision(2) << "batch " << batch << ", " << imgsz << "x" << imgsz << ", "
              << torch::get_num_threads() << " threads, " << iters << " iterations\n"
              << std::left << std::setw(34) << "LibTorch eager (baseline)" << std::right << std::setw(10) << base
              << " ms/image  1.00x\n";
    for (const auto& path : split_list(onnx_list)) {
      const auto file = core::read_exported_file(path, "--onnx");
      for (const auto choice : {core::OnnxRuntimeChoice::OpenCv, core::OnnxRuntimeChoice::LibTorch}) {
        const std::string label = file.variant() + (choice == core::OnnxRuntimeChoice::OpenCv ? " OpenCV dnn" : " evaluator");
        try {
          auto rt = core::open_exported_runtime(file, choice, "--onnx");
          const double t = ms_per_image(*rt.model, x, iters, warmup);
          std::cout << std::left << std::setw(34) << label << std::right << std::setw(10) << t << " ms/image  "
                    << t / base << "x\n";
        } catch (const InvalidInput&) {
          std::cout << std::left << std::setw(34) << label << std::right << std::setw(10) << "-"
                    << " (this runtime cannot run it)\n";
        }
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
