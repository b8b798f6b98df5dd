#include "training/trainer/train_batch_images.h"

#include "training/detect/image_file.h"
#include "training/detect/sample_grid.h"
#include "yoloflow/error.h"
#include "yoloflow/callback.h"
#include "yoloflow/log.h"
#include "yoloflow/version.h"

namespace yoloflow::core {
namespace {

class TrainBatchImages final : public Callback {
 public:
  static Schema schema() {
    Schema s;
    s.add_int("batches", 3).range(0, 1000).fixed().doc("How many of the first epoch's first batches to draw (train_batch0.jpg, ...).");
    s.add_int("max_images", 16).range(1, 1024).fixed().doc("Images drawn per batch (the first ones).");
    s.add_int("max_side", 1920).range(64, 16384).fixed().doc("Longest side of each picture, in pixels.");
    return s;
  }
  void configure(const Params& p, const StageContext&) override {
    batches_ = p.get_int("batches");
    max_images_ = p.get_int("max_images");
    max_side_ = static_cast<int>(p.get_int("max_side"));
  }
  void on_train_start(const TrainRun& run, TrainControl&) override {
    run_dir_ = run.run_dir;
    names_ = run.names;
  }
  void on_batch_start(const Batch& batch, const TrainProgress& progress, TrainControl&) override {
    if (progress.epoch != 0 || progress.step >= batches_) return;
    const std::string path = run_dir_ + "/train_batch" + std::to_string(progress.step) + ".jpg";
    // Not worth failing a run over (a batch composed on the training device past the first
    // kPicturedBatches has no pixels on the host: samples_of_batch says so).
    try {
      auto samples = samples_of_batch(batch);
      if (static_cast<std::int64_t>(samples.size()) > max_images_) samples.resize(static_cast<std::size_t>(max_images_));
      write_image_file(path, draw_sample_grid(samples, names_, max_side_));
    } catch (const Error& e) {
      YF_LOG_WARN("train: " << e.what());
    }
  }

 private:
  std::int64_t batches_ = 3, max_images_ = 16;
  int max_side_ = 1920;
  std::string run_dir_;
  std::vector<std::string> names_;
};

}  // namespace

void register_train_batch_images(Registry& registry) {
  ComponentInfo info;
  info.kind = Kind::Callback;
  info.name = "train_batch_images";
  info.summary = "Draws the first batches of the run, as the model receives them, into train_batch0.jpg, ... "
                 "(boxes and class names; a segmentation batch's masks filled in their class's colour).";
  info.schema = TrainBatchImages::schema();
  info.factory = []() -> Component* { return static_cast<Callback*>(new TrainBatchImages()); };
  registry.add(std::move(info), "<built-in>", "yoloflow", YOLOFLOW_VERSION_STRING);
}

}  // namespace yoloflow::core
