// `yoloflow predict --weights RUN/weights/best.pt --source IMAGE|VIDEO|FOLDER|GLOB|LIST.txt`:
// detects objects with a trained checkpoint, as Ultralytics' `yolo predict` does, and writes
// annotated images and videos and predictions.json into runs/predict/<N>; with --save-txt also
// labels/<stem>.txt (class cx cy w h, conf with --save-conf; <stem>_<frame>.txt per video frame).
// Unreadable files are skipped and named; the exit code is non-zero only when none could be read.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <iostream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "cli/cli.h"
#include "cli/command_observer.h"
#include "cli/interrupt.h"
#include "cli/predict_media.h"
#include "training/model/fetched_weights.h"
#include "training/predict/predict_sources.h"
#include "training/predict/prediction_outputs.h"
#include "training/predict/predictor.h"
#include "runtime/run/run_folder.h"
#include "yoloflow/error.h"
#ifdef YOLOFLOW_WITH_ONNX
#include "training/export/exported_prediction.h"
#endif

namespace yoloflow::cli {
namespace {

struct PredictRequest {
  std::string weights, source, out;
  core::PredictOptions options;
  std::vector<std::string> classes;  // ids or names, as given
  core::PredictionOutputs outputs;
  bool no_images = false, hide_labels = false, hide_conf = false, hide_boxes = false;
  int vid_stride = 1;
  std::string runtime = "auto";  // for an .onnx file
};

// An .onnx --weights runs through the runtime that runs it here (export/exported_runtime.h).
std::unique_ptr<core::Predictor> make_predictor(CliContext& ctx, const PredictRequest& r) {
#ifdef YOLOFLOW_WITH_ONNX
  if (core::is_onnx_path(r.weights)) {
    auto e = core::exported_predictor(ctx.plugins().registry(), r.weights, r.options,
                                      core::parse_onnx_runtime(r.runtime, "--runtime"));
    if (!e.reason.empty()) std::cout << e.reason << "; running it in " << e.runtime << "\n";
    return std::move(e.predictor);
  }
#endif
  if (r.runtime != "auto") throw InvalidInput("--runtime is for .onnx weights; " + r.weights + " is not one");
  return std::make_unique<core::Predictor>(ctx.plugins().registry(), r.weights, r.options);
}

int run_predict(CliContext& ctx, PredictRequest& r) {
  r.weights = core::locate_weights_file(r.weights);  // yolo11n.pt: fetched on first use
  if (!r.out.empty()) core::RunFolder::check(r.out);  // before the model is loaded
  const std::vector<core::PredictSource> sources = core::list_predict_sources(r.source);
  // --classes 0,2 or person,dog: ids, and names the predictor looks up in the weights' names.
  for (const auto& c : r.classes) {
    if (!c.empty() && c.size() < 9 && std::all_of(c.begin(), c.end(), ::isdigit)) {
      r.options.classes.push_back(std::stoi(c));
    } else {
      r.options.class_names.push_back(c);
    }
  }
  const std::unique_ptr<core::Predictor> made = make_predictor(ctx, r);
  core::Predictor& predictor = *made;
  // A host that takes the predictions itself may ask for no run folder (Python's save=False).
  CommandObserver* const observer = command_observer();
  const bool saves = observer == nullptr || observer->saves_predictions();
  core::RunFolder folder;
  if (saves) folder = r.out.empty() ? core::RunFolder::claim_numbered("predict") : core::RunFolder::open(r.out);
  const std::string out = saves ? folder.path() : std::string();
  core::PredictionOutputs outputs = r.outputs;
  outputs.images = !r.no_images;
  outputs.box_labels = !r.hide_labels;
  outputs.box_conf = !r.hide_conf;
  outputs.boxes = !r.hide_boxes;
  std::optional<core::PredictionWriter> writer;
  if (saves) {
    writer.emplace(out, predictor.names(), outputs);
    folder.commit();
    if (observer != nullptr) observer->run_folder(out);
  }
  const auto stop = [] {
    const CommandObserver* o = command_observer();
    return InterruptScope::requested() || (o != nullptr && o->stop_requested());
  };
  // Ctrl-C: the image or frame in hand is finished and predictions.json written for those
  // done, so the folder holds complete outputs of them.
  InterruptScope interrupt("interrupt: stopping after this image and writing predictions.json for the images done "
                           "(interrupt again to stop at once)",
                           "second interrupt: stopping now; predictions.json was not written");
  const auto videos = static_cast<std::size_t>(
      std::count_if(sources.begin(), sources.end(), [](const core::PredictSource& s) { return s.video; }));
  std::cout << "predict: " << predictor.description() << ", conf " << r.options.conf << ", iou " << r.options.iou
            << ", " << sources.size() - videos << " image" << (sources.size() - videos == 1 ? "" : "s");
  if (videos > 0) std::cout << ", " << videos << " video" << (videos == 1 ? "" : "s");
  std::cout << std::endl;

  PredictTally tally;
  std::size_t visited = 0;
  core::PredictionWriter* const written_to = writer ? &*writer : nullptr;
  for (std::size_t k = 0; k < sources.size() && !stop(); ++k, ++visited) {
    if (sources[k].video) {
      predict_video(predictor, written_to, sources[k].path, r.vid_stride, k + 1, sources.size(), +stop, tally);
    } else {
      predict_image(predictor, written_to, sources[k].path, k + 1, sources.size(), tally);
    }
  }
  if (writer) writer->finish();
  const bool interrupted = InterruptScope::requested();
  const std::size_t done = tally.predicted;
  if (done > 0) {
    // Ultralytics' speed line.
    std::cout << std::fixed << std::setprecision(1) << "Speed: " << tally.preprocess_ms / done << "ms preprocess, "
              << tally.inference_ms / done << "ms inference, " << tally.postprocess_ms / done
              << "ms postprocess per image at imgsz " << predictor.imgsz() << std::endl;
    std::cout.unsetf(std::ios::fixed);
  }
  std::string written = outputs.images ? "annotated images" + std::string(videos > 0 ? " and videos" : "") : "";
  if (outputs.labels) written += (written.empty() ? "" : ", ") + std::string("labels/*.txt");
  if (outputs.crops) written += (written.empty() ? "" : ", ") + std::string("crops/");
  written += (written.empty() ? "" : ", ") + std::string("predictions.json");
  std::cout << done << (videos > 0 ? " images and frames" : done == 1 ? " image" : " images") << ", "
            << tally.detections << " detections"
            << (saves ? "; results in " + out + ": " + written : std::string("; nothing written")) << std::endl;
  if (!tally.skipped.empty()) {
    std::cout << "skipped " << tally.skipped.size() << " unreadable file" << (tally.skipped.size() == 1 ? "" : "s")
              << ":" << std::endl;
    for (const auto& s : tally.skipped) std::cout << "  " << s << std::endl;
  }
  if (interrupted) {
    std::cout << "interrupted by " << InterruptScope::signal_name() << " after " << visited << " of " << sources.size()
              << " files" << (saves ? "; " + out + " holds the outputs of those" : std::string()) << std::endl;
    return kExitInterrupted;
  }
  if (done == 0) {
    std::cerr << "error: --source " << r.source << ": none of its " << sources.size()
              << " files could be decoded" << std::endl;
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "predict", "Detect objects in images with a trained checkpoint; write annotated images and JSON (labels with --save-txt)");
  auto r = std::make_shared<PredictRequest>();
  cmd->add_option("--weights", r->weights,
                  "Checkpoint from `yoloflow train` (RUN/weights/best.pt or last.pt), an Ultralytics checkpoint "
                  "(yolo11n.pt, best.pt), a PyTorch state dict with --model, or an exported .onnx file")
      ->required();
  cmd->add_option("--model", r->options.model, "Architecture of a plain state dict, e.g. yolo11n (nc from the file)");
  cmd->add_option("--source", r->source,
                  "An image or a video, a folder of them, a glob ('imgs/*.jpg', quoted) or a .txt list of any of those")
      ->required();
  cmd->add_option("--imgsz", r->options.imgsz,
                  "Network input size (rounded up to a multiple of the stride; default 640, an Ultralytics "
                  "checkpoint's own imgsz)")
      ->check(CLI::Range(32, 8192));
  cmd->add_option("--conf", r->options.conf, "Minimum confidence kept")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--iou", r->options.iou, "NMS IoU threshold")->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-det", r->options.max_det, "Detections kept per image")->check(CLI::Range(1, 100000));
  cmd->add_option("--device", r->options.device, "cpu, cuda, cuda:N (default: CUDA when available)");
  cmd->add_option("--out", r->out, "Output folder (default runs/predict/<N>)");
  cmd->add_option("--runtime", r->runtime,
                  "For .onnx weights: auto (OpenCV's dnn where it runs the file, else yoloflow's LibTorch evaluator of "
                  "the ONNX operators), opencv, libtorch")
      ->check(CLI::IsMember({"auto", "opencv", "libtorch"}));
  cmd->add_flag("--no-images", r->no_images,
                "Write no annotated images or videos: only predictions.json (and the label files with --save-txt)");
  cmd->add_option("--classes", r->classes, "Keep only these classes: ids or names, e.g. 0,2 or person,dog")
      ->delimiter(',');
  cmd->add_option("--vid-stride", r->vid_stride, "Videos: predict every Nth frame")->check(CLI::Range(1, 100000));
  cmd->add_flag("--save-txt", r->outputs.labels,
                "Also write labels/<stem>.txt per image (<stem>_<frame>.txt per video frame): class cx cy w h, "
                "normalised to the image; a segmentation model's: class x1 y1 x2 y2 ... (its mask's outline)");
  cmd->add_flag("--retina-masks", r->options.retina_masks,
                "A segmentation model's masks at the original image's resolution (sharper outlines, more work)");
  cmd->add_flag("--save-conf", r->outputs.label_conf, "With --save-txt: a confidence column after the box");
  cmd->add_flag("--save-crop", r->outputs.crops, "Also write each detection cut out: crops/<class name>/<stem>.jpg");
  cmd->add_option("--line-width", r->outputs.line_width, "Box line width in pixels (default: grows with the image)")
      ->check(CLI::Range(1, 100));
  cmd->add_flag("--hide-labels", r->hide_labels, "Draw boxes without their class name tags");
  cmd->add_flag("--hide-conf", r->hide_conf, "Draw tags without the confidence");
  cmd->add_flag("--hide-boxes", r->hide_boxes, "Draw no boxes (the images and videos are written as read)");
  cmd->callback([&ctx, &selected, r, cmd] {
    if (cmd->count("--imgsz") == 0) r->options.imgsz = 0;  // the weights' default
    selected = [&ctx, r]() -> int { return run_predict(ctx, *r); };
  });
}

}  // namespace yoloflow::cli
