// A task the host does not know, from plugins alone (tests/plugins/annotated): a model whose
// head describes itself as "pose" with a per-anchor keypoints output, a loss that reads that
// output and the batch's keypoint targets (padded per image, as loss.h says), and an evaluator
// whose columns, fitness and table the run writes as they are given. The host checks what each
// part says of the others before the first step: a loss or an evaluator that cannot serve the
// head is refused naming itself.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "runtime/run/results_csv.h"
#include "training/components/guarded_components.h"
#include "support/coco_subset.h"
#include "support/output_checks.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"
#include "yoloflow/testing_torch.h"

using namespace yoloflow;
using test::contains;

namespace {

std::string with_annotated(const std::string& args) {
  return "--plugin-path " + test::test_plugin_dir("annotated") + " " + args;
}

// Two epochs at 64 px on four synthetic images of two instances, each with three visible
// keypoints, training `model` with `loss` and validating with `evaluator` (JSON members).
std::string keypoint_pipeline(const std::string& model = R"("model": {"plugin": "keypoint_net"})",
                              const std::string& loss = R"("loss": {"plugin": "keypoint_probe"})") {
  return R"({"imgsz": 64, "epochs": 2, "device": "cpu", "stages": {
    "source": {"plugin": "annotated_source", "params": {"count": 4, "size": 64}},
    "batch": {"plugin": "annotated_batcher", "input": "source", "params": {"batch": 2}},
    "train": {"plugin": "train", "input": "batch", "params": {"data": "data.yaml", "scheduler": {"plugin": "linear"},
              "val_source": {"plugin": "annotated_source", "params": {"count": 4, "size": 64}}, "val_batch": 2,
              )" + model + ", " + loss + R"(, "evaluator": {"plugin": "keypoint_eval"}}}}})";
}

}  // namespace

TEST_CASE("task plugins: a pose-like model, loss and evaluator train, validate and pick best.pt with no host change") {
  const auto dir = test::temp_dir("task-plugins");
  test::write_coco128_subset(dir, 4);  // data.yaml: the class names
  test::write_file(dir + "/pose.json", keypoint_pipeline());
  const std::string run_dir = dir + "/run";
  const auto r = test::run_cli(with_annotated("train " + dir + "/pose.json --run-dir " + run_dir));
  INFO(r.output);
  REQUIRE(r.exit_code == kExitOk);

  core::ResultsCsv csv(run_dir + "/results.csv");
  csv.load();
  // The leading columns in Ultralytics' order, made of the loss's names and the evaluator's columns.
  const std::vector<std::string> want = {"epoch", "time", "train/square_loss", "train/visible_loss",
                                         "metrics/labelled_keypoints(P)", "metrics/predicted_keypoints(P)",
                                         "val/square_loss", "val/visible_loss", "lr/pg0", "lr/pg1", "lr/pg2"};
  REQUIRE(csv.columns().size() > want.size());
  CHECK(std::vector<std::string>(csv.columns().begin(), csv.columns().begin() + want.size()) == want);
  for (const char* detection : {"metrics/mAP50-95(B)", "train/box_loss"}) {
    CHECK(std::find(csv.columns().begin(), csv.columns().end(), detection) == csv.columns().end());
  }
  REQUIRE(csv.rows().size() == 2);
  for (const auto& row : csv.rows()) {
    // Every image's 2 x 3 visible keypoints reached the loss, in training and in validation,
    // and the evaluator, through the batch's "keypoints" targets.
    CHECK(row.at("train/visible_loss") == doctest::Approx(6.0));
    CHECK(row.at("val/visible_loss") == doctest::Approx(6.0));
    CHECK(row.at("metrics/labelled_keypoints(P)") == doctest::Approx(6.0));
    CHECK(row.at("fitness") == doctest::Approx(6.0));  // the evaluator's fitness, written as given
    // Three keypoints for each kept detection: the predictions' keypoint rows followed NMS.
    const double predicted = row.at("metrics/predicted_keypoints(P)");
    CHECK(predicted >= 0);
    CHECK(std::fmod(predicted * 4, 3.0) == doctest::Approx(0.0));
  }
  CHECK(std::filesystem::exists(run_dir + "/weights/best.pt"));  // chosen by that fitness
  // The closing line shows the evaluator's values by its own labels.
  CHECK(contains(r.output, "final validation: labelled 6.0000  predicted "));
  CHECK(contains(r.output, ", labelled 6.0000; then validation"));  // each epoch's headline
  test::remove_tree(dir);
}

