#include "training/eval/val_sink.h"

#include <filesystem>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "runtime/plugin/builtin_sink.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/components/batch_targets.h"
#include "training/components/guarded_components.h"
#include "runtime/pipeline/default_documents.h"
#include "training/eval/mask_rle.h"
#include "training/eval/metrics_report.h"
#include "training/eval/validation_batch.h"
#include "runtime/util/atomic_file.h"
#include "runtime/util/text_format.h"
#include "training/device/device_choice.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/monitor.h"
#include "yoloflow/sink.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

class ValSink final : public HostedValidationSink {
 public:
  static Schema schema() {
    Schema s;
    s.add_path("weights").fixed().doc(
        "Checkpoint to evaluate (RUN/weights/best.pt or last.pt of `yoloflow train`; its EMA weights when it has "
        "them). Relative paths are resolved against the pipeline file's folder. Left out only where the host hands "
        "the sink a model (the train sink's validation); otherwise the run stops before its first batch.");
    s.add_string("model", "").fixed().doc(
        "Architecture of `weights` when it is a plain PyTorch state dict (e.g. \"yolo11n\"; the class count comes "
        "from the file); a checkpoint of `yoloflow train` names its own.");
    s.add_float("conf", 0.001).range(0.0, 1.0).fixed().doc("NMS confidence threshold (the train sink's val_conf).");
    s.add_float("iou", 0.7).range(0.0, 1.0).fixed().doc("NMS IoU threshold (the train sink's val_iou).");
    s.add_int("max_det", 300).range(1, 100000).fixed().doc("Detections kept per image.");
    s.add_bool("single_cls", false).fixed().doc(
        "Score every detection as class 0, suppressing boxes across classes (Ultralytics' single_cls "
        "validation): a multi-class model measured on labels read as one class.");
    s.add_component("evaluator", "evaluator", train_sink_default("evaluator")).fixed().doc(
        "What the predictions are measured with: any evaluator plugin (`yoloflow plugins` lists them), e.g. "
        "{\"plugin\": \"detection\"} (box P, R, mAP50, mAP50-95). Default: the train stage's in "
        "core/resources/train-defaults.json.");
    s.add_string("output", "metrics.json").fixed().doc(
        "File the metrics are written to, relative to the run folder (or absolute): the evaluator's values overall "
        "(for detection P, R, mAP50, mAP50-95), fitness, image and instance counts, and the same per class. \"\": "
        "none.");
    s.add_string("device", "").fixed().doc(
        "\"auto\" (CUDA when available), \"cpu\", \"cuda\", \"cuda:1\"; empty = the pipeline's device.");
    return s;
  }

  void configure(const Params& p, const StageContext& ctx) override {
    ctx_ = ctx;
    const std::string where = ctx.node.empty() ? p.where() : "stages." + ctx.node;
    where_ = where;
    nms_.conf = p.get_float("conf");
    nms_.iou = p.get_float("iou");
    nms_.max_det = static_cast<int>(p.get_int("max_det"));
    nms_.multi_label = true;  // as validation in training: one box may count for several classes
    nms_.agnostic = nms_.one_class = p.get_bool("single_cls");
    const fs::path out(p.get_string("output"));
    output_ = out.empty() || out.is_absolute() || ctx.run_dir.empty() ? out.string() : (fs::path(ctx.run_dir) / out).string();
    if (!evaluator_) {
      const json spec = p.get_json("evaluator");
      evaluator_ = create_guarded<Evaluator>(host_registry(), Kind::Evaluator, spec,
                                             evaluator_path_.empty() ? where + ".params.evaluator" : evaluator_path_, ctx);
    }
    if (loaded_.model || model_ != nullptr) return;  // the model stays; only thresholds may change
    if (p.is_null("weights")) return;
    weights_ = p.get_string("weights");  // the host hands a model over (use_model), or begin_epoch refuses
    device_ = pick_device(p.get_string("device").empty() ? ctx.device : p.get_string("device"), where + ".params.device");
    loaded_ = load_checkpoint_model(host_registry(), weights_, device_, where + ".params.weights", p.get_string("model"),
                                    where + ".params.model");
    model_ = loaded_.model.get();
    YF_LOG_INFO("validate: " << loaded_.model->architecture() << " (" << loaded_.weights_kind << " weights of "
                             << weights_ << ") on " << device_.str());
  }

  void use_model(Model& model, PrecisionStrategy* precision, Loss* loss, const torch::Device& device,
                 std::vector<KeptDetections>* kept) override {
    if (loaded_.model) throw Error(where_ + ": validates " + weights_ + "; it cannot be handed another model");
    if (model_ != &model) set_up_for_ = nullptr;
    model_ = &model;
    precision_ = precision;
    loss_ = loss;
    device_ = device;
    kept_ = kept;
  }
  const Evaluator& evaluator(const HeadDescription& head) override {
    evaluator_->setup(head);
    set_up_for_ = model_;
    return *evaluator_;
  }
  const Evaluation& evaluation() const override { return result_; }
  void name_evaluator(std::string path) override { evaluator_path_ = std::move(path); }
  std::vector<MetricColumn> table() const override { return evaluator_->table(); }
  const NamedLosses& losses() const override { return losses_; }
  const ValidationTimes& times() const override { return times_; }
  void collect_plots(ValPlots* plots) override { plots_ = plots; }

  void begin_epoch(int) override {
    if (model_ == nullptr) {
      throw InvalidInput(where_ + ".params.weights: required: the checkpoint to evaluate (e.g. runs/train/1/weights/best.pt)");
    }
    if (set_up_for_ != model_ || set_up_for_ == nullptr) {
      evaluator_->setup(model_->head());
      set_up_for_ = model_;
    }
    evaluator_->reset();
    loss_sum_ = torch::Tensor();
    loss_batches_ = 0;
    times_ = ValidationTimes();
    done_ = false;
    plots_ok_ = plots_ != nullptr;
    if (plots_ok_) plots_->reset(model_->head().nc);
  }

