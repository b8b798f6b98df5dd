// early_stopping and periodic_checkpoints, loaded from their plugin library: what they ask of
// the run, epoch by epoch and batch by batch, and their state across a resume.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/plugin_set.h"
#include "yoloflow/callback.h"

using namespace yoloflow;

namespace {

std::unique_ptr<Callback> make(const std::string& name, const json& params = json::object()) {
  return plugin_test::make_component<Callback>(plugin_test::plugins_with("callback_standard"), Kind::Callback, name, params,
                                        {640, "train", "callback_standard"});
}

// What the callbacks asked of the run.
struct Requests final : TrainControl {
  std::vector<std::string> saved;
  std::vector<std::string> stops;
  void save_checkpoint(const std::string& file) override { saved.push_back(file); }
  void request_stop(const std::string& reason) override { stops.push_back(reason); }
};

EpochSummary validated(double fitness, bool last = false, int every = 1) {
  EpochSummary e;
  e.validated = true;
  e.fitness = fitness;
  e.last = last;
  e.epochs_per_validation = every;
  return e;
}

}  // namespace

TEST_CASE("early_stopping: patience counts epochs since the last strict improvement; a tie is none") {
  auto cb = make("early_stopping", {{"patience", 2}});
  Requests r;
  TrainProgress p;
  cb->on_epoch_end(validated(0.30), p, r);  // the first validation improves
  cb->on_epoch_end(validated(0.30), p, r);  // a tie: one epoch without improvement
  CHECK(r.stops.empty());
  CHECK(cb->state()["epochs_without_improvement"] == 1);
  cb->on_epoch_end(validated(0.25), p, r);  // two: patience 2 is exhausted
  REQUIRE(r.stops.size() == 1);
  CHECK(r.stops[0] == "early stop: no fitness improvement in the last 2 epochs (patience 2)");
  CHECK(cb->state()["best_fitness"] == 0.30);
  // The last epoch ends the run anyway; an epoch without validation changes nothing.
  cb->on_epoch_end(validated(0.20, /*last=*/true), p, r);
  CHECK(r.stops.size() == 1);
  EpochSummary skipped;
  cb->on_epoch_end(skipped, p, r);
  CHECK(cb->state()["epochs_without_improvement"] == 3);
}

TEST_CASE("early_stopping: while the best is 0 every epoch improves; val_every counts epochs; 0 never stops") {
  auto cb = make("early_stopping", {{"patience", 1}});
  Requests r;
  TrainProgress p;
  for (int e = 0; e < 5; ++e) cb->on_epoch_end(validated(0.0), p, r);
  CHECK(r.stops.empty());
  auto never = make("early_stopping", {{"patience", 0}});
  never->on_epoch_end(validated(0.1), p, r);
  never->on_epoch_end(validated(0.05, false, 3), p, r);
  CHECK(never->state()["epochs_without_improvement"] == 3);
  CHECK(r.stops.empty());
}

TEST_CASE("early_stopping: a resumed run continues the count its checkpoint holds") {
  auto first = make("early_stopping", {{"patience", 3}});
  Requests r;
  TrainProgress p;
  first->on_epoch_end(validated(0.5), p, r);
  first->on_epoch_end(validated(0.4), p, r);
  first->on_epoch_end(validated(0.4), p, r);
  const json saved = first->state();
  auto resumed = make("early_stopping", {{"patience", 3}});
  resumed->load_state(saved);
  resumed->on_epoch_end(validated(0.45), p, r);  // third epoch without beating 0.5
  REQUIRE(r.stops.size() == 1);
  CHECK(r.stops[0].find("last 3 epochs") != std::string::npos);
}

TEST_CASE("periodic_checkpoints: epochN.pt every save_period epochs, last.pt after save_every batches at a step") {
  auto cb = make("periodic_checkpoints", {{"save_period", 2}, {"save_every", 3}});
  Requests r;
  TrainProgress p;
  for (int b = 1; b <= 4; ++b) {
    p.optimizer_stepped = b % 2 == 0;  // accumulating over two batches
    cb->on_batch_end(p, r);
  }
  // Three batches were reached at batch 3, but the step (no pending gradients) came at 4.
  CHECK(r.saved == std::vector<std::string>{"last.pt"});
  CHECK(cb->state()["batches_since_save"] == 0);
  for (int epoch = 0; epoch < 4; ++epoch) {
    p.epoch = epoch;
    cb->on_epoch_end(EpochSummary{}, p, r);
  }
  CHECK(r.saved == std::vector<std::string>{"last.pt", "epoch2.pt", "epoch4.pt"});
  // The count survives a resume.
  p.optimizer_stepped = true;
  cb->on_batch_end(p, r);
  cb->on_batch_end(p, r);
  auto resumed = make("periodic_checkpoints", {{"save_every", 3}});
  resumed->load_state(cb->state());
  resumed->on_batch_end(p, r);
  CHECK(r.saved.back() == "last.pt");
  CHECK(r.saved.size() == 4);
}

TEST_CASE("periodic_checkpoints: off by default") {
  auto cb = make("periodic_checkpoints");
  Requests r;
  TrainProgress p;
  p.optimizer_stepped = true;
  for (int i = 0; i < 50; ++i) cb->on_batch_end(p, r);
  cb->on_epoch_end(EpochSummary{}, p, r);
  CHECK(r.saved.empty());
}
