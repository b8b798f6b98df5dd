// `yoloflow predict --weights RUN/weights/best.pt --source IMAGE|FOLDER`: detects objects
// with a trained checkpoint, as Ultralytics' `yolo predict` does, and writes annotated
// images, labels/<stem>.txt (class cx cy w h conf) and predictions.json into runs/predict/<N>.
// Unreadable images in a folder are skipped and named; the exit code is non-zero only when
// no image could be read.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "cli/cli.h"
#include "cli/interrupt.h"
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
  bool no_images = false;
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

std::string ms(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v << " ms";
  return os.str();
}

int run_predict(CliContext& ctx, const PredictRequest& r) {
  const std::vector<std::string> images = core::list_images(r.source);
  const std::unique_ptr<core::Predictor> made = make_predictor(ctx, r);
  core::Predictor& predictor = *made;
  core::RunFolder folder = r.out.empty() ? core::RunFolder::claim_numbered("predict") : core::RunFolder::open(r.out);
  const std::string out = folder.path();
  core::PredictionWriter writer(out, predictor.names(), !r.no_images);
  folder.commit();
  // Ctrl-C: the image in hand is finished and predictions.json written for the images done,
  // so the folder holds complete outputs of those.
  InterruptScope interrupt("interrupt: stopping after this image and writing predictions.json for the images done "
                           "(interrupt again to stop at once)",
                           "second interrupt: stopping now; predictions.json was not written");
  std::cout << "predict: " << predictor.description() << ", conf " << r.options.conf << ", iou " << r.options.iou
            << ", " << images.size() << " image" << (images.size() == 1 ? "" : "s") << std::endl;

  std::vector<std::string> skipped;
  double pre = 0, inf = 0, post = 0;
  std::size_t done = 0, detections = 0;
  for (std::size_t k = 0; k < images.size() && !InterruptScope::requested(); ++k) {
    const std::string& path = images[k];
    std::cout << "image " << k + 1 << "/" << images.size() << " " << path << ": ";
    cv::Mat image;
    try {
      image = cv::imread(path, cv::IMREAD_COLOR);
    } catch (const cv::Exception&) {
      image.release();  // a decoder that throws on a broken file: the same as unreadable
    }
    if (image.empty()) {
      std::cout << "skipped: cannot decode the image (corrupt or not an image)" << std::endl;
      skipped.push_back(path);
      continue;
    }
    const core::ImagePrediction p = predictor.predict(image);
    writer.add(path, image, p);
    std::cout << p.width << "x" << p.height << ", " << core::count_summary(p, predictor.names()) << ", "
              << ms(p.preprocess_ms + p.inference_ms + p.postprocess_ms) << std::endl;
    pre += p.preprocess_ms;
    inf += p.inference_ms;
    post += p.postprocess_ms;
    detections += p.detections.size();
    ++done;
  }
  writer.finish();
  const bool interrupted = InterruptScope::requested();
  if (done > 0) {
    std::cout << "speed: " << ms(pre / done) << " preprocess, " << ms(inf / done) << " inference, "
              << ms(post / done) << " postprocess per image (imgsz " << predictor.imgsz() << ")" << std::endl;
  }
  std::cout << done << " image" << (done == 1 ? "" : "s") << ", " << detections << " detections; results in " << out
            << ": " << (r.no_images ? "" : "annotated images, ") << "labels/*.txt, predictions.json" << std::endl;
  if (!skipped.empty()) {
    std::cout << "skipped " << skipped.size() << " unreadable image" << (skipped.size() == 1 ? "" : "s") << ":"
              << std::endl;
    for (const auto& s : skipped) std::cout << "  " << s << std::endl;
  }
  if (interrupted) {
    std::cout << "interrupted by " << InterruptScope::signal_name() << " after " << done + skipped.size() << " of "
              << images.size() << " images; " << out << " holds the outputs of those" << std::endl;
    return kExitInterrupted;
  }
  if (done == 0) {
    std::cerr << "error: --source " << r.source << ": none of its " << images.size()
              << " images could be decoded" << std::endl;
    return kExitInvalid;
  }
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand(
      "predict", "Detect objects in images with a trained checkpoint; write annotated images, labels and JSON");
  auto r = std::make_shared<PredictRequest>();
  cmd->add_option("--weights", r->weights,
                  "Checkpoint from `yoloflow train` (RUN/weights/best.pt or last.pt), an Ultralytics checkpoint "
                  "(yolo11n.pt, best.pt), a PyTorch state dict with --model, or an exported .onnx file")
      ->required();
  cmd->add_option("--model", r->options.model, "Architecture of a plain state dict, e.g. yolo11n (nc from the file)");
  cmd->add_option("--source", r->source, "An image, or a folder of images")->required();
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
  cmd->add_flag("--no-images", r->no_images, "Write only labels and predictions.json, no annotated images");
  cmd->add_option("--classes", r->options.classes, "Keep only these class ids, e.g. 0,2")->delimiter(',');
  cmd->callback([&ctx, &selected, r, cmd] {
    if (cmd->count("--imgsz") == 0) r->options.imgsz = 0;  // the weights' default
    selected = [&ctx, r]() -> int { return run_predict(ctx, *r); };
  });
}

}  // namespace yoloflow::cli
