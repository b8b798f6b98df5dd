// The `ema` callback as a user configures it: on by default, its parameters in the callbacks
// list, off with `ema: false`, and a clear error when both say otherwise.
#include <doctest/doctest.h>

#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"

using namespace yoloflow;

namespace {

// 4 images at 64 px, batch 2, nominal 2: two optimizer steps, no validation.
core::Checkpoint train(const std::string& dir, const std::string& name, const std::string& train_extra) {
  test::TrainPipeline p;
  p.name = name;
  p.train = R"("model": {"plugin": "yolo11", "params": {"scale": "n"}}, "optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, )"
            R"("nominal_batch": 2, "warmup_epochs": 0, "val_every": 0)" + train_extra;
  test::write_file(dir + "/" + name + ".json", p.json());
  auto r = test::run_cli("run " + dir + "/" + name + ".json --run-dir " + dir + "/" + name);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return core::load_checkpoint(dir + "/" + name + "/weights/last.pt");
}

// Largest absolute difference between the checkpoint's average and its weights, float tensors.
double ema_distance(const core::Checkpoint& ck) {
  const auto model = core::to_map(ck.model);
  double d = 0;
  for (const auto& [name, t] : ck.ema) {
    if (!t.is_floating_point()) continue;
    d = std::max(d, (t - model.at(name)).abs().max().item<double>());
  }
  return d;
}

}  // namespace

TEST_CASE("ema callback: on by default, its decay from the callbacks list, off with ema false") {
  const auto dir = test::temp_dir("train-ema");
  test::write_coco128_subset(dir, 4);

  // Default: every weight averaged, one update per optimizer step, away from the raw weights.
  const auto averaged = train(dir, "default", "");
  CHECK(averaged.global_step == 2);
  CHECK(averaged.ema_updates == 2);
  REQUIRE(averaged.ema.size() == averaged.model.size());
  CHECK(ema_distance(averaged) > 1e-6);

  // decay 0: the average is the latest weights, exactly.
  const auto latest = train(dir, "decay0", R"(, "callbacks": [{"plugin": "ema", "params": {"decay": 0}}])");
  CHECK(latest.ema_updates == 2);
  REQUIRE(latest.ema.size() == latest.model.size());
  CHECK(ema_distance(latest) == 0.0);

  // ema false: no average in the checkpoint (val and predict then read the raw weights).
  const auto none = train(dir, "off", R"(, "ema": false)");
  CHECK(none.ema.empty());
  CHECK(none.global_step == 2);
}

TEST_CASE("ema callback: ema false with an ema entry is refused, naming both") {
  const auto dir = test::temp_dir("train-ema-conflict");
  test::write_coco128_subset(dir, 4);
  test::TrainPipeline p;
  p.name = "conflict";
  p.train = R"("model": {"plugin": "yolo11", "params": {"scale": "n"}}, "ema": false, )"
            R"("callbacks": [{"plugin": "train_batch_images"}, {"plugin": "ema"}])";
  test::write_file(dir + "/conflict.json", p.json());
  auto r = test::run_cli("run " + dir + "/conflict.json --run-dir " + dir + "/run");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("stages.train.params.ema is false but stages.train.params.callbacks.1 is the ema callback") !=
        std::string::npos);
}