TEST_CASE("task plugins: the pose-like model, loss and evaluator meet the SDK's contracts, given keypoint targets") {
  testing::PluginLibrary lib(test::test_plugin_dir("annotated") + "/yoloflow_test_annotated.so");
  auto model = lib.make<Model>("keypoint_net", {{"nc", 2}});
  std::string problems;
  for (const auto& p : testing::model_contract(*model, 64)) problems += p + "\n";
  // The loss reads keypoint targets: two instances per image with three keypoints each, as
  // LossTargets pads them.
  LossTargets targets = testing::detail::targets(2, 2);
  targets.tensors["keypoints"] = torch::rand({2, 3, 3, 3});
  auto loss = lib.make<Loss>("keypoint_probe");
  for (const auto& p : testing::loss_contract(*loss, *model, 64, 2, targets)) problems += p + "\n";
  // The evaluator reads the batch's keypoints beside its boxes.
  Batch batch = testing::detail::evaluation_batch();
  batch.targets[targets::kKeypoints] = TargetArray{{3, 3, 3}, std::vector<float>(27, 0.5f)};
  auto evaluator = lib.make<Evaluator>("keypoint_eval");
  for (const auto& p : testing::evaluator_contract(*evaluator, *model, batch)) problems += p + "\n";
  CHECK_MESSAGE(problems.empty(), problems);
  // And the evaluator's own numbers: 9 visible keypoints over 2 images, 3 per perfect prediction.
  evaluator->setup(model->head());
  evaluator->reset();
  evaluator->add_batch(batch, testing::detail::perfect_predictions(batch, model->head()));
  const Evaluation e = evaluator->compute();
  CHECK(e.columns.at("metrics/labelled_keypoints(P)") == doctest::Approx(4.5));
  CHECK(e.columns.at("metrics/predicted_keypoints(P)") == doctest::Approx(4.5));
  CHECK(e.fitness == doctest::Approx(4.5));

  // A model whose outputs are not what its head says is found out.
  struct Undescribed final : Model {
    torch::nn::Module& module() override { return inner->module(); }
    HeadDescription head() const override { return inner->head(); }
    std::string architecture() const override { return "undescribed"; }
    ModelOutput forward_train(const at::Tensor& x) override {
      ModelOutput o = inner->forward_train(x);
      o.extras["angle"] = o.extras.at("keypoints").narrow(1, 0, 1);
      return o;
    }
    Predictions decode(const ModelOutput& o) override { return inner->decode(o); }
    std::vector<LayerRow> layers() const override { return inner->layers(); }
    void set_activation_checkpointing(bool, bool) override {}
    Model* inner = nullptr;
  } undescribed;
  undescribed.inner = model.get();
  bool found = false;
  for (const auto& p : testing::model_contract(undescribed, 64)) {
    found |= p == "forward_train gave output 'angle', which head() does not list";
  }
  CHECK(found);
}

