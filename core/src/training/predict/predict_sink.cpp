#include "training/predict/predict_sink.h"

#include <filesystem>
#include <memory>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "runtime/plugin/builtin_sink.h"
#include "training/predict/prediction_outputs.h"
#include "training/predict/predictor.h"
#include "yoloflow/error.h"
#include "yoloflow/image_header.h"
#include "yoloflow/log.h"
#include "yoloflow/sink.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

class PredictSink final : public Sink {
 public:
  static Schema schema() {
    Schema s;
    s.add_path("weights").required().fixed().doc(
        "Checkpoint to predict with (RUN/weights/best.pt of `yoloflow train`; its EMA weights when it has them). "
        "Relative paths are resolved against the pipeline file's folder.");
    s.add_float("conf", 0.25).range(0.0, 1.0).fixed().doc("Minimum confidence kept.");
    s.add_string("model", "").fixed().doc(
        "Architecture of `weights` when it is a plain PyTorch state dict (e.g. \"yolo11n\"; the class count comes "
        "from the file); a checkpoint of `yoloflow train` names its own.");
    s.add_float("iou", 0.7).range(0.0, 1.0).fixed().doc("NMS IoU threshold.");
    s.add_int("max_det", 300).range(1, 100000).fixed().doc("Detections kept per image.");
    s.add_int_list("classes", {}).fixed().doc("Keep only these class ids (empty: all).");
    s.add_bool("save_images", true).fixed().doc(
        "Write each original image with its detections drawn (false: only predictions.json, and the label files "
        "with save_txt).");
    s.add_bool("save_txt", false).fixed().doc(
        "Also write labels/<stem>.txt per image, class cx cy w h normalised to the original image (Ultralytics' "
        "save_txt, off by default as there).");
    s.add_bool("save_conf", false).fixed().doc(
        "With save_txt: a confidence column after the box in the label files (Ultralytics' save_conf).");
    s.add_string("output", "").fixed().doc(
        "Output folder, relative to the run folder (or absolute); empty = the run folder itself.");
    s.add_string("device", "").fixed().doc(
        "\"auto\" (CUDA when available), \"cpu\", \"cuda\", \"cuda:1\"; empty = the pipeline's device.");
    return s;
  }

  void configure(const Params& p, const StageContext& ctx) override {
    if (predictor_) return;  // reconfigured at an epoch boundary: nothing scheduled here
    const std::string where = ctx.node.empty() ? p.where() : "stages." + ctx.node;
    PredictOptions o;
    o.imgsz = ctx.imgsz;
    o.conf = p.get_float("conf");
    o.iou = p.get_float("iou");
    o.max_det = static_cast<int>(p.get_int("max_det"));
    o.device = p.get_string("device").empty() ? ctx.device : p.get_string("device");
    for (const auto c : p.get_ints("classes")) o.classes.push_back(static_cast<int>(c));
    o.option_prefix = where + ".params.";
    o.model = p.get_string("model");
    weights_ = p.get_string("weights");
    predictor_ = std::make_unique<Predictor>(host_registry(), weights_, o);
    const fs::path out(p.get_string("output"));
    std::string dir = ctx.run_dir.empty() ? std::string("runs/predict") : ctx.run_dir;
    if (!out.empty()) dir = out.is_absolute() ? out.string() : (fs::path(dir) / out).string();
    outputs_.images = p.get_bool("save_images");
    outputs_.labels = p.get_bool("save_txt");
    outputs_.label_conf = p.get_bool("save_conf");
    writer_ = std::make_unique<PredictionWriter>(dir, predictor_->names(), outputs_);
    YF_LOG_INFO("predict: " << predictor_->description() << ", conf " << o.conf << ", iou " << o.iou
                            << ", writing to " << dir);
  }

  void consume(Batch& batch) override {
    const std::vector<ImagePrediction> predictions = predictor_->predict_batch(batch);
    for (std::size_t i = 0; i < predictions.size(); ++i) {
      const std::string& path = batch.samples[i].path;
      cv::Mat original;
      if (outputs_.images) {
        // Drawn on the file's own pixels, at its own size, as `yoloflow predict` draws.
        // Its header checked again first: the file may have been replaced since the source read it.
        const std::string refusal = image_file_refusal(path);
        if (refusal.empty()) original = cv::imread(path, cv::IMREAD_COLOR);
        if (original.empty()) {
          throw Error("predict: cannot read " + path + " again to draw its detections" +
                      (refusal.empty() ? "" : ": " + refusal));
        }
      }
      writer_->add(path, original, predictions[i]);
      ++images_;
      detections_ += predictions[i].detections.size();
    }
  }

  void end_epoch(int) override { writer_->finish(); }
  void interrupted(int) override { writer_->finish(); }

  std::string summary() const override {
    std::ostringstream os;
    os << images_ << " image" << (images_ == 1 ? "" : "s") << ", " << detections_ << " detections with " << weights_
       << "; results in " << writer_->dir() << ": " << (outputs_.images ? "annotated images, " : "")
       << (outputs_.labels ? "labels/*.txt, " : "") << "predictions.json\n";
    return os.str();
  }

 private:
  std::string weights_;
  std::unique_ptr<Predictor> predictor_;
  std::unique_ptr<PredictionWriter> writer_;
  PredictionOutputs outputs_;
  std::size_t images_ = 0, detections_ = 0;
};

}  // namespace

void register_predict_sink(Registry& registry) {
  add_builtin_sink<PredictSink>(registry, "predict",
      "Detects objects in the batches it receives with a trained checkpoint (the predictor of `yoloflow "
      "predict`) and writes annotated images and predictions.json, and with save_txt YOLO-format label files.",
      BuiltinTraits{nullptr, nullptr, /*writes_run_folder=*/true});
}

}  // namespace yoloflow::core
