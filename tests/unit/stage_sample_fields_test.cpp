// The host holds samples to the components' contracts as they go down the chain
// (runtime/graph/stage_sample_loaders.h): an augmentation gets its sample, and the other samples
// it loads, without the fields it does not keep; a sample an augmentation gives back, or the
// source gives, with its instances out of step stops there, naming who gave it. The components
// are the annotated test plugin's (tests/plugins/annotated), loaded as a plugin's tests load it.
#include <doctest/doctest.h>

#include <string>

#include "runtime/graph/stage_sample_loaders.h"
#include "support/paths.h"
#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/testing.h"

using namespace yoloflow;

namespace {

testing::PluginLibrary& annotated() {
  static testing::PluginLibrary lib(test::test_plugin_dir("annotated") + "/yoloflow_test_annotated.so");
  return lib;
}

const Fields kAll = Field::Boxes | Field::Polygons | Field::Keypoints | Field::Masks;

core::ChainFields chain_of(const std::vector<std::string>& augmentations) {
  core::ChainFields fields;
  fields.source = "source 'annotated_source' (stages.source)";
  for (const auto& name : augmentations) fields.keeps.push_back(annotated().info(Kind::Augmentation, name).contract.keeps);
  return fields;
}

}  // namespace

TEST_CASE("an augmentation gets its sample, and the samples it loads, without the fields it does not keep") {
  auto source = annotated().make<DataSource>("annotated_source");
  auto masks_only = annotated().make<Augmentation>("masks_only");
  core::StageSampleLoaders loaders(*source, {masks_only.get()}, 1, 32, 0, nullptr, chain_of({"masks_only"}));
  Sample s = loaders.load_source(0);
  CHECK(fields_of(s) == kAll);  // the source's sample as it gave it
  Rng rng(1);
  // masks_only throws on any field besides boxes and masks, in its sample or the one it loads.
  CHECK_NOTHROW(loaders.apply(s, rng, 1));
  CHECK(fields_of(s) == (Field::Boxes | Field::Masks));
  CHECK(s.masks.size() == 2);
  CHECK(fields_of(loaders.for_stage(0).load(5)) == (Field::Boxes | Field::Masks));

  // An augmentation whose contract is unknown to the loaders keeps boxes only, the default.
  core::StageSampleLoaders bare(*source, {masks_only.get()}, 1, 32, 0);
  Sample t = bare.load_source(0);
  bare.apply(t, rng, 1);
  CHECK(fields_of(t) == Fields(Field::Boxes));
  CHECK(t.boxes.size() == 2);
}

TEST_CASE("an augmentation that gives back instances out of step stops the chain at its stage") {
  auto source = annotated().make<DataSource>("annotated_source");
  auto unsteady = annotated().make<Augmentation>("unsteady_polygons", {{"on", 3}});
  core::StageSampleLoaders loaders(*source, {unsteady.get()}, 1, 32, 0, nullptr, chain_of({"unsteady_polygons"}));
  Rng rng(1);
  Sample fine = loaders.load_source(2);
  loaders.apply(fine, rng, 1);
  CHECK(fields_of(fine) == kAll);
  CHECK(fine.polygons.size() == 2);
  Sample bad = loaders.load_source(3);
  try {
    loaders.apply(bad, rng, 1);
    FAIL("sample 3 came back with 1 polygon for 2 boxes and no error");
  } catch (const core::ChainStageError& e) {
    CHECK(e.stage() == 0);
    CHECK(std::string(e.what()) ==
          "it gave back a sample whose instances do not match: 1 polygons for 2 boxes (each field it keeps, boxes, "
          "polygons, keypoints, masks, holds one entry per box or none: yoloflow/annotations.h selects and moves them "
          "together)");
  }
}

TEST_CASE("a source's sample with instances out of step is refused, naming the source") {
  auto source = annotated().make<DataSource>("annotated_source", {{"mismatch", 2}});
  auto masks_only = annotated().make<Augmentation>("masks_only");
  core::StageSampleLoaders loaders(*source, {masks_only.get()}, 1, 32, 0, nullptr, chain_of({"masks_only"}));
  CHECK_THROWS_WITH_AS(loaders.load_source(2),
                       "source 'annotated_source' (stages.source) gave a sample whose instances do not match: "
                       "1 keypoint sets for 2 boxes",
                       Error);
  // The same sample loaded by an augmentation (masks_only loads the next index, as mosaic loads
  // its other images): the stage that loaded it fails with the source's message.
  Sample one = loaders.load_source(1);
  Rng rng(1);
  try {
    loaders.apply(one, rng, 1);
    FAIL("the source's sample 2 reached masks_only");
  } catch (const core::ChainStageError& e) {
    CHECK(e.stage() == 0);
    CHECK(std::string(e.what()).find("source 'annotated_source' (stages.source) gave a sample whose instances do not "
                                     "match: 1 keypoint sets for 2 boxes") != std::string::npos);
  }
}
