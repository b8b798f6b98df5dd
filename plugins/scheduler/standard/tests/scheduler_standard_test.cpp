// linear and cosine, loaded from their plugin library, against Ultralytics' lr lambdas.
#include <doctest/doctest.h>

#include <cmath>

#include "support/plugin_set.h"
#include "yoloflow/scheduler.h"

using namespace yoloflow;

namespace {

std::unique_ptr<Scheduler> make(const std::string& name, const json& params = json::object()) {
  return plugin_test::make_component<Scheduler>(plugin_test::plugins_with("scheduler_standard"), Kind::Scheduler, name, params,
                                         {640, "train", "scheduler_standard"});
}

}  // namespace

TEST_CASE("scheduler linear: (1 - e/E) * (1 - lrf) + lrf, from 1 at the first epoch to lrf after the last") {
  const auto s = make("linear", {{"lrf", 0.1}});
  CHECK(s->lr_factor(0, 10) == doctest::Approx(1.0));
  CHECK(s->lr_factor(5, 10) == doctest::Approx(0.5 * 0.9 + 0.1));
  CHECK(s->lr_factor(9, 10) == doctest::Approx(0.1 * 0.9 + 0.1));
  CHECK(s->lr_factor(10, 10) == doctest::Approx(0.1));
  CHECK(s->lr_factor(12, 10) == doctest::Approx(0.1));  // never below lrf
  // The default lrf is Ultralytics' 0.01.
  CHECK(make("linear")->lr_factor(100, 100) == doctest::Approx(0.01));
}

TEST_CASE("scheduler cosine: ((1 - cos(pi e/E)) / 2) * (lrf - 1) + 1") {
  const auto s = make("cosine", {{"lrf", 0.2}});
  for (int e : {0, 1, 3, 5, 7, 10}) {
    const double expected = ((1.0 - std::cos(e * M_PI / 10.0)) / 2.0) * (0.2 - 1.0) + 1.0;
    CHECK(s->lr_factor(e, 10) == doctest::Approx(expected).epsilon(1e-12));
  }
  CHECK(s->lr_factor(5, 10) == doctest::Approx(0.6));  // halfway: the mean of 1 and lrf
  CHECK(s->lr_factor(10, 10) == doctest::Approx(0.2));
}

TEST_CASE("scheduler: lrf outside (0, 1] is refused with its JSON path") {
  auto& pm = plugin_test::plugins_with("scheduler_standard");
  const auto* rc = pm.find(Kind::Scheduler, "linear");
  REQUIRE(rc != nullptr);
  Diagnostics out;
  rc->schema.validate(json{{"lrf", 0.0}}, "stages.train.params.scheduler.params", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].path == "stages.train.params.scheduler.params.lrf");
}
