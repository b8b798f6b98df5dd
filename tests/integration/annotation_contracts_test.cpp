// Annotation contracts as a user meets them on the command line: `validate`, `run` and `train`
// refuse a pipeline whose stages drop a field a later stage or the loss needs, before anything is
// built, with one line per stage at its JSON path; a running pipeline gets samples without the
// fields a stage does not keep, stops at an augmentation that leaves its instances out of step
// and skips a source's sample that has them so; `plugins` and `describe` show the contracts.
// The components are the annotated test plugin's (tests/plugins/annotated) and the stretch
// augmentation, which declares nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/coco_subset.h"
#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using test::contains;

namespace {

std::string cli_with_plugins(const std::string& args) {
  return "--plugin-path " + test::test_plugin_dir("annotated") + " --plugin-path " + test::test_plugin_dir("stretch") +
         " " + args;
}

// source -> `middle` stages (JSON members, the first reading "source", the last read by the
// batcher as `last`) -> annotated_batcher -> annotated_sink.
std::string annotated_pipeline(const std::string& source_params, const std::string& middle, const std::string& last,
                               const std::string& sink_params = "") {
  return R"({"epochs": 1, "workers": 2, "stages": {
    "source": {"plugin": "annotated_source", "params": {)" + source_params + R"(}},)" + middle + R"(
    "batch": {"plugin": "annotated_batcher", "input": ")" + last + R"("},
    "sink": {"plugin": "annotated_sink", "input": "batch", "params": {)" + sink_params + R"(}}}})";
}

}  // namespace

TEST_CASE("annotations: validate names each stage that drops a needed field, at its path, with the others") {
  const auto dir = test::temp_dir("annotations-validate");
  test::write_file(dir + "/p.json",
                   annotated_pipeline("", R"(
    "stretch": {"plugin": "stretch", "input": "source"},
    "mosaic": {"plugin": "mosaic", "input": "stretch"},)",
                                      "mosaic", R"("loss": {"plugin": "keypoint_probe"})"));
  const auto r = test::run_cli(cli_with_plugins("validate " + dir + "/p.json stages.source.params.count=0"));
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  const std::string file = dir + "/p.json: ";
  CHECK(contains(r.output, file + "stages.source.params.count: 0 is out of range"));
  CHECK(contains(r.output, file +
                               "stages.stretch.plugin: augmentation 'stretch' drops keypoints (it declares no fields: an "
                               "augmentation keeps boxes by default), which loss 'keypoint_probe' "
                               "(stages.sink.params.loss) needs; use a stage that keeps keypoints or remove this one\n"));
  CHECK(contains(r.output, file + "stages.stretch.plugin: augmentation 'stretch' drops masks"));
  // mosaic keeps keypoints but not masks: it loses only what the sink needs.
  CHECK(contains(r.output, file + "stages.mosaic.plugin: augmentation 'mosaic' drops masks"));
  CHECK(contains(r.output, "which sink 'annotated_sink' (stages.sink) needs; use a stage that keeps masks or remove this one"));
  CHECK_FALSE(contains(r.output, "'mosaic' drops keypoints"));
  CHECK(contains(r.output, "4 problems; nothing was run"));
  test::check_no_internals(r.output);

  // The chain that carries what they need passes.
  test::write_file(dir + "/ok.json", annotated_pipeline("", R"(
    "unsteady": {"plugin": "unsteady_polygons", "input": "source"},)",
                                                        "unsteady", R"("loss": {"plugin": "keypoint_probe"})"));
  const auto ok = test::run_cli(cli_with_plugins("validate " + dir + "/ok.json"));
  INFO(ok.output);
  CHECK(ok.exit_code == kExitOk);
  CHECK(contains(ok.output, "valid pipeline 'ok' (source -> unsteady -> batch -> sink)"));
  test::remove_tree(dir);
}

TEST_CASE("annotations: run and train refuse a chain that drops what the loss needs before anything is built") {
  const auto dir = test::temp_dir("annotations-train");
  test::write_coco128_subset(dir, 4);
  const auto train_pipeline = [](const std::string& middle, const std::string& last) {
    return R"({"imgsz": 64, "stages": {
      "source": {"plugin": "annotated_source"},)" + middle + R"(
      "batch": {"plugin": "annotated_batcher", "input": ")" + last + R"("},
      "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml", "scheduler": {"plugin": "linear"},
                "val_source": {"plugin": "annotated_source"}, "loss": {"plugin": "keypoint_probe"}}}}})";
  };
  test::write_file(dir + "/drop.json", train_pipeline(R"(
      "stretch": {"plugin": "stretch", "input": "source"},)", "stretch"));
  const std::string expected = dir + "/drop.json: stages.stretch.plugin: augmentation 'stretch' drops keypoints (it "
                                     "declares no fields: an augmentation keeps boxes by default), which loss "
                                     "'keypoint_probe' (stages.train.params.loss) needs; use a stage that keeps keypoints "
                                     "or remove this one\n";
  for (const char* command : {"validate", "run", "train"}) {
    CAPTURE(command);
    const std::string run_dir = dir + "/" + command;
    const auto r = test::run_cli(cli_with_plugins(std::string(command) + " " + dir + "/drop.json" +
                                                  (std::string(command) == "validate" ? "" : " --run-dir " + run_dir)));
    INFO(r.output);
    CHECK(r.exit_code == kExitInvalid);
    CHECK(contains(r.output, expected));
    CHECK(test::count(r.output, "stages.stretch.plugin") == 1);  // the batcher keeps keypoints: stretch alone loses them
    CHECK_FALSE(std::filesystem::exists(run_dir));               // nothing was made
  }
  // Without the stage that drops them, the same training pipeline is valid.
  test::write_file(dir + "/ok.json", train_pipeline("", "source"));
  const auto ok = test::run_cli(cli_with_plugins("validate " + dir + "/ok.json"));
  INFO(ok.output);
  CHECK(ok.exit_code == kExitOk);
  test::remove_tree(dir);
}

