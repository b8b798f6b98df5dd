// The annotation fields along a pipeline's chain (runtime/pipeline/annotation_flow.h): every
// stage that loses a field a later stage, or a component a stage names, needs is one diagnostic
// at its own JSON path, all of them at once, beside the other problems of the pipeline. The
// components are the annotated test plugin's (tests/plugins/annotated) and the stretch
// augmentation, which declares nothing.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/pipeline/annotation_flow.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "runtime/plugin/plugin_manager.h"
#include "runtime/plugin/stage_flow.h"
#include "support/paths.h"

using namespace yoloflow;

namespace {

core::PluginManager& plugins() {
  static core::PluginManager* pm = [] {
    auto* m = new core::PluginManager();
    m->load(test::test_plugin_dir("annotated") + "/yoloflow_test_annotated.so");
    m->load(test::test_plugin_dir("stretch") + "/yoloflow_test_stretch.so");
    return m;
  }();
  return *pm;
}

struct Stage {
  std::string name;
  Kind kind;
  std::string plugin;
  json params = json::object();
};

// The diagnostics of `chain` (source first, sink last), as pipeline validation passes it.
Diagnostics flow(const std::vector<Stage>& chain) {
  const auto& registry = plugins().registry();
  std::vector<json> nodes;
  for (const auto& s : chain) nodes.push_back({{"plugin", s.plugin}, {"params", s.params}});
  std::vector<core::TopologyStage> stages;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const auto* rc = registry.find(chain[i].kind, chain[i].plugin);
    REQUIRE_MESSAGE(rc != nullptr, chain[i].plugin << " is not loaded");
    stages.push_back({chain[i].name, &nodes[i], &rc->info});
  }
  Diagnostics out;
  core::check_annotation_flow(stages, registry, out);
  return out;
}

std::string text(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += x.path + ": " + x.message + "\n";
  return out;
}

const json kKeypointLoss = {{"loss", {{"plugin", "keypoint_probe"}}}};

}  // namespace

TEST_CASE("annotation flow: every stage that drops a needed field is named at once, with who needs it") {
  const auto d = flow({{"source", Kind::Source, "annotated_source"},
                       {"stretch", Kind::Augmentation, "stretch"},
                       {"again", Kind::Augmentation, "stretch"},
                       {"batch", Kind::Batcher, "annotated_batcher"},
                       {"sink", Kind::Sink, "annotated_sink", kKeypointLoss}});
  INFO(text(d));
  // Two fields, two stages: removing one stretch leaves the other dropping both.
  REQUIRE(d.size() == 4);
  CHECK(d[0].path == "stages.stretch.plugin");
  CHECK(d[0].message ==
        "augmentation 'stretch' drops keypoints (it declares no fields: an augmentation keeps boxes by default), "
        "which loss 'keypoint_probe' (stages.sink.params.loss) needs; use a stage that keeps keypoints or remove this one");
  CHECK(d[1].path == "stages.stretch.plugin");
  CHECK(d[1].message ==
        "augmentation 'stretch' drops masks (it declares no fields: an augmentation keeps boxes by default), "
        "which sink 'annotated_sink' (stages.sink) needs; use a stage that keeps masks or remove this one");
  CHECK(d[2].path == "stages.again.plugin");
  CHECK(d[2].message.find("drops keypoints") != std::string::npos);
  CHECK(d[3].path == "stages.again.plugin");
  CHECK(d[3].message.find("drops masks") != std::string::npos);
}

TEST_CASE("annotation flow: a chain that carries every needed field passes") {
  const auto d = flow({{"source", Kind::Source, "annotated_source"},
                       {"unsteady", Kind::Augmentation, "unsteady_polygons"},
                       {"batch", Kind::Batcher, "annotated_batcher"},
                       {"sink", Kind::Sink, "annotated_sink", kKeypointLoss}});
  INFO(text(d));
  CHECK(d.empty());
  // Without augmentations too.
  CHECK(flow({{"source", Kind::Source, "annotated_source"},
              {"batch", Kind::Batcher, "annotated_batcher"},
              {"sink", Kind::Sink, "annotated_sink"}})
            .empty());
}

