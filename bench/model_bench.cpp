// yoloflow_bench_model: time per image of the model's forward and forward+backward, for a
// chosen configuration (dtype, device, memory format) and for fp32 NCHW in the same run as
// the baseline. The model comes from the plugin, as in training.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>

#include <CLI/CLI.hpp>
#include <torch/cuda.h>

#include "log/logging.h"
#include "training/model/model_factory.h"
#include "model/yolo11/autocast_state.h"
#include "training/builtin_components.h"
#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

struct Config {
  std::string dtype = "fp32";
  bool channels_last = false;
};

struct Timing {
  double fwd_ms = 0, train_ms = 0;  // per image
};

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

Timing measure(core::PluginManager& pm, const std::string& arch, const Config& cfg, int batch, int imgsz, int iters,
               int warmup, const torch::Device& device) {
  auto model = core::create_model(pm.registry(), arch, 80, {{"channels_last", cfg.channels_last}});
  auto& m = model->module();
  m.to(device);  // keeps the memory format
  yolo11::AutocastState ac = yolo11::AutocastState::capture();
  if (cfg.dtype == "bf16") {
    if (device.is_cuda()) {
      ac.cuda = true;
      ac.cuda_dtype = at::kBFloat16;
    } else {
      ac.cpu = true;
      ac.cpu_dtype = at::kBFloat16;
    }
  }
  yolo11::AutocastGuard guard(ac);
  torch::manual_seed(0);
  auto x = torch::rand({batch, 3, imgsz, imgsz}, torch::TensorOptions().device(device));
  if (cfg.channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  using clock = std::chrono::steady_clock;
  auto run_fwd = [&] {
    torch::NoGradGuard ng;
    model->forward_train(x);
  };
  auto run_train = [&] {
    const auto out = model->forward_train(x).levels;
    torch::Tensor loss = torch::zeros({}, x.options());
    for (const auto& o : out) loss = loss + o.to(torch::kFloat).mean();
    loss.backward();
    for (auto& p : m.parameters()) {
      if (p.grad().defined()) p.mutable_grad().reset();
    }
  };
  Timing t;
  m.eval();
  for (int i = 0; i < warmup; ++i) run_fwd();
  sync(device);
  auto t0 = clock::now();
  for (int i = 0; i < iters; ++i) run_fwd();
  sync(device);
  t.fwd_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count() / (iters * batch);
  m.train();
  for (int i = 0; i < warmup; ++i) run_train();
  sync(device);
  t0 = clock::now();
  for (int i = 0; i < iters; ++i) run_train();
  sync(device);
  t.train_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count() / (iters * batch);
  return t;
}

void print(const std::string& label, const Timing& t, const Timing& base) {
  std::cout << std::left << std::setw(26) << label << std::right << std::fixed << std::setprecision(2)
            << "forward " << std::setw(8) << t.fwd_ms << " ms/img " << std::setw(8) << 1000.0 / t.fwd_ms
            << " img/s (x" << std::setprecision(2) << base.fwd_ms / t.fwd_ms << ")   fwd+bwd " << std::setw(8)
            << t.train_ms << " ms/img " << std::setw(8) << 1000.0 / t.train_ms << " img/s (x"
            << base.train_ms / t.train_ms << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  yoloflow::core::use_builtin_components();
  CLI::App app{"yoloflow_bench_model: forward and forward+backward time per image of a model"};
  std::string arch = "yolo11n", device_name = "cpu";
  Config cfg;
  int batch = 1, imgsz = 640, iters = 5, warmup = 1;
  app.add_option("--model", arch, "yolo11n, yolo11s, ...")->capture_default_str();
  app.add_option("--batch", batch, "Images per step")->capture_default_str();
  app.add_option("--imgsz", imgsz, "Square image size")->capture_default_str();
  app.add_option("--iters", iters, "Timed iterations")->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed iterations first")->capture_default_str();
  app.add_option("--dtype", cfg.dtype, "fp32, or bf16 (autocast)")->check(CLI::IsMember({"fp32", "bf16"}))->capture_default_str();
  app.add_option("--device", device_name, "cpu, cuda or cuda:N")->capture_default_str();
  app.add_flag("--channels-last", cfg.channels_last, "channels_last weights and inputs");
  CLI11_PARSE(app, argc, argv);
  core::init_logging(LogLevel::Warn);
  try {
    const torch::Device device(device_name);
    if (device.is_cuda() && !torch::cuda::is_available()) throw InvalidInput("CUDA is not available");
    core::PluginManager pm;
    pm.load_all();
    std::cout << arch << " batch " << batch << " imgsz " << imgsz << " iters " << iters << " device " << device_name
              << " threads " << torch::get_num_threads() << "\n";
    const Config base_cfg;
    const auto base = measure(pm, arch, base_cfg, batch, imgsz, iters, warmup, device);
    print("fp32 NCHW (baseline)", base, base);
    if (cfg.dtype != base_cfg.dtype || cfg.channels_last) {
      const auto t = measure(pm, arch, cfg, batch, imgsz, iters, warmup, device);
      print(cfg.dtype + (cfg.channels_last ? " channels_last" : " NCHW"), t, base);
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