TEST_CASE("annotations: a running stage gets samples without the fields it does not keep") {
  const auto dir = test::temp_dir("annotations-removed");
  // masks_only refuses any sample, its own or one it loads, with polygons or keypoints, which
  // the source gives; the batcher would pack keypoints if any were left.
  test::write_file(dir + "/p.json", annotated_pipeline("", R"(
    "only": {"plugin": "masks_only", "input": "source"},)", "only"));
  const auto r = test::run_cli(cli_with_plugins("run " + dir + "/p.json --run-dir " + dir + "/run"));
  INFO(r.output);
  CHECK(r.exit_code == kExitOk);
  CHECK(contains(r.output, "annotated_sink: samples=8 boxes=16 targets=boxes,masks\n"));
  test::remove_tree(dir);
}

TEST_CASE("annotations: an augmentation that leaves polygons out of step stops the run, naming it and the sample") {
  const auto dir = test::temp_dir("annotations-unsteady");
  test::write_file(dir + "/p.json", annotated_pipeline("", R"(
    "leak": {"plugin": "unsteady_polygons", "input": "source", "params": {"on": 3}},)", "leak"));
  const auto r = test::run_cli(cli_with_plugins("run " + dir + "/p.json --run-dir " + dir + "/run"));
  INFO(r.output);
  CHECK(r.exit_code == kExitFailure);
  CHECK(contains(r.output, "error: stage 'leak' (augmentation 'unsteady_polygons', " + test::test_plugin_dir("annotated") +
                               "/yoloflow_test_annotated.so) failed on sample 3 (annotated/3.png): it gave back a sample "
                               "whose instances do not match: 1 polygons for 2 boxes (each field it keeps, boxes, "
                               "polygons, keypoints, masks, holds one entry per box or none"));
  test::check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("annotations: a source's sample with instances out of step is skipped, naming the source") {
  const auto dir = test::temp_dir("annotations-source");
  test::write_file(dir + "/p.json", annotated_pipeline(R"("mismatch": 2)", R"(
    "keep": {"plugin": "unsteady_polygons", "input": "source"},)", "keep"));
  const auto r = test::run_cli(cli_with_plugins("run " + dir + "/p.json --run-dir " + dir + "/run"));
  INFO(r.output);
  CHECK(r.exit_code == kExitOk);
  CHECK(contains(r.output, "skipped sample 2: source 'annotated_source' (stages.source) gave a sample whose instances "
                           "do not match: 1 keypoint sets for 2 boxes\n"));
  CHECK(contains(r.output, "annotated_sink: samples=7 boxes=14 targets=boxes,keypoints,masks\n"));
  test::remove_tree(dir);
}

TEST_CASE("annotations: plugins and describe show what each component gives, keeps and needs") {
  const auto listing = test::run_cli(cli_with_plugins("plugins"));
  INFO(listing.output);
  REQUIRE(listing.exit_code == kExitOk);
  const std::string lib = test::test_plugin_dir("annotated") + "/yoloflow_test_annotated.so";
  auto row = [&](const std::string& name) {
    const auto at = listing.output.find("\n" + name + " ");
    REQUIRE_MESSAGE(at != std::string::npos, name << " is not listed");
    return listing.output.substr(at + 1, listing.output.find('\n', at + 1) - at - 1);
  };
  CHECK(contains(row("annotated_source"), lib + "  gives boxes, polygons, keypoints, masks"));
  CHECK(contains(row("box_source"), "gives boxes (the default: it declares none)"));
  CHECK(contains(row("masks_only"), "keeps boxes, masks"));
  CHECK(contains(row("box_batcher"), "keeps boxes (the default: it declares none)"));
  CHECK(contains(row("annotated_sink"), "needs boxes, masks"));
  CHECK(contains(row("keypoint_probe"), "needs boxes, keypoints"));
  CHECK(contains(row("stretch"), "keeps boxes (the default: it declares none)"));

  const auto text = test::run_cli(cli_with_plugins("describe unsteady_polygons"));
  INFO(text.output);
  CHECK(text.exit_code == kExitOk);
  CHECK(contains(text.output, "\n  fields:  keeps boxes, polygons, keypoints, masks\n"));
  const auto markdown = test::run_cli(cli_with_plugins("describe annotated_sink --markdown"));
  INFO(markdown.output);
  CHECK(contains(markdown.output, "Reads batches, gives nothing. Annotation fields: needs boxes, masks.\n"));
  const auto json_out = test::run_cli(cli_with_plugins("describe keypoint_probe --json"));
  INFO(json_out.output);
  const auto j = nlohmann::json::parse(json_out.output);
  CHECK(j["fields"]["needs"] == nlohmann::json::array({"boxes", "keypoints"}));
  CHECK(j["fields"]["declared"] == true);
}