TEST_CASE("annotation flow: a source that never gives a needed field is named with what it gives") {
  const auto d = flow({{"source", Kind::Source, "box_source"},
                       {"batch", Kind::Batcher, "annotated_batcher"},
                       {"sink", Kind::Sink, "annotated_sink"}});
  INFO(text(d));
  REQUIRE(d.size() == 1);
  CHECK(d[0].path == "stages.source.plugin");
  CHECK(d[0].message ==
        "source 'box_source' gives boxes (it declares no fields: a source gives boxes by default), not masks, which "
        "sink 'annotated_sink' (stages.sink) needs; use a source that gives masks");
  // A stage after it that would drop the field too is named as well: changing the source alone
  // would not do.
  const auto both = flow({{"source", Kind::Source, "box_source"},
                          {"stretch", Kind::Augmentation, "stretch"},
                          {"batch", Kind::Batcher, "annotated_batcher"},
                          {"sink", Kind::Sink, "annotated_sink"}});
  INFO(text(both));
  REQUIRE(both.size() == 2);
  CHECK(both[0].path == "stages.source.plugin");
  CHECK(both[1].path == "stages.stretch.plugin");
  CHECK(both[1].message.find("augmentation 'stretch' drops masks") == 0);
}

TEST_CASE("annotation flow: a batcher that does not pack a needed field is named with what it packs") {
  const auto d = flow({{"source", Kind::Source, "annotated_source"},
                       {"batch", Kind::Batcher, "box_batcher"},
                       {"sink", Kind::Sink, "annotated_sink", kKeypointLoss}});
  INFO(text(d));
  REQUIRE(d.size() == 2);
  CHECK(d[0].path == "stages.batch.plugin");
  CHECK(d[0].message ==
        "batcher 'box_batcher' packs boxes (it declares no fields: a batcher keeps boxes by default), not keypoints, "
        "which loss 'keypoint_probe' (stages.sink.params.loss) needs; use a batcher that keeps keypoints");
  CHECK(d[1].path == "stages.batch.plugin");
  CHECK(d[1].message.find("not masks, which sink 'annotated_sink' (stages.sink) needs") != std::string::npos);
}

TEST_CASE("annotation flow: components that declare nothing get their kind's default") {
  const auto& registry = plugins().registry();
  const auto& stretch = registry.find(Kind::Augmentation, "stretch")->info;
  CHECK(core::annotation_contract(stretch).keeps == Fields(Field::Boxes));
  CHECK(core::annotation_contract_text(stretch) == "keeps boxes (the default: it declares none)");
  CHECK(core::annotation_contract(registry.find(Kind::Source, "box_source")->info).gives == Fields(Field::Boxes));
  CHECK(core::annotation_contract_text(registry.find(Kind::Source, "annotated_source")->info) ==
        "gives boxes, polygons, keypoints, masks");
  CHECK(core::annotation_contract_text(registry.find(Kind::Loss, "keypoint_probe")->info) == "needs boxes, keypoints");
  CHECK(core::annotation_contract_text(registry.find(Kind::Sink, "annotated_sink")->info) == "needs boxes, masks");
}

TEST_CASE("annotation flow: its problems come with the pipeline's others, and a valid pipeline resolves") {
  const std::string stages =
      R"("source": {"plugin": "annotated_source"},
         "stretch": {"plugin": "stretch", "input": "source"},
         "batch": {"plugin": "annotated_batcher", "input": "stretch", "params": {"batch": 0}},
         "sink": {"plugin": "annotated_sink", "input": "batch"})";
  const auto r = core::parse_pipeline("{\"stages\": {" + stages + "}}", "/data", {}, plugins().registry());
  const std::string all = core::format_diagnostics(r.diagnostics, "p.json");
  INFO(all);
  REQUIRE_FALSE(r.ok());
  CHECK(all.find("p.json: stages.batch.params.batch: 0 is out of range") != std::string::npos);
  CHECK(all.find("p.json: stages.stretch.plugin: augmentation 'stretch' drops masks") != std::string::npos);

  const auto ok = core::parse_pipeline(
      R"({"stages": {"source": {"plugin": "annotated_source"},
                     "batch": {"plugin": "annotated_batcher", "input": "source"},
                     "sink": {"plugin": "annotated_sink", "input": "batch", "params": {"loss": {"plugin": "keypoint_probe"}}}}})",
      "/data", {}, plugins().registry());
  INFO(core::format_diagnostics(ok.diagnostics, "ok.json"));
  CHECK(ok.ok());
}
