// Ultralytics' `freeze` on real runs, from the yolo11n fixture's weights on coco128 images:
// freeze=10 keeps the backbone (model.0 to model.9) bit-identical to the file, batch-norm
// statistics included, and its EMA with it, while the neck and head train; the frozen
// parameters get no optimizer state; a run stopped mid-epoch resumes to the weights of one that
// never stopped; a layer that does not exist, freezing every layer, and a resume that changes
// the frozen layers are refused in one line. On CUDA the same holds for a captured step.
#include <doctest/doctest.h>

#include <torch/cuda.h>

#include <cstdlib>
#include <map>
#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "training/model/weights_io.h"
// Last: CHECK is doctest's, not LibTorch's glog one.
#include "support/doctest_checks.h"

using namespace yoloflow;

namespace {

std::string fixture() { return test::fixtures_dir() + "/yolo11n-parity/yolo11n.pt"; }

// 8 images in batches of 2 with nominal batch 2: an optimizer step every batch (4 an epoch).
std::string freeze_pipeline() {
  test::TrainPipeline p;
  p.seed = 3;
  p.flip = true;
  p.top = R"("ordered": true, "device": "cpu", "workers": 1)";
  p.train = R"("weights": ")" + fixture() + R"(", "model": {"plugin": "yolo11", "params": {"scale": "n"}}, )"
            R"("optimizer": {"plugin": "sgd", "params": {"lr0": 0.01}}, "nominal_batch": 2, "warmup_epochs": 0, )"
            R"("val_every": 0, "log_every": 1, "cpu_threads": 1)";
  return p.json();
}

test::CliResult train(const std::string& dir, const std::string& run, const std::string& words) {
  return test::run_cli("train " + dir + "/p.json --run-dir " + dir + "/" + run + " " + words, "OMP_NUM_THREADS=1 ");
}

// The layer index of a tensor named "model.<i>....".
int layer_of(const std::string& name) { return std::atoi(name.c_str() + std::string("model.").size()); }

std::map<std::string, torch::Tensor> by_name(const core::TensorList& list) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [k, v] : list) out[k] = v.to(torch::kFloat);
  return out;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("freeze=10: the backbone stays bit-identical to the initial weights, the head trains") {
  const auto dir = test::temp_dir("train-freeze");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/p.json", freeze_pipeline());
  const auto r = train(dir, "run", "freeze=10");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Printed as Ultralytics prints it: each frozen parameter, the DFL's too.
  CHECK(contains(r.output, "Freezing layer 'model.0.conv.weight'"));
  CHECK(contains(r.output, "Freezing layer 'model.9.cv2.bn.bias'"));
  CHECK(contains(r.output, "Freezing layer 'model.23.dfl.conv.weight'"));
  CHECK_FALSE(contains(r.output, "Freezing layer 'model.10."));
  CHECK(contains(r.output, "freeze: layers 0-9 and the DFL: "));

  const auto file = by_name(core::read_weights(fixture()));
  const auto ck = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(ck.global_step == 4);
  const auto model = by_name(ck.model), ema = by_name(ck.ema);
  int frozen = 0, head = 0, head_changed = 0, trained_weights = 0;
  for (const auto& [name, t] : model) {
    CAPTURE(name);
    REQUIRE(file.count(name) == 1);
    const int layer = layer_of(name);
    if (layer < 10) {
      // Weights, biases and the batch norms' running statistics (eval mode) alike.
      CHECK(torch::equal(t, file.at(name)));
      CHECK(torch::equal(ema.at(name), file.at(name)));
      ++frozen;
    } else if (t.dim() > 1 && !contains(name, ".dfl.")) {  // a convolution's weights: the "weights" group
      ++trained_weights;
      if (layer >= 13) {
        ++head;
        if (!torch::equal(t, file.at(name))) ++head_changed;
      }
    }
  }
  CHECK(frozen > 100);
  CHECK(head > 40);
  CHECK(head_changed == head);
  // Momentum buffers only for the weights that train (none for frozen layers or the DFL).
  int buffers = 0;
  for (const auto& [name, t] : ck.optimizer) {
    if (name.rfind("weights.", 0) == 0 && contains(name, ".momentum_buffer")) ++buffers;
  }
  CHECK(buffers == trained_weights);
  test::remove_tree(dir);
}