TEST_CASE("task plugins: an evaluator whose results break what it declared is found out by the contract and the host alike") {
  testing::PluginLibrary lib(test::test_plugin_dir("annotated") + "/yoloflow_test_annotated.so");
  auto model = lib.make<Model>("keypoint_net", {{"nc", 2}});
  Batch batch = testing::detail::evaluation_batch();
  batch.targets[targets::kKeypoints] = TargetArray{{3, 3, 3}, std::vector<float>(27, 0.5f)};
  // keypoint_eval with one fault in what compute() gives.
  enum class Fault { MissingColumn, ExtraColumn, NanValue, NanFitness, ShortTableRow };
  struct Lying final : Evaluator {
    Lying(std::unique_ptr<Evaluator> e, Fault f) : inner(std::move(e)), fault(f) {}
    void setup(const HeadDescription& head) override { inner->setup(head); }
    std::vector<std::string> columns() const override { return inner->columns(); }
    std::vector<MetricColumn> table() const override { return inner->table(); }
    void reset() override { inner->reset(); }
    void add_batch(const Batch& b, const std::vector<ImagePredictions>& p) override { inner->add_batch(b, p); }
    Evaluation compute() override {
      Evaluation e = inner->compute();
      switch (fault) {
        case Fault::MissingColumn: e.columns.erase("metrics/predicted_keypoints(P)"); break;
        case Fault::ExtraColumn: e.columns["metrics/mAP50(B)"] = 0.5; break;
        case Fault::NanValue: e.columns["metrics/labelled_keypoints(P)"] = std::nan(""); break;
        case Fault::NanFitness: e.fitness = std::nan(""); break;
        case Fault::ShortTableRow: e.all.pop_back(); break;
      }
      return e;
    }
    std::unique_ptr<Evaluator> inner;
    Fault fault;
  };
  const std::pair<Fault, std::string> cases[] = {
      {Fault::MissingColumn, "gave no value for its column 'metrics/predicted_keypoints(P)'"},
      {Fault::ExtraColumn, "gave a value for 'metrics/mAP50(B)', which columns() does not list"},
      {Fault::NanValue, "gave its column 'metrics/labelled_keypoints(P)' a value that is not finite"},
      {Fault::NanFitness, "gave a fitness that is not finite"},
      {Fault::ShortTableRow, "gave 1 values for the table's 2 columns"}};
  for (const auto& [fault, line] : cases) {
    CAPTURE(line);
    // The plugin author's contract.
    Lying lying(lib.make<Evaluator>("keypoint_eval"), fault);
    bool found = false;
    for (const auto& p : testing::evaluator_contract(lying, *model, batch)) found |= contains(p, "compute " + line);
    CHECK(found);
    // The host, holding it as it holds a pipeline's evaluator: the same words, naming it.
    auto guarded = core::guard_component(std::make_unique<Lying>(lib.make<Evaluator>("keypoint_eval"), fault),
                                         core::ComponentOrigin{Kind::Evaluator, "keypoint_eval", "yoloflow_test_annotated.so",
                                                               "stages.train.params.evaluator"});
    guarded->setup(model->head());
    guarded->reset();
    guarded->add_batch(batch, testing::detail::perfect_predictions(batch, model->head()));
    try {
      guarded->compute();
      FAIL("the host took the evaluation");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "stages.train.params.evaluator (evaluator 'keypoint_eval', yoloflow_test_annotated.so): compute " + line);
    }
  }

  // matched() whose families break what the plots read: a path for a name, lengths that differ,
  // labels the batch does not have.
  struct Mismatched final : Evaluator {
    explicit Mismatched(std::unique_ptr<Evaluator> e) : inner(std::move(e)) {}
    void setup(const HeadDescription& head) override { inner->setup(head); }
    std::vector<std::string> columns() const override { return inner->columns(); }
    std::vector<MetricColumn> table() const override { return inner->table(); }
    void reset() override { inner->reset(); }
    void add_batch(const Batch& b, const std::vector<ImagePredictions>& p) override { inner->add_batch(b, p); }
    Evaluation compute() override { return inner->compute(); }
    std::vector<MatchedDetections> matched() const override {
      MatchedDetections f;
      f.family = "../Pose";
      f.scores = {0.9f, 0.8f};
      f.classes = {0};
      f.correct = {1, 0};
      f.label_classes = {0, 1, 0, 1, 1, 1, 1};
      return {f};
    }
    std::unique_ptr<Evaluator> inner;
  } mismatched(lib.make<Evaluator>("keypoint_eval"));
  std::string found;
  for (const auto& p : testing::evaluator_contract(mismatched, *model, batch)) found += p + "\n";
  CHECK(contains(found, "matched(): a family named '../Pose' (letters and digits: it names plot files)"));
  CHECK(contains(found, "matched(): family ../Pose has 2 scores, 1 classes and 2 flags: one of each per detection"));
  CHECK(contains(found, "matched(): family ../Pose has 7 labels where the evaluation counts 3 instances"));
}

