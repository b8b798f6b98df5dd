// The train sink's callback list (train_callbacks.h) with the built-in callbacks loaded from
// their plugin library: names that key the state in a checkpoint, state handed back by name,
// the errors of a failing callback and of a bad checkpoint request.
#include <doctest/doctest.h>

#include <string>

#include "support/plugins.h"
#include "training/callbacks/train_callbacks.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

core::TrainCallbacks make_list(const json& specs) {
  auto& pm = test::plugins_with("callback_standard");
  StageContext ctx;
  ctx.node = "train";
  return core::TrainCallbacks(pm.registry(), specs, "stages.train.params.callbacks", ctx);
}

EpochSummary validated(double fitness) {
  EpochSummary e;
  e.validated = true;
  e.fitness = fitness;
  return e;
}

}  // namespace

TEST_CASE("callback list: state keyed by plugin name, name#2 for a second entry, handed back by name") {
  auto list = make_list(json::array({{{"plugin", "early_stopping"}, {"params", {{"patience", 3}}}},
                                     {{"plugin", "periodic_checkpoints"}},
                                     {{"plugin", "early_stopping"}, {"params", {{"patience", 1}}}}}));
  core::CallbackRequests r;
  list.epoch_end(validated(0.5), TrainProgress{}, r);
  list.epoch_end(validated(0.4), TrainProgress{}, r);
  // The second early_stopping (patience 1) asked to stop; the first (patience 3) did not.
  CHECK(r.stop_reason == "early stop: no fitness improvement in the last 1 epochs (patience 1)");
  const json states = list.states();
  CHECK(states["early_stopping"]["epochs_without_improvement"] == 1);
  CHECK(states["early_stopping#2"]["epochs_without_improvement"] == 1);
  CHECK(states["periodic_checkpoints"]["batches_since_save"] == 0);

  auto resumed = make_list(json::array({{{"plugin", "early_stopping"}, {"params", {{"patience", 3}}}},
                                        {{"plugin", "periodic_checkpoints"}},
                                        {{"plugin", "early_stopping"}, {"params", {{"patience", 1}}}}}));
  json saved = states;
  saved["early_stopping"]["epochs_without_improvement"] = 2;
  resumed.load_states(saved);
  core::CallbackRequests again;
  resumed.epoch_end(validated(0.45), TrainProgress{}, again);  // the first one's third epoch without beating 0.5
  CHECK(again.stop_reason == "early stop: no fitness improvement in the last 3 epochs (patience 3)");
}

TEST_CASE("callback list: an unknown callback is refused with its path; checkpoint requests are file names") {
  CHECK_THROWS_WITH(make_list(json::array({{{"plugin", "early_stoping"}}})),
                    doctest::Contains("stages.train.params.callbacks.0"));
  core::CallbackRequests r;
  r.save_checkpoint("epoch3.pt");
  CHECK(r.checkpoints == std::vector<std::string>{"epoch3.pt"});
  CHECK_THROWS_AS(r.save_checkpoint("../outside.pt"), InvalidInput);
  CHECK_THROWS_AS(r.save_checkpoint(""), InvalidInput);
}
