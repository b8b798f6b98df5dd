// `yoloflow val --weights W --data DATA.yaml`: validates trained weights on a dataset split
// as Ultralytics' `yolo val` does (same arguments where they mean the same, same metrics,
// rectangular batches unless --square), prints its table and writes metrics.json.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/command_observer.h"
#include "cli/interrupt.h"
#include "runtime/fetch/builtin_datasets.h"
#include "runtime/run/run_folder.h"
#include "training/eval/coco_results.h"
#include "training/model/fetched_weights.h"
#include "training/eval/metrics_report.h"
#include "training/eval/val_plots.h"
#include "training/eval/weights_validation.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"
#ifdef YOLOFLOW_WITH_ONNX
#include "training/export/exported_validation.h"
#endif

namespace yoloflow::cli {
namespace {

struct ValCommand {
  core::WeightsValidationRequest request;
  bool square = false, rect = false, save_json = false, no_plots = false;
  std::string out;
  std::string runtime = "auto";  // for an .onnx file
};

// An .onnx --weights runs through the runtime that runs it here (export/exported_runtime.h).
core::WeightsValidationReport validate(CliContext& ctx, ValCommand& c) {
#ifdef YOLOFLOW_WITH_ONNX
  if (core::is_onnx_path(c.request.weights)) {
    c.request.rect = false;  // a fixed input: every image letterboxed to it
    const auto e = core::validate_exported(ctx.plugins().registry(), c.request,
                                           core::parse_onnx_runtime(c.runtime, "--runtime"));
    if (!e.reason.empty()) std::cout << e.reason << "; running it in " << e.runtime << "\n";
    return e.report;
  }
#endif
  if (c.runtime != "auto") throw InvalidInput("--runtime is for .onnx weights; " + c.request.weights + " is not one");
  return core::validate_weights(ctx.plugins().registry(), c.request);
}

int run_val(CliContext& ctx, ValCommand& c) {
  // yolo11n.pt, data=coco8.yaml: Ultralytics' released names, fetched on first use.
  c.request.weights = core::locate_weights_file(c.request.weights);
  c.request.data = core::locate_dataset(c.request.data);
  if (c.rect && c.square) throw InvalidInput("--rect and --square exclude each other");
  c.request.rect = !c.square;
  c.request.keep_predictions = c.save_json;
  c.request.plots = !c.no_plots;
  // A --out that cannot take the results is refused before the images are validated.
  if (!c.out.empty()) core::RunFolder::check(c.out);
  // metrics.json is written once, at the end: an interrupted val leaves nothing half-written.
  const core::WeightsValidationReport r = [&] {
    InterruptScope interrupt("interrupt: stopping validation; no metrics are written (interrupt again to stop at once)",
                             "second interrupt: stopping now");
    c.request.stop_flag = InterruptScope::flag();
    return validate(ctx, c);
  }();
  if (r.interrupted) {
    std::cout << "interrupted by " << InterruptScope::signal_name() << " after " << r.evaluation.images
              << " images; nothing was written" << std::endl;
    return kExitInterrupted;
  }
  const auto& req = c.request;
  std::cout << "val: " << r.description << "; " << r.data << " split '" << req.split << "', "
            << (req.rect ? "rectangular" : "square") << " batches of " << req.batch << " at imgsz " << r.imgsz
            << ", conf " << req.conf << ", iou " << req.iou << ", max_det " << req.max_det << "\n"
            << core::metrics_table(r.evaluation, r.table, r.names);
  if (r.skipped > 0) std::cout << r.skipped << " image(s) could not be read and were left out (see the warnings)\n";
  // Ultralytics' speed line: ms per image in each phase (val computes no loss).
  const double n = static_cast<double>(std::max<std::int64_t>(r.times.images, 1));
  std::cout << "Speed: " << std::fixed << std::setprecision(1) << r.times.preprocess_ms / n << "ms preprocess, "
            << r.times.inference_ms / n << "ms inference, " << r.times.loss_ms / n << "ms loss, "
            << r.times.postprocess_ms / n << "ms postprocess per image (" << r.seconds << " s in all, with reading "
            << "and letterboxing the images and the metrics)\n";
  std::cout.unsetf(std::ios::fixed);

  core::RunFolder folder = c.out.empty() ? core::RunFolder::claim_numbered("val") : core::RunFolder::open(c.out);
  folder.commit();
  const std::string dir = folder.path();
  nlohmann::ordered_json j;
  j["weights"] = req.weights;
  j["data"] = r.data;
  j["split"] = req.split;
  j["imgsz"] = r.imgsz;
  j["batch"] = req.batch;
  j["rect"] = req.rect;
  j["conf"] = req.conf;
  j["iou"] = req.iou;
  j["max_det"] = req.max_det;
  if (!req.classes.empty()) j["classes"] = req.classes;
  if (req.single_cls) j["single_cls"] = true;
  j.update(core::metrics_json(r.evaluation, r.table, r.names));
  if (r.plots) {
    // The counts confusion_matrix.png draws, for scripts: rows predicted, columns true, the
    // last of each background.
    const core::ConfusionMatrix& cm = r.plots->confusion();
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (int p = 0; p <= cm.nc(); ++p) {
      nlohmann::ordered_json row = nlohmann::ordered_json::array();
      for (int t = 0; t <= cm.nc(); ++t) row.push_back(cm.at(p, t));
      rows.push_back(std::move(row));
    }
    j["confusion_matrix"] = {{"conf", cm.conf()}, {"iou", cm.iou()}, {"rows", "predicted"}, {"columns", "true"}, {"matrix", rows}};
  }
  core::write_file_atomic(dir + "/metrics.json", j.dump(2) + "\n");
  std::string written = "metrics.json";
  if (c.save_json) {
    // Ultralytics' save_json: the COCO results format (training/eval/coco_results.h).
    const auto results = core::coco_results(r.predictions, core::is_coco_split(r.data, req.split));
    core::write_file_atomic(dir + "/predictions.json", results.dump() + "\n");
    written += ", predictions.json (COCO results)";
  }
  if (r.plots) {
    // Ultralytics' plots: the confusion matrices, the box curves, the first batches drawn.
    const auto plots = core::write_val_plots(*r.plots, dir, "val");
    if (!plots.empty()) written += ", " + std::to_string(plots.size()) + " plots (confusion_matrix.png, BoxPR_curve.png, ...)";
  }
  std::cout << "results in " << dir << ": " << written << std::endl;
  if (CommandObserver* observer = command_observer()) observer->validated(j.dump(), dir);
  return kExitOk;
}

}  // namespace

void add_val_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "val", "Validate trained weights on a dataset split as Ultralytics' `yolo val` does: P, R, mAP50, mAP50-95 "
             "overall and per class, written to metrics.json");
  auto c = std::make_shared<ValCommand>();
  auto& r = c->request;
  cmd->add_option("--weights", r.weights,
                  "Checkpoint from `yoloflow train` (RUN/weights/best.pt), an Ultralytics checkpoint (yolo11n.pt, best.pt), "
                  "a PyTorch state dict with --model, or an exported .onnx file")
      ->required();
  cmd->add_option("--data", r.data,
                  "data.yaml of the dataset (Ultralytics layout); default: the one the weights were trained on");
  cmd->add_option("--model", r.model, "Architecture of a plain state dict, e.g. yolo11n (nc from the file)");
  cmd->add_option("--split", r.split, "Split of the data.yaml to validate on")->check(CLI::IsMember({"train", "val", "test"}));
  cmd->add_option("--imgsz", r.imgsz,
                  "Image size (rounded up to a multiple of the model's stride; default 640, an Ultralytics "
                  "checkpoint's own imgsz)")
      ->check(CLI::Range(32, 8192));
  cmd->add_option("--batch", r.batch, "Images per batch (rectangular batches depend on it, as in Ultralytics)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--conf", r.conf, "NMS confidence threshold")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--iou", r.iou, "NMS IoU threshold")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-det", r.max_det, "Detections kept per image")->check(CLI::Range(1, 100000));
  cmd->add_option("--classes", r.classes, "Read only the labels of these class ids, e.g. 0,2 (Ultralytics' classes)")
      ->delimiter(',');
  cmd->add_flag("--single-cls", r.single_cls,
                "Validate as one class: every label and detection is class 0, suppressed across classes (Ultralytics' "
                "single_cls)");
  cmd->add_flag("--rect", c->rect, "Rectangular batches (the default): images by aspect ratio, each batch its own shape");
  cmd->add_flag("--square", c->square, "Letterbox every image to imgsz x imgsz instead");
  cmd->add_option("--device", r.device, "cpu, cuda, cuda:N (default: CUDA when available)");
  cmd->add_option("--out", c->out, "Output folder (default runs/val/<N>)");
  cmd->add_option("--runtime", c->runtime,
                  "For .onnx weights: auto (OpenCV's dnn where it runs the file, else yoloflow's LibTorch evaluator of "
                  "the ONNX operators), opencv, libtorch")
      ->check(CLI::IsMember({"auto", "opencv", "libtorch"}));
  cmd->add_flag("--save-json", c->save_json,
                "Also write predictions.json in the COCO results format (image_id, category_id, bbox [x, y, w, h] in "
                "original pixels, score; a segmentation model's mask as COCO RLE), as Ultralytics' save_json");
  cmd->add_flag("--no-plots", c->no_plots,
                "Draw no plots (Ultralytics' plots=False); by default the output folder gets confusion_matrix.png, "
                "confusion_matrix_normalized.png, BoxPR_curve.png, BoxF1_curve.png, BoxP_curve.png, BoxR_curve.png (and "
                "Mask*_curve.png for a segmentation model) and val_batch0..2_labels.jpg / _pred.jpg");
  cmd->callback([&ctx, &selected, c, cmd] {
    if (cmd->count("--imgsz") == 0) c->request.imgsz = 0;  // the weights' default
    selected = [&ctx, c]() -> int { return run_val(ctx, *c); };
  });
}

}  // namespace yoloflow::cli