TEST_CASE("task plugins: a loss or an evaluator that cannot serve the model's head is refused naming itself") {
  const auto dir = test::temp_dir("task-refusals");
  test::write_coco128_subset(dir, 4);
  // `train` of the pipeline `name` exits invalid, naming the component at `path` and its reason.
  auto check_refused = [&](const std::string& name, const std::string& pipeline, const std::string& path,
                           const std::string& reason) {
    CAPTURE(name);
    test::write_file(dir + "/" + name + ".json", pipeline);
    const auto r = test::run_cli(with_annotated("train " + dir + "/" + name + ".json --run-dir " + dir + "/" + name));
    INFO(r.output);
    CHECK(r.exit_code == kExitInvalid);
    CHECK(contains(r.output, path));
    CHECK(contains(r.output, reason));
    test::check_no_internals(r.output);
  };
  // The detection loss would leave the keypoints untrained.
  check_refused("loss", keypoint_pipeline(R"("model": {"plugin": "keypoint_net"})", R"("loss": {"plugin": "yolo11_detection"})"),
                "stages.train.params.loss",
                "yolo11_detection trains boxes and classes only, but the model's 'pose' head also gives 'keypoints': "
                "choose a loss for the 'pose' task");
  // A keypoint evaluator for a detector.
  check_refused("eval",
                keypoint_pipeline(R"("model": {"plugin": "yolo11", "params": {"scale": "n"}})",
                                  R"("loss": {"plugin": "yolo11_detection"})"),
                "stages.train.params.evaluator",
                "keypoint_eval evaluates heads with a per-anchor 'keypoints' output (K x 3 channels); the model's "
                "'detect' head has none");
  // A validation batcher that packs boxes only: refused before anything runs, at its path, for
  // the loss and the evaluator that read keypoints from the validation batches.
  test::write_file(dir + "/val.json", keypoint_pipeline(R"("model": {"plugin": "keypoint_net"}, "val_batcher": {"plugin": "box_batcher"})"));
  test::CliResult r;
  for (const char* command : {"validate", "train"}) {
    CAPTURE(command);
    r = test::run_cli(with_annotated(std::string(command) + " " + dir + "/val.json" +
                                     (std::string(command) == "train" ? " --run-dir " + dir + "/val" : "")));
    INFO(r.output);
    CHECK(r.exit_code == kExitInvalid);
    CHECK(contains(r.output, dir + "/val.json: stages.train.params.val_batcher.plugin: batcher 'box_batcher' packs boxes "
                             "(it declares no fields: a batcher keeps boxes by default), not keypoints, which loss "
                             "'keypoint_probe' (stages.train.params.loss) and evaluator 'keypoint_eval' "
                             "(stages.train.params.evaluator) need; use a batcher that keeps keypoints"));
    CHECK_FALSE(std::filesystem::exists(dir + "/val"));
  }
  // The training chain is not the evaluator's: a training batcher that drops keypoints is named
  // for the loss alone.
  test::write_file(dir + "/train.json", keypoint_pipeline().replace(keypoint_pipeline().find("annotated_batcher"),
                                                                     std::string("annotated_batcher").size(), "box_batcher"));
  r = test::run_cli(with_annotated("validate " + dir + "/train.json"));
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, "stages.batch.plugin: batcher 'box_batcher' packs boxes (it declares no fields: a batcher "
                           "keeps boxes by default), not keypoints, which loss 'keypoint_probe' (stages.train.params.loss) "
                           "needs; use a batcher that keeps keypoints"));
  CHECK_FALSE(contains(r.output, "evaluator 'keypoint_eval' (stages.train.params.evaluator) need"));
  // `plugins` lists the evaluator kind with the built-in one and the plugin's.
  const auto listed = test::run_cli(with_annotated("plugins"));
  CHECK(contains(listed.output, "keypoint_eval"));
  CHECK(contains(listed.output, "evaluator"));
  test::remove_tree(dir);
}
