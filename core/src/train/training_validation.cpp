#include "train/training_validation.h"

#include "train/batch_targets.h"
#include "train/validation_batch.h"

namespace yoloflow::core {

TrainingValidation::TrainingValidation(const Registry& registry, std::unique_ptr<DataSource> source,
                                       ValidationOptions options, NmsOptions nms, std::string where)
    : registry_(registry),
      source_(std::move(source)),
      options_(options),
      nms_(nms),
      where_(std::move(where)),
      names_(source_->info().names) {}

TrainingValidation::~TrainingValidation() = default;

TrainingValidationResult TrainingValidation::run(Model& model, ModelEma* ema, PrecisionStrategy* precision,
                                                 Loss* loss, const torch::Device& device) {
  std::vector<torch::Tensor> saved;
  if (ema != nullptr) saved = ema->swap_into(model.module());
  model.module().eval();
  torch::NoGradGuard no_grad;
  // cuDNN's heuristics, not benchmarking, for validation's convolutions: beside a captured
  // training step benchmarking every validation shape made the first validation on an H200
  // take 4.6-5.8 s instead of 2.2 s (bench/gpu/compare-ultralytics.sh). Restored on the way
  // out; the captured step keeps its algorithms.
  struct BenchmarkOff {
    bool was = at::globalContext().benchmarkCuDNN();
    BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(false); }
    ~BenchmarkOff() { at::globalContext().setBenchmarkCuDNN(was); }
  } benchmark_off;
  if (!loader_) {
    ValidationOptions o = options_;
    o.stride = static_cast<int>(largest_stride(model.head()));
    loader_ = std::make_unique<ValidationLoader>(registry_, *source_, o, where_);
  }
  DetectionMetrics metrics(model.head().nc);
  torch::Tensor loss_sum;
  std::int64_t batches = 0;
  for (std::size_t b = 0; b < loader_->batches(); ++b) {
    const ValidationBatch vb = loader_->load(b);
    if (vb.samples.empty()) continue;
    const auto items = validate_batch(model, device, precision, loss, vb.pixels, vb.rows, nms_, metrics);
    if (items.defined()) loss_sum = loss_sum.defined() ? loss_sum + items : items.to(torch::kDouble);
    ++batches;
  }
  model.module().train();
  if (ema != nullptr) ema->restore(model.module(), saved);
  TrainingValidationResult out;
  out.metrics = metrics.compute();
  if (loss != nullptr && loss_sum.defined()) {
    const auto mean = (loss_sum / std::max<std::int64_t>(batches, 1)).contiguous();
    out.losses = named_losses(loss->item_names(),
                              std::vector<double>(mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel()));
  }
  return out;
}

}  // namespace yoloflow::core