  void consume(Batch& batch) override {
    if (batch.size == 0) return;
    const int nc = model_->head().nc;
    box_rows(batch);  // the (N, 6) shape checked before the class loop reads it
    const std::vector<float>& boxes = std::as_const(batch).boxes().values;
    for (std::int64_t k = 0; k < batch.num_boxes(); ++k) {
      const int cls = static_cast<int>(boxes[static_cast<std::size_t>(k * 6 + 1)]);
      if (cls < 0 || cls >= nc) {
        const auto& info = batch.samples.at(static_cast<std::size_t>(boxes[static_cast<std::size_t>(k * 6)]));
        throw InvalidInput(where_ + ": " + info.path + " has a box of class " + std::to_string(cls) + ", but " +
                           (weights_.empty() ? std::string("the model") : weights_) + " detects " + std::to_string(nc) + " classes (0.." + std::to_string(nc - 1) +
                           "): validate on the dataset the weights were trained for");
      }
    }
    torch::NoGradGuard no_grad;
    std::vector<ImagePredictions> predictions;
    const auto items = validate_batch(*model_, device_, precision_, loss_, batch, nms_, predictions, &times_);
    evaluator_->add_batch(batch, predictions);
    if (plots_ok_) {
      // Plots are worth a warning, never a failed validation.
      try {
        plots_->add_batch(batch, predictions);
      } catch (const std::exception& e) {
        YF_LOG_WARN(where_ << ": no plots of this validation: " << e.what());
        plots_ok_ = false;
      }
    }
    if (kept_ != nullptr) {
      for (std::size_t i = 0; i < batch.samples.size(); ++i) {
        const ImagePredictions& p = predictions.at(i);
        KeptDetections k{batch.samples[i], p.boxes, {}};
        // A segmentation model's masks, as RLE now: the prototypes are not kept for every image.
        const auto coefficients = p.extras.find("mask_coefficients");
        const auto prototypes = p.extras.find("prototypes");
        if (coefficients != p.extras.end() && prototypes != p.extras.end() && p.boxes.size(0) > 0) {
          k.mask_rles = detection_rles(prototypes->second, coefficients->second, p.boxes.narrow(1, 0, 4), batch.height,
                                       batch.width, batch.samples[i].geometry);
        }
        kept_->push_back(std::move(k));
      }
    }
    if (items.defined()) loss_sum_ = loss_sum_.defined() ? loss_sum_ + items : items.to(torch::kDouble);
    ++loss_batches_;
  }

  void end_epoch(int) override {
    result_ = evaluator_->compute();
    if (plots_ok_) plots_->set_matched(evaluator_->matched());
    losses_.clear();
    if (loss_ != nullptr && loss_sum_.defined()) {
      const auto mean = (loss_sum_ / std::max<std::int64_t>(loss_batches_, 1)).contiguous();
      losses_ = named_losses(loss_->item_names(),
                             std::vector<double>(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel()));
    }
    if (!output_.empty()) write_metrics();
    if (ctx_.reporter != nullptr) {
      std::map<std::string, double> values = result_.columns;
      values["fitness"] = result_.fitness;
      ctx_.reporter->epoch_values(values);
    }
    done_ = true;
  }

  std::string summary() const override {
    if (!done_) return "";
    std::ostringstream os;
    const auto table = evaluator_->table();
    os << "validated " << weights_ << ": " << result_.images << " images, " << result_.instances << " instances\n"
       << metrics_table(result_, table, names()) << metrics_line(result_, table, false) << "; written to " << output_
       << "\n";
    return os.str();
  }

 private:
  void write_metrics() const {
    nlohmann::ordered_json j;
    j["weights"] = weights_;
    j.update(metrics_json(result_, evaluator_->table(), names()));
    if (const fs::path parent = fs::path(output_).parent_path(); !parent.empty()) fs::create_directories(parent);
    write_file_atomic(output_, j.dump(2) + "\n");
  }

  const std::vector<std::string>& names() const { return loaded_.described.names; }

  StageContext ctx_;
  std::string weights_, output_, where_, evaluator_path_;
  Model* model_ = nullptr;  // loaded_'s, or the host's
  PrecisionStrategy* precision_ = nullptr;
  Loss* loss_ = nullptr;
  std::vector<KeptDetections>* kept_ = nullptr;
  torch::Tensor loss_sum_;
  std::int64_t loss_batches_ = 0;
  NamedLosses losses_;
  ValidationTimes times_;
  torch::Device device_{torch::kCPU};
  LoadedCheckpointModel loaded_;
  NmsOptions nms_;
  std::unique_ptr<Evaluator> evaluator_;
  const Model* set_up_for_ = nullptr;  // the model the evaluator was last set up for
  Evaluation result_;
  bool done_ = false;
  ValPlots* plots_ = nullptr;  // the host's, when it asked for plots
  bool plots_ok_ = false;      // this validation feeds plots_
};

}  // namespace

std::unique_ptr<HostedValidationSink> make_hosted_validation_sink() { return std::make_unique<ValSink>(); }

void register_val_sink(Registry& registry) {
  add_builtin_sink<ValSink>(registry, "val",
      "Evaluates a checkpoint on the batches it receives (the train sink's validation: NMS, then its evaluator: "
      "for detection P, R, mAP50, mAP50-95 overall and per class) and writes the metrics to a JSON file.",
      BuiltinTraits{nullptr, nullptr, /*writes_run_folder=*/true});
}

}  // namespace yoloflow::core
