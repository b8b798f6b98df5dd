// Parameter schemas: every validation error with its JSON path, schedules, resolution.
#include <doctest/doctest.h>

#include "yoloflow/error.h"
#include "yoloflow/params.h"

using namespace yoloflow;

namespace {
Schema flip_schema() {
  Schema s;
  s.add_float("fliplr", 0.5).range(0.0, 1.0).doc("Horizontal flip probability.");
  s.add_float("flipud", 0.0).range(0.0, 1.0);
  s.add_int("batch", 16).min(1).accepts("auto");
  s.add_enum("cache", {"none", "ram", "disk"}, "none");
  s.add_string("data").required();
  s.add_float_list("mean", {0.0, 0.0, 0.0}).length(3, 3);
  s.add_bool("rect", false);
  return s;
}
bool has(const Diagnostics& d, const std::string& path, const std::string& text) {
  for (const auto& x : d) {
    if (x.path == path && x.message.find(text) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("valid parameters produce no diagnostics and resolve with defaults") {
  Diagnostics d;
  auto s = flip_schema();
  json p = {{"data", "x.yaml"}, {"fliplr", 0.25}, {"_doc", "comments are ignored"}};
  s.validate(p, "stages.flip.params", d);
  CHECK(d.empty());
  auto r = s.resolve(p);
  CHECK(r["fliplr"].get<double>() == doctest::Approx(0.25));
  CHECK(r["flipud"].get<double>() == 0.0);
  CHECK(r["batch"].get<int>() == 16);
  CHECK_FALSE(r.contains("_doc"));
}

TEST_CASE("every error is reported at once with its path") {
  Diagnostics d;
  json p = {{"flipr", 0.5}, {"fliplr", 1.5}, {"batch", "auot"}, {"cache", "rma"},
            {"mean", {1, 2}}, {"rect", "yes"}};
  flip_schema().validate(p, "stages.flip.params", d, nullptr, "augmentation 'flip'");
  CHECK(has(d, "stages.flip.params.flipr", "unknown parameter 'flipr' of augmentation 'flip'; did you mean 'fliplr'?"));
  CHECK(has(d, "stages.flip.params.fliplr", "1.5 is out of range: expected float in [0, 1]"));
  CHECK(has(d, "stages.flip.params.batch", "did you mean \"auto\"?"));
  CHECK(has(d, "stages.flip.params.cache", "did you mean \"ram\"?"));
  CHECK(has(d, "stages.flip.params.mean", "has 2 elements"));
  CHECK(has(d, "stages.flip.params.rect", "expected bool"));
  CHECK(has(d, "stages.flip.params.data", "is required"));
  CHECK(d.size() == 7);
}

TEST_CASE("wrong types are named") {
  Diagnostics d;
  flip_schema().validate({{"data", 3}, {"batch", 2.5}}, "p", d);
  CHECK(has(d, "p.data", "expected string, got an int"));
  CHECK(has(d, "p.batch", "expected int >= 1 or \"auto\", got a float"));
}

TEST_CASE("specials are accepted") {
  Diagnostics d;
  auto s = flip_schema();
  s.validate({{"data", "x"}, {"batch", "auto"}}, "p", d);
  CHECK(d.empty());
  Params params(s.resolve({{"data", "x"}, {"batch", "auto"}}), "p");
  CHECK(params.is_special("batch", "auto"));
}

TEST_CASE("a bool parameter may also take a word it declares") {
  Schema s;
  s.add("graph", ParamType::Bool).default_value("auto").accepts("auto").doc("On, off, or decided by the device.");
  Diagnostics ok;
  s.validate({{"graph", "auto"}}, "p", ok);
  s.validate({{"graph", true}}, "p", ok);
  CHECK(ok.empty());
  CHECK(s.resolve(json::object())["graph"] == "auto");
  Diagnostics bad;
  s.validate({{"graph", "yes"}}, "p", bad);
  CHECK(has(bad, "p.graph", "expected bool or \"auto\" (true or false), got a string"));
  Diagnostics plain;
  flip_schema().validate({{"data", "x"}, {"rect", "auto"}}, "p", plain);  // only where declared
  CHECK(has(plain, "p.rect", "expected bool (true or false), got a string"));
}

TEST_CASE("schedules: steps with negative epochs and linear ramps") {
  auto s = flip_schema();
  json p = {{"data", "x"},
            {"fliplr", {{"steps", {{"0", 0.5}, {"-10", 0.0}}}}},
            {"batch", {{"linear", {{"0", 16}, {"10", 64}}}}}};
  Diagnostics d;
  s.validate(p, "p", d);
  CHECK(d.empty());
  CHECK(s.resolve(p, 0, 100)["fliplr"].get<double>() == 0.5);
  CHECK(s.resolve(p, 89, 100)["fliplr"].get<double>() == 0.5);
  CHECK(s.resolve(p, 90, 100)["fliplr"].get<double>() == 0.0);
  CHECK(s.resolve(p, 0, 100)["batch"].get<int>() == 16);
  CHECK(s.resolve(p, 5, 100)["batch"].get<int>() == 40);
  CHECK(s.resolve(p, 50, 100)["batch"].get<int>() == 64);
  CHECK(s.scheduled(p) == std::vector<std::string>{"fliplr", "batch"});
}

TEST_CASE("schedules: a step counted from the end is where Ultralytics closes mosaic, epochs - N") {
  auto s = flip_schema();
  const json p = {{"data", "x"}, {"fliplr", {{"steps", {{"0", 0.5}, {"-10", 0.0}}}}}};
  auto at = [&](int epoch, int epochs) { return s.resolve(p, epoch, epochs)["fliplr"].get<double>(); };
  // 11 epochs: from epoch 1 on.
  CHECK(at(0, 11) == 0.5);
  CHECK(at(1, 11) == 0.0);
  // 10 epochs: -10 is epoch 0, and the key counted from the end wins there: the whole run.
  for (int e = 0; e < 10; ++e) CHECK(at(e, 10) == 0.0);
  // 5 epochs: -10 lies before the run; "0" follows it and holds throughout.
  for (int e = 0; e < 5; ++e) CHECK(at(e, 5) == 0.5);
  // Alone, a key before the run holds from the start.
  const json alone = {{"data", "x"}, {"fliplr", {{"steps", {{"-10", 0.25}}}}}};
  CHECK(s.resolve(alone, 0, 5)["fliplr"].get<double>() == 0.25);
}

TEST_CASE("schedule values are validated like plain values") {
  auto s = flip_schema();
  Diagnostics d;
  s.validate({{"data", "x"}, {"fliplr", {{"steps", {{"0", 2.0}, {"x", 0.1}}}}}}, "p", d);
  CHECK(has(d, "p.fliplr.steps.0", "out of range"));
  CHECK(has(d, "p.fliplr.steps.x", "is not an epoch"));
}

TEST_CASE("Params getters name the parameter on misuse") {
  Params p(json{{"a", 1}, {"s", "x"}}, "stages.n.params");
  CHECK(p.get_int("a") == 1);
  CHECK(p.get_float("a") == 1.0);
  CHECK_THROWS_WITH_AS(p.get_string("a"), doctest::Contains("stages.n.params.a"), Error);
  CHECK_THROWS_WITH_AS(p.get_int("missing"), doctest::Contains("stages.n.params.missing"), Error);
}

TEST_CASE("closest_name suggests near names only") {
  CHECK(closest_name("fliplr", {"flipud", "fliplr"}) == "fliplr");
  CHECK(closest_name("letterbx", {"letterbox", "mosaic"}) == "letterbox");
  CHECK(closest_name("zzzzzz", {"letterbox", "mosaic"}).empty());
}
