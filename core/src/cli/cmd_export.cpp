// `yoloflow export --weights W --format onnx`: trained weights as an ONNX file for ONNX
// Runtime, TensorRT, OpenVINO and OpenCV, with Ultralytics' `yolo export` argument names.
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "cli/cli.h"
#include "cli/command_observer.h"
#include "yoloflow/error.h"
#ifdef YOLOFLOW_WITH_ONNX
#include "cli/export_int8.h"
#include "runtime/fetch/builtin_datasets.h"
#include "training/export/export_formats.h"
#include "training/export/onnx_export.h"
#include "training/model/fetched_weights.h"
#include "training/checkpoint/checkpoint_model.h"
#endif

namespace yoloflow::cli {
namespace {

struct ExportCommand {
  std::string weights, model, format = "onnx", out;
  std::vector<int> imgsz;  // empty: the weights' own (default_imgsz)
  int batch = 1, opset = 17, max_det = 300;
  double conf = 0.25, iou = 0.7;
  bool dynamic = false, half = false, nms = false;
#ifdef YOLOFLOW_WITH_ONNX
  Int8Request int8;
#endif
};

#ifdef YOLOFLOW_WITH_ONNX
std::string shape_text(const std::vector<std::int64_t>& dims, const std::vector<std::string>& symbols) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + (dims[i] < 0 ? symbols.at(i) : std::to_string(dims[i]));
  }
  return s + ")";
}

// Ultralytics' check_imgsz: a size that is not a multiple of the stride is rounded up.
std::int64_t round_up(int v, std::int64_t stride) { return ((v + stride - 1) / stride) * stride; }
#endif

int run_export(CliContext& ctx, ExportCommand c) {
#ifndef YOLOFLOW_WITH_ONNX
  if (c.format != "onnx") {
    throw InvalidInput("--format " + c.format + " is not supported; the export formats are: onnx");
  }
  (void)ctx;
  throw Error("this yoloflow was built without ONNX export (configured with -DYOLOFLOW_WITH_ONNX=OFF; "
              "install libonnx-dev and rebuild)",
              kExitInvalid);
#else
  if (const std::string refusal = core::unsupported_export_format(c.format); !refusal.empty()) throw InvalidInput(refusal);
  if (c.int8.on && c.half) {
    std::cout << "--half and --int8 exclude each other: writing the int8 file (its unquantized parts float32), as "
                 "Ultralytics does\n";
    c.half = false;
  }
  // yolo11n.pt, data=coco8.yaml: Ultralytics' released names, fetched on first use.
  c.weights = core::locate_weights_file(c.weights);
  c.int8.data = core::locate_dataset(c.int8.data);
  check_int8_request(c.int8);
  if (c.imgsz.size() > 2) throw InvalidInput("--imgsz takes one size or two (height width)");
  auto loaded = core::load_checkpoint_model(ctx.plugins().registry(), c.weights, torch::Device(torch::kCPU),
                                            "--weights", c.model, "--model");
  // Without --imgsz, the size the weights were trained at, as Ultralytics exports.
  const std::vector<int> imgsz = c.imgsz.empty() ? std::vector<int>{core::default_imgsz(loaded)} : c.imgsz;
  auto& model = *loaded.model;
  const auto head = model.head();
  const std::int64_t stride = head.strides.empty() ? 32 : head.strides.back();

  core::OnnxExportOptions o;
  const int h = imgsz[0], w = imgsz.size() == 2 ? imgsz[1] : imgsz[0];
  o.height = round_up(h, stride);
  o.width = round_up(w, stride);
  if (o.height != h || o.width != w) {
    std::cout << "--imgsz " << h << "x" << w << " is not a multiple of the stride " << stride << ", exporting at "
              << o.height << "x" << o.width << "\n";
  }
  o.batch = c.batch;
  o.dynamic = c.dynamic;
  o.half = c.half;
  o.opset = c.opset;
  o.nms = c.nms;
  o.nms_settings.conf = static_cast<float>(c.conf);
  o.nms_settings.iou = static_cast<float>(c.iou);
  o.nms_settings.max_det = c.max_det;
  o.names = loaded.described.names;
  o.names.resize(static_cast<std::size_t>(head.nc));
  for (std::size_t i = 0; i < o.names.size(); ++i) {
    if (o.names[i].empty()) o.names[i] = std::to_string(i);
  }
  o.description = std::filesystem::path(c.weights).filename().string();

  const std::string out =
      c.out.empty() ? std::filesystem::path(c.weights).replace_extension(".onnx").string() : c.out;
  if (const auto parent = std::filesystem::path(out).parent_path(); !parent.empty()) {
    // A folder that cannot be made is the user's --out, refused as input (exit 2) in one line.
    std::error_code ec;
    std::filesystem::create_directories(parent, ec);
    if (ec) throw InvalidInput("--out " + out + ": cannot create the folder " + parent.string() + ": " + ec.message());
  }
  const auto r = c.int8.on ? export_int8(ctx, loaded, o, c.int8, out) : core::export_onnx(model, o, out);
  const std::string type = c.half ? "float16" : "float32";
  const std::vector<std::int64_t> in_dims{c.dynamic ? -1 : c.batch, 3, c.dynamic ? -1 : o.height,
                                          c.dynamic ? -1 : o.width};
  std::cout << "export: " << model.architecture() << " (" << loaded.weights_kind << " weights of " << c.weights
            << ", " << head.nc << " classes) -> " << out << "\n"
            << "  input  images " << shape_text(in_dims, {"batch", "", "height", "width"}) << " " << type
            << ", RGB in [0, 1]\n"
            << "  output output0 " << shape_text(r.output_shape, {"batch", "", "anchors"}) << " " << type
            << (c.nms ? ": x1, y1, x2, y2, confidence, class per detection (NMS conf " + std::to_string(c.conf) +
                            ", iou " + std::to_string(c.iou) + ")"
                      : std::string(": cx, cy, w, h, then class probabilities") +
                            (r.more_outputs.empty() ? "" : ", then " + std::to_string(r.more_outputs[0].second.at(1)) +
                                                               " mask coefficients") +
                            " per anchor");
  for (const auto& [name, dims] : r.more_outputs) {
    std::cout << "\n  output " << name << " " << shape_text(dims, {"batch", "", "mask_height", "mask_width"}) << " "
              << type << ": prototype masks per image (a detection's mask: sigmoid of its coefficients x these)";
  }
  std::cout << (c.int8.on ? "\n  convolutions int8 (QDQ: weights per output channel, activations per tensor)" : "")
            << "\n  ONNX opset " << c.opset << ", " << r.nodes << " nodes, " << r.initializers << " initializers, "
            << std::fixed << std::setprecision(1) << static_cast<double>(r.bytes) / 1e6
            << " MB; checked by the ONNX checker and shape inference" << std::endl;
  if (CommandObserver* observer = command_observer()) observer->exported(out);
  return kExitOk;
#endif
}

}  // namespace

