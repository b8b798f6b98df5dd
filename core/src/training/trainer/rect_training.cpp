#include "training/trainer/rect_training.h"

#include <utility>

#include "training/eval/validation_plan.h"
#include "yoloflow/log.h"

namespace yoloflow::core {

std::vector<std::string> rect_shape_stages(const Pipeline& pipeline) {
  std::vector<std::string> out;
  for (const auto& s : pipeline.stages) {
    if (s.kind == Kind::Augmentation && s.component != nullptr && s.component->info.schema.find("height") != nullptr &&
        s.component->info.schema.find("width") != nullptr) {
      out.push_back(s.name);
    }
  }
  return out;
}

RectTrainingPlan plan_rect_training(GraphRunner& runner, const std::vector<std::string>& stages, int imgsz,
                                    std::int64_t batch, int stride, const std::string& where) {
  ValidationOptions o;
  o.imgsz = imgsz;
  o.batch = batch;
  o.rect = true;
  o.stride = stride;
  o.pad = 0.0;  // Ultralytics' training shapes: the extreme side rounded up to the stride, no more
  const ValidationPlan plan = plan_validation(runner.source(), o, where);
  RectTrainingPlan out;
  out.imgsz = imgsz;
  out.batch = batch;
  out.skipped = plan.skipped;
  for (std::size_t i = 0; i < plan.batches.size(); ++i) {
    PlannedBatch b;
    b.indices = plan.batches[i];
    const auto [h, w] = plan.shapes[i];
    for (const auto& name : stages) b.stage_params[name] = {{"height", h}, {"width", w}};
    out.batches.push_back(std::move(b));
  }
  const std::pair<int, int> none{0, 0};
  const auto& [first_h, first_w] = plan.shapes.empty() ? none : plan.shapes.front();
  const auto& [last_h, last_w] = plan.shapes.empty() ? none : plan.shapes.back();
  YF_LOG_INFO(where << ": rectangular training batches: " << out.batches.size() << " batches of up to " << batch
                    << " images ordered by aspect ratio, shapes from " << first_h << "x" << first_w << " to " << last_h
                    << "x" << last_w << " (height x width), the same order every epoch");
  return out;
}

EpochStats RectEpochs::run(GraphRunner& runner, int epoch, int imgsz, std::uint64_t first_sequence) {
  runner.prepare(epoch);
  const std::int64_t batch = runner.batcher().batch_size();
  if (plan_.imgsz != imgsz || plan_.batch != batch) plan_ = plan_rect_training(runner, stages_, imgsz, batch, stride_, where_);
  if (first_sequence == 0) return runner.run_planned(epoch, plan_.batches);
  std::vector<PlannedBatch> rest;
  std::uint64_t seen = 0;
  for (const auto& b : plan_.batches) {
    if (seen >= first_sequence) rest.push_back(b);
    seen += b.indices.size();
  }
  return runner.run_planned(epoch, rest);
}

}  // namespace yoloflow::core
