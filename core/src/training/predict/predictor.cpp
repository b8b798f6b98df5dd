#include "training/predict/predictor.h"
#include "training/checkpoint/checkpoint_model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include "training/detect/nms.h"
#include "training/predict/instance_masks.h"
#include "training/model/model_factory.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/model/weights_io.h"
#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/default_documents.h"
#include "runtime/plugin/registry.h"
#include "training/checkpoint/checkpoint.h"
#include "training/components/guarded_components.h"
#include "training/device/device_choice.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/error.h"
#include "yoloflow/model.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Letterbox and mosaic-style augmentations ask for other samples; predict has none.
class NoSamples final : public SampleLoader {
 public:
  std::size_t size() const override { return 0; }
  Sample load(std::size_t) override { throw Error("predict: no other samples to load"); }
};

// How `yoloflow predict` prepares an image: the augmentation stages on the path from the source
// to the predict sink of predict-defaults.json, in order, each configured at the network's
// image size, and given the model's largest stride as a `stride` parameter it declares and the
// file leaves out.
std::vector<std::unique_ptr<Augmentation>> prediction_transforms(const Registry& registry, int stride,
                                                                  const StageContext& context) {
  const DefaultDocument& d = predict_defaults();
  const json& stages = d.document.at("stages");
  std::vector<std::string> chain;  // from the sink back to the source
  std::string name = sink_stage(d.document, "predict").first;
  while (!name.empty() && stages.contains(name) && chain.size() <= stages.size()) {
    chain.push_back(name);
    const json& stage = stages[name];
    name = stage.contains("input") && stage["input"].is_string() ? stage["input"].get<std::string>() : std::string();
  }
  std::vector<std::unique_ptr<Augmentation>> out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const json& stage = stages[*it];
    const auto* rc = registry.find(Kind::Augmentation, stage.value("plugin", std::string()));
    if (!rc) continue;  // the source, the batcher, the sink
    json params = stage.contains("params") && stage["params"].is_object() ? stage["params"] : json::object();
    if (rc->info.schema.find("stride") && !params.contains("stride")) params["stride"] = stride;
    StageContext ctx = context;
    ctx.node = d.file + ": stages." + *it;
    out.emplace_back(static_cast<Augmentation*>(
        create_configured(registry, Kind::Augmentation, rc->info.name, params, ctx.node, ctx).release()));
  }
  if (out.empty()) {
    throw Error(d.file + " (built in): no stage of a loaded augmentation plugin leads to its predict stage, so "
                "images could not be fitted to the network (`yoloflow plugins` lists the loaded ones)",
                kExitPluginError);
  }
  return out;
}

}  // namespace

struct Predictor::Impl {
  LoadedCheckpointModel loaded;
  Model* model = nullptr;
  std::vector<std::unique_ptr<Augmentation>> transforms;  // predict-defaults.json's, in order
  torch::Device device{torch::kCPU};
  NmsOptions nms;
  torch::Tensor class_mask;  // (nc) 1 for the kept classes; undefined = all
  int imgsz = 640;
  bool masks = false;   // the head gives mask coefficients and prototypes (a segmentation model)
  bool retina = false;  // PredictOptions::retina_masks

  // Network, NMS and the letterbox undone, for letterboxed RGB pixels (N, H, W, 3) uint8.
  std::vector<ImagePrediction> detect(const torch::Tensor& pixels, const std::vector<Geometry>& geometry);
};

Predictor::Predictor(const Registry& registry, const std::string& weights, const PredictOptions& options)
    : Predictor(registry,
                std::make_unique<LoadedCheckpointModel>(load_checkpoint_model(
                    registry, weights, pick_device(options.device, options.option_prefix + "device"),
                    options.option_prefix + "weights", options.model, options.option_prefix + "model")),
                options) {}

Predictor::Predictor(const Registry& registry, std::unique_ptr<LoadedCheckpointModel> loaded,
                     const PredictOptions& options)
    : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.device = pick_device(options.device, options.option_prefix + "device");
  m.loaded = std::move(*loaded);
  m.model = m.loaded.model.get();
  const HeadDescription head = m.model->head();
  // Classes named by name are the ids of those names among the weights' classes.
  std::vector<int> classes = options.classes;
  const auto& names = m.loaded.described.names;
  for (const auto& name : options.class_names) {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      throw InvalidInput(options.option_prefix + "classes: '" + name + "' is not a class name of this model (" +
                         (names.empty() ? std::string("it names none") : "its first is '" + names.front() + "'") + ")");
    }
    classes.push_back(static_cast<int>(it - names.begin()));
  }
  for (int c : classes) {
    if (c < 0 || c >= head.nc) {
      throw InvalidInput(options.option_prefix + "classes: " + std::to_string(c) + " is not a class of this model (0.." +
                         std::to_string(head.nc - 1) + ")");
    }
  }
  if (!classes.empty()) {
    m.class_mask = torch::zeros({head.nc});
    for (int c : classes) m.class_mask[c] = 1.0f;
    m.class_mask = m.class_mask.to(m.device);
  }
  const int stride = head.strides.empty()
                         ? 32
                         : static_cast<int>(*std::max_element(head.strides.begin(), head.strides.end()));
  const int wanted = options.imgsz > 0 ? options.imgsz : default_imgsz(m.loaded);
  m.imgsz = std::max(stride, (wanted + stride - 1) / stride * stride);
  StageContext ctx;
  ctx.node = "predict";
  ctx.device = m.device.str();
  ctx.imgsz = m.imgsz;
  m.transforms = prediction_transforms(registry, stride, ctx);
  m.nms.conf = options.conf;
  m.nms.iou = options.iou;
  m.nms.max_det = options.max_det;
  const HeadOutput* coefficients = head.output("mask_coefficients");
  const HeadOutput* prototypes = head.output("prototypes");
  m.masks = coefficients != nullptr && coefficients->per_anchor && prototypes != nullptr && !prototypes->per_anchor;
  m.retina = options.retina_masks;
}

