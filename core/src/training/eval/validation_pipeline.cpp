#include "training/eval/validation_pipeline.h"

#include "runtime/pipeline/component_factory.h"
#include "runtime/words/pipeline_loading.h"
#include "training/components/batch_targets.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

// Stage names of the validation pipeline: what messages about it show.
constexpr const char* kSource = "val_source";
constexpr const char* kTransform = "val_transform";
constexpr const char* kBatcher = "val_batcher";
constexpr const char* kSink = "val";

json stage(json spec, const char* input) {
  if (!spec.contains("params") || !spec["params"].is_object()) spec["params"] = json::object();
  if (input != nullptr) spec["input"] = input;
  return spec;
}

}  // namespace

ValidationPipeline::ValidationPipeline(const Registry& registry, const ValidationStages& stages,
                                       ValidationOptions options, const StageContext& context, std::string where)
    : options_(std::move(options)), where_(std::move(where)) {
  check_validation_transform(registry, stages.transform, stages.transform_path);
  check_validation_batcher(registry, stages.batcher, stages.batcher_path);
  json transform = stage(stages.transform, kSource);
  transform["params"]["height"] = options_.imgsz;  // each batch's own shape is set when it runs
  transform["params"]["width"] = options_.imgsz;
  json batcher = stage(stages.batcher, kTransform);
  batcher["params"]["batch"] = options_.batch;
  // No weights for the val sink: the model is handed over at each run. No metrics file
  // either: the caller reports the metrics (results.csv, `yoloflow val`'s --out).
  json sink_params = stages.nms;
  sink_params["output"] = "";
  if (!stages.evaluator.is_null()) sink_params["evaluator"] = stages.evaluator;
  json sink = stage(stages.sink.is_null() ? json{{"plugin", kSink}, {"params", sink_params}} : stages.sink, kBatcher);
  const json document = {{"name", "validation"},
                         {"epochs", 1},
                         {"imgsz", options_.imgsz},
                         {"workers", context.workers},
                         {"ordered", true},
                         {"shuffle", false},
                         {"stages",
                          {{kSource, stage(stages.source, nullptr)}, {kTransform, transform}, {kBatcher, batcher}, {kSink, sink}}}};
  auto loaded = parse_pipeline(document.dump(), "", {}, registry, where_);
  if (!loaded.ok()) {
    throw InvalidInput("the validation pipeline made from " + where_ + " is not valid:\n" +
                       format_diagnostics(loaded.diagnostics, where_));
  }
  pipeline_ = std::move(*loaded.pipeline);
  RunnerOptions ro;
  ro.run_dir = context.run_dir;
  ro.device = context.device;
  ro.stop_flag = options_.stop_flag;
  if (stages.sink.is_null()) {
    // The val sink, made and configured here so that runs can hand it their model.
    const StageSpec& spec = pipeline_.stage(kSink);
    hosted_ = make_hosted_validation_sink();
    if (!stages.evaluator_path.empty()) hosted_->name_evaluator(stages.evaluator_path);
    StageContext sink_context = context;
    sink_context.node = kSink;
    sink_context.imgsz = options_.imgsz;
    configure_component(*hosted_, *spec.component, pipeline_.stage_params(kSink, 0), spec.path(), sink_context,
                        "stage '" + std::string(kSink) + "'");
    ro.sink = hosted_.get();
  }
  runner_ = std::make_unique<GraphRunner>(pipeline_, registry, ro);
  names_ = runner_->source().info().names;
}

ValidationPipeline::~ValidationPipeline() = default;

std::size_t ValidationPipeline::size() { return runner_->source().size(); }

EpochStats ValidationPipeline::run_batches(int stride) {
  if (!planned_) {
    ValidationOptions o = options_;
    o.stride = stride;
    const ValidationPlan plan = plan_validation(runner_->source(), o, where_);
    for (std::size_t b = 0; b < plan.batches.size(); ++b) {
      PlannedBatch pb;
      pb.indices = plan.batches[b];
      pb.stage_params[kTransform] = {{"height", plan.shapes[b].first}, {"width", plan.shapes[b].second}};
      plan_.push_back(std::move(pb));
    }
    plan_skipped_ = plan.skipped;
    planned_ = true;
  }
  const EpochStats stats = runner_->run_planned(0, plan_);
  for (const auto& s : stats.skipped) YF_LOG_WARN(where_ << ": skipped image " << s.index << ": " << s.reason);
  skipped_ = plan_skipped_ + stats.skipped.size();
  return stats;
}

const Evaluator& ValidationPipeline::evaluator(const HeadDescription& head) {
  if (!hosted_) throw Error(where_ + ": the validation pipeline's sink is not `" + kSink + "`");
  return hosted_->evaluator(head);
}

ValidationResult ValidationPipeline::run(Model& model, PrecisionStrategy* precision, Loss* loss,
                                         const torch::Device& device, std::vector<KeptDetections>* kept,
                                         ValPlots* plots) {
  if (!hosted_) throw Error(where_ + ": the validation pipeline's sink is not `" + kSink + "`");
  HostedValidation* sink = hosted_.get();
  model.module().eval();
  // cuDNN's heuristics, not benchmarking, for validation's convolutions: beside a captured
  // training step benchmarking every validation shape made the first validation on an H200
  // take 4.6-5.8 s instead of 2.2 s (bench/gpu/compare-ultralytics.sh). Restored on the way
  // out; the captured step keeps its algorithms.
  struct BenchmarkOff {
    bool was = at::globalContext().benchmarkCuDNN();
    BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(false); }
    ~BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(was); }
  } benchmark_off;
  // The training mode comes back whatever happens.
  struct Restore {
    Model& model;
    ~Restore() { model.module().train(); }
  } restore{model};
  sink->use_model(model, precision, loss, device, kept);
  sink->collect_plots(plots);
  run_batches(static_cast<int>(largest_stride(model.head())));
  ValidationResult out;
  out.evaluation = sink->evaluation();
  out.table = sink->table();
  out.losses = sink->losses();
  out.times = sink->times();
  return out;
}

}  // namespace yoloflow::core