void add_export_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "export", "Export trained weights to ONNX (Ultralytics' `yolo export format=onnx` arguments): the network with "
                "batch norm folded and the box decode, output (batch, 4 + nc, anchors), optional NMS; a segmentation "
                "model's output0 (batch, 4 + nc + 32, anchors) and output1 (batch, 32, height / 4, width / 4)");
  auto c = std::make_shared<ExportCommand>();
  cmd->add_option("--weights", c->weights,
                  "Checkpoint from `yoloflow train` (RUN/weights/best.pt), an Ultralytics checkpoint (yolo11n.pt, best.pt), "
                  "or a PyTorch state dict with --model")
      ->required();
  cmd->add_option("--model", c->model, "Architecture of a plain state dict, e.g. yolo11n (nc from the file)");
  cmd->add_option("--format", c->format,
                  "Export format: onnx (Ultralytics' other format names are refused with the way to them from the ONNX file)");
  cmd->add_option("--imgsz", c->imgsz, "Input size: one value (square) or two (height width); rounded up to the stride; default: the "
                  "size the weights were trained at (640 when they do not say)")
      ->expected(1, 2)
      ->check(CLI::Range(32, 8192));
  cmd->add_option("--batch", c->batch, "Batch size of the input (fixed unless --dynamic)")->check(CLI::Range(1, 4096));
  cmd->add_flag("--dynamic", c->dynamic, "Symbolic batch, height and width (any multiple of 32 at run time)");
  cmd->add_flag("--half", c->half, "float16 weights, input and output");
  cmd->add_option("--opset", c->opset, "ONNX opset (13 to 17)");
  cmd->add_flag("--nms", c->nms, "Append NMS: output (batch, max_det, 6) = x1, y1, x2, y2, confidence, class");
  cmd->add_option("--conf", c->conf, "NMS confidence threshold (with --nms)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--iou", c->iou, "NMS IoU threshold (with --nms)")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-det", c->max_det, "Detections kept per image (with --nms)")->check(CLI::Range(1, 100000));
  cmd->add_option("--out", c->out, "Output file (default: the weights' path with .onnx)");
#ifdef YOLOFLOW_WITH_ONNX
  add_int8_options(*cmd, c->int8);
#endif
  cmd->callback([&ctx, &selected, c] { selected = [&ctx, c]() -> int { return run_export(ctx, *c); }; });
}

}  // namespace yoloflow::cli