Predictor::~Predictor() = default;

const std::vector<std::string>& Predictor::names() const { return impl_->loaded.described.names; }
int Predictor::imgsz() const { return impl_->imgsz; }

std::string Predictor::description() const {
  std::ostringstream os;
  os << impl_->model->architecture() << " (" << impl_->model->head().nc << " classes, " << impl_->loaded.weights_kind
     << " weights) on " << impl_->device.str() << ", imgsz " << impl_->imgsz;
  return os.str();
}

ImagePrediction Predictor::predict(const cv::Mat& image) {
  auto& m = *impl_;
  if (image.empty() || image.type() != CV_8UC3) throw InvalidInput("predict: needs an 8-bit 3-channel image");
  const auto t0 = Clock::now();
  Sample s;
  s.image = image;
  s.geometry.original_width = image.cols;
  s.geometry.original_height = image.rows;
  Rng rng(0);
  NoSamples loader;
  AugmentContext ac{rng, loader, m.imgsz, 0};
  for (auto& t : m.transforms) t->apply(s, ac);
  const int h = s.image.rows, w = s.image.cols;
  auto pixels = torch::empty({1, h, w, 3}, torch::kUInt8);
  cv::Mat rgb(h, w, CV_8UC3, pixels.data_ptr<std::uint8_t>());
  cv::cvtColor(s.image, rgb, cv::COLOR_BGR2RGB);
  const double preprocess = ms_since(t0);
  ImagePrediction out = m.detect(pixels, {s.geometry}).at(0);
  out.preprocess_ms = preprocess;
  return out;
}

std::vector<ImagePrediction> Predictor::predict_batch(const Batch& batch) {
  if (batch.size <= 0) return {};
  const auto t0 = Clock::now();
  // The batch's pixels stay where the batcher put them: the tensor is a view.
  auto pixels = torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
  std::vector<Geometry> geometry;
  for (const auto& s : batch.samples) geometry.push_back(s.geometry);
  const double preprocess = ms_since(t0) / static_cast<double>(batch.size);
  auto out = impl_->detect(pixels, geometry);
  for (auto& p : out) p.preprocess_ms = preprocess;
  return out;
}

std::vector<ImagePrediction> Predictor::Impl::detect(const torch::Tensor& pixels, const std::vector<Geometry>& geometry) {
  torch::NoGradGuard no_grad;
  const std::int64_t n = pixels.size(0);
  auto t0 = Clock::now();
  auto x = pixels.to(device).permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
  Predictions det = model->decode(model->forward_train(x));
  if (device.is_cuda()) torch::cuda::synchronize();  // the time of the work, not of its launch
  const double inference = ms_since(t0) / static_cast<double>(n);

  t0 = Clock::now();
  if (class_mask.defined()) det.scores = det.scores * class_mask;  // other classes never pass conf
  std::vector<torch::Tensor> anchors;
  const std::vector<torch::Tensor> kept = non_max_suppression(det, nms, masks ? &anchors : nullptr);
  // A segmentation model's detections: their coefficients and the image's prototypes.
  const std::vector<ImagePredictions> extras =
      masks ? image_predictions(det, model->head(), kept, anchors) : std::vector<ImagePredictions>();
  std::vector<ImagePrediction> out(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    ImagePrediction& p = out[static_cast<std::size_t>(k)];
    // Letterbox geometry back to the original pixels: original = (input - pad) / ratio.
    const Geometry& g = geometry.at(static_cast<std::size_t>(k));
    p.width = g.original_width;
    p.height = g.original_height;
    const auto a = kept[static_cast<std::size_t>(k)].accessor<float, 2>();
    std::vector<Outlines> outlines;
    if (masks && a.size(0) > 0) {
      const ImagePredictions& e = extras.at(static_cast<std::size_t>(k));
      outlines = instance_outlines(e.extras.at("prototypes"), e.extras.at("mask_coefficients"),
                                   kept[static_cast<std::size_t>(k)].narrow(1, 0, 4), pixels.size(1), pixels.size(2), g,
                                   retina);
    }
    for (std::int64_t i = 0; i < a.size(0); ++i) {
      // As Ultralytics' predict: a segmentation model's detection without a mask is dropped.
      if (masks && outlines.at(static_cast<std::size_t>(i)).empty()) continue;
      Detection d;
      auto map = [](float v, double pad, double ratio, int limit) {
        return static_cast<float>(std::clamp((v - pad) / ratio, 0.0, static_cast<double>(limit)));
      };
      d.x1 = map(a[i][0], g.pad_x, g.ratio_x, p.width);
      d.y1 = map(a[i][1], g.pad_y, g.ratio_y, p.height);
      d.x2 = map(a[i][2], g.pad_x, g.ratio_x, p.width);
      d.y2 = map(a[i][3], g.pad_y, g.ratio_y, p.height);
      d.confidence = a[i][4];
      d.cls = static_cast<int>(a[i][5]);
      if (masks) d.outlines = std::move(outlines[static_cast<std::size_t>(i)]);
      p.detections.push_back(std::move(d));
    }
    p.inference_ms = inference;
  }
  const double postprocess = ms_since(t0) / static_cast<double>(n);
  for (auto& p : out) p.postprocess_ms = postprocess;
  return out;
}

}  // namespace yoloflow::core
