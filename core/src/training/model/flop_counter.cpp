// FLOP counting through ATen's RecordFunction callbacks (see flop_counter.h).
#include "training/model/flop_counter.h"

#include <cstring>

namespace yoloflow::core {

namespace {

struct CounterState {
  double macs = 0;
  int depth = 0;  // counted ops currently open: ops they call internally are not counted again
};
thread_local CounterState* t_state = nullptr;

bool is_counted(const char* name) {
  static const char* names[] = {"aten::convolution", "aten::mm",     "aten::bmm",    "aten::addmm",
                                "aten::matmul",      "aten::baddbmm", "aten::linear"};
  for (const char* n : names) {
    if (std::strcmp(name, n) == 0) return true;
  }
  return false;
}

double elems(const at::Tensor& t) { return static_cast<double>(t.numel()); }

double op_macs(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const auto in = fn.inputs();
  auto tensor = [&](std::size_t i) -> at::Tensor {
    return (i < in.size() && in[i].isTensor()) ? in[i].toTensor() : at::Tensor();
  };
  if (std::strcmp(name, "aten::convolution") == 0) {
    const auto x = tensor(0), w = tensor(1);
    if (!x.defined() || !w.defined() || in.size() < 9 || x.dim() != 4) return 0;
    const auto stride = in[3].toIntVector(), pad = in[4].toIntVector(), dil = in[5].toIntVector();
    if (in[6].toBool()) return elems(x) * static_cast<double>(w.size(1) * w.size(2) * w.size(3));
    double out_hw = 1;
    for (int d = 0; d < 2; ++d) {
      const auto k = w.size(2 + d);
      out_hw *= static_cast<double>((x.size(2 + d) + 2 * pad[d] - dil[d] * (k - 1) - 1) / stride[d] + 1);
    }
    // Per output element: (Cin / groups) * kh * kw multiply-adds.
    return static_cast<double>(x.size(0)) * static_cast<double>(w.size(0)) * out_hw *
           static_cast<double>(w.size(1) * w.size(2) * w.size(3));
  }
  if (std::strcmp(name, "aten::linear") == 0) {
    const auto x = tensor(0), w = tensor(1);
    return (x.defined() && w.defined()) ? elems(x) * static_cast<double>(w.size(0)) : 0;
  }
  const std::size_t first = (std::strcmp(name, "aten::addmm") == 0 || std::strcmp(name, "aten::baddbmm") == 0) ? 1 : 0;
  const auto a = tensor(first), b = tensor(first + 1);
  if (!a.defined() || !b.defined() || a.dim() < 1 || b.dim() < 1) return 0;
  if (b.dim() == 1) return elems(a);  // matrix-vector
  const double m = static_cast<double>(b.size(-1));
  const double k = static_cast<double>(b.size(-2));
  const double batch_b = elems(b) / (k * m);
  // Rows of a (all of its leading dims) times k times m, broadcast over b's batch if larger.
  const double rows_a = elems(a) / k;
  const double rows_b = batch_b * (a.dim() >= 2 ? static_cast<double>(a.size(-2)) : 1.0);
  return std::max(rows_a, rows_b) * k * m;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (t_state && is_counted(fn.name())) {
    if (t_state->depth == 0) t_state->macs += op_macs(fn);
    ++t_state->depth;
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (t_state && is_counted(fn.name())) --t_state->depth;
}

}  // namespace

FlopCounter::FlopCounter() {
  t_state = new CounterState();
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_start, &on_end).needsInputs(true));
}

FlopCounter::~FlopCounter() {
  at::removeCallback(handle_);
  delete t_state;
  t_state = nullptr;
}

double FlopCounter::macs() const { return t_state ? t_state->macs : 0.0; }

double forward_gflops(Model& model, int imgsz) {
  auto& m = model.module();
  const bool was_training = m.is_training();
  m.eval();
  torch::Device device = torch::kCPU;
  torch::ScalarType dtype = torch::kFloat;
  for (const auto& p : m.parameters()) {
    device = p.device();
    dtype = p.scalar_type();
    break;
  }
  double macs = 0;
  {
    torch::NoGradGuard no_grad;
    const auto x = torch::zeros({1, 3, imgsz, imgsz}, torch::TensorOptions().device(device).dtype(dtype));
    FlopCounter counter;
    model.forward_train(x);
    macs = counter.macs();
  }
  m.train(was_training);
  return 2.0 * macs / 1e9;
}

}  // namespace yoloflow::core