TEST_CASE("freeze: a stopped run resumes to the weights of an unstopped one; changing the frozen layers on resume is refused") {
  const auto dir = test::temp_dir("train-freeze-resume");
  test::write_coco128_subset(dir, 8);
  test::write_file(dir + "/p.json", freeze_pipeline());
  const auto whole = train(dir, "whole", "freeze=[0,3,5]");
  INFO(whole.output);
  REQUIRE(whole.exit_code == 0);
  CHECK(contains(whole.output, "freeze: layers 0, 3, 5 and the DFL: "));
  const auto first = train(dir, "split", "freeze=[0,3,5] stages.train.params.max_steps=2");
  INFO(first.output);
  REQUIRE(first.exit_code == 0);

  const auto changed = test::run_cli("train --resume " + dir + "/split freeze=5", "OMP_NUM_THREADS=1 ");
  INFO(changed.output);
  CHECK(changed.exit_code == 2);
  CHECK(contains(changed.output, "stages.train.params.freeze: 0-4 here, but " + dir + "/split/weights/last.pt trained "
                                 "with 0, 3, 5 frozen; a resumed run keeps its frozen layers"));

  const auto rest = test::run_cli("train --resume " + dir + "/split stages.train.params.max_steps=0", "OMP_NUM_THREADS=1 ");
  INFO(rest.output);
  REQUIRE(rest.exit_code == 0);
  const auto a = core::load_checkpoint(dir + "/whole/weights/last.pt");
  const auto b = core::load_checkpoint(dir + "/split/weights/last.pt");
  CHECK(a.global_step == b.global_step);
  const auto file = by_name(core::read_weights(fixture()));
  const auto ma = by_name(a.model), mb = by_name(b.model);
  double worst = 0;
  for (const auto& [name, t] : ma) {
    CAPTURE(name);
    worst = std::max(worst, (t.to(torch::kDouble) - mb.at(name).to(torch::kDouble)).abs().max().item<double>());
    const int layer = layer_of(name);
    if (layer == 0 || layer == 3 || layer == 5) CHECK(torch::equal(mb.at(name), file.at(name)));
  }
  CHECK(worst < 1e-5);
  test::remove_tree(dir);
}

TEST_CASE("freeze: a layer the model does not have, or every layer, is refused in one line") {
  const auto dir = test::temp_dir("train-freeze-refused");
  test::write_coco128_subset(dir, 4);
  test::write_file(dir + "/p.json", freeze_pipeline());
  const auto beyond = train(dir, "beyond", "freeze=[2,30]");
  INFO(beyond.output);
  CHECK(beyond.exit_code == 2);
  CHECK(contains(beyond.output, "stages.train.params.freeze: layer 30 does not exist; the model has layers 0-23"));
  const auto all = train(dir, "all", "freeze=24");
  INFO(all.output);
  CHECK(all.exit_code == 2);
  CHECK(contains(all.output, "stages.train.params.freeze: freezing layers 0-23 leaves no parameter to train"));
  test::remove_tree(dir);
}

TEST_CASE("freeze on CUDA: a captured step leaves the frozen layers bit-identical and trains the rest") {
  if (!torch::cuda::is_available()) {
    MESSAGE("no CUDA device: the captured step is not checked here");
    return;
  }
  const auto dir = test::temp_dir("train-freeze-cuda");
  test::write_coco128_subset(dir, 16);  // 8 batches: 3 eager warm-up steps, then replays
  test::write_file(dir + "/p.json", freeze_pipeline());
  const auto r = train(dir, "run", "freeze=10 device=cuda stages.train.params.cuda_graph=true");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.output, "train: cuda_graph: 1 graph(s) captured"));
  CHECK_FALSE(contains(r.output, "capture failed"));
  const auto file = by_name(core::read_weights(fixture()));
  const auto ck = core::load_checkpoint(dir + "/run/weights/last.pt");
  CHECK(ck.global_step == 8);
  const auto model = by_name(ck.model), ema = by_name(ck.ema);
  int frozen = 0, head = 0, head_changed = 0;
  for (const auto& [name, t] : model) {
    CAPTURE(name);
    const int layer = layer_of(name);
    if (layer < 10) {
      CHECK(torch::equal(t, file.at(name)));
      CHECK(torch::equal(ema.at(name), file.at(name)));
      ++frozen;
    } else if (layer >= 13 && t.dim() > 1 && !contains(name, ".dfl.")) {
      ++head;
      if (!torch::equal(t, file.at(name))) ++head_changed;
    }
  }
  CHECK(frozen > 100);
  CHECK(head_changed == head);
  test::remove_tree(dir);
}
