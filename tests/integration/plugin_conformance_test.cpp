// Every component of every shipped plugin library, loaded the way a third party's test loads
// its own (yoloflow/testing.h), created from its schema defaults and run through its kind's
// contract on real coco128 samples.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/imgproc.hpp>

#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "support/paths.h"
#include "runtime/plugin/registry.h"
#include "support/plugins.h"
#include "yoloflow/error.h"
#include "yoloflow/testing.h"
#include "yoloflow/testing_torch.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> plugin_libraries() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::plugin_dir())) {
    if (e.path().extension() == ".so") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string report(const std::vector<std::string>& problems) {
  std::string text;
  for (std::size_t i = 0; i < problems.size() && i < 10; ++i) text += "\n  " + problems[i];
  return text;
}

// `s` resized to size x size, its boxes with it (what a batcher receives after letterbox).
Sample square(const Sample& s, int size) {
  Sample out = s;
  cv::resize(s.image, out.image, cv::Size(size, size));
  const float fx = static_cast<float>(size) / s.image.cols, fy = static_cast<float>(size) / s.image.rows;
  for (auto& b : out.boxes) b = Box{b.x1 * fx, b.y1 * fy, b.x2 * fx, b.y2 * fy, b.cls};
  return out;
}

// One black side x side image, no boxes: what the callback contract hands its batch hooks.
Batch black_batch(int side) {
  Batch batch;
  batch.size = 1;
  batch.height = batch.width = side;
  const auto bytes = static_cast<std::size_t>(side) * side * 3;
  batch.pixels = std::shared_ptr<std::uint8_t>(new std::uint8_t[bytes](), std::default_delete<std::uint8_t[]>());
  batch.samples.resize(1);
  return batch;
}

}  // namespace

TEST_CASE("conformance: every shipped component meets its kind's contract") {
  constexpr int kImgsz = 320;
  constexpr int kModelImgsz = 64;  // the tensor kinds: a small input keeps the check fast
  const json data = {{"data", test::coco128_dir() + "/data.yaml"}};
  StageContext context;
  context.imgsz = kImgsz;
  context.device = "cpu";
  const fs::path run_dir = fs::temp_directory_path() / ("yf_conformance_" + std::to_string(::getpid()));
  fs::remove_all(run_dir);

  // Real samples, read by the shipped source through the same harness, and batches of them.
  std::vector<Sample> samples;
  {
    testing::PluginLibrary reader(test::plugin_dir() + "/yoloflow_yolo_dataset.so");
    auto source = reader.make<DataSource>("yolo_dataset", data, context);
    for (std::size_t i = 0; i < 6; ++i) samples.push_back(source->load(i * 9));
  }
  REQUIRE(samples.size() == 6);
  std::vector<Sample> same_size;
  for (const auto& s : samples) same_size.push_back(square(s, kImgsz));
  std::vector<Batch> batches;
  {
    testing::PluginLibrary collate(test::plugin_dir() + "/yoloflow_collate.so");
    auto batcher = collate.make<Batcher>("collate", {{"batch", 2}}, context);
    for (const auto& s : same_size) {
      Sample copy = s;
      copy.image = s.image.clone();
      if (auto b = batcher->add(std::move(copy))) batches.push_back(std::move(*b));
    }
  }
  REQUIRE(batches.size() == 3);
  // The model the loss and the callbacks' tensor hooks are checked with.
  testing::PluginLibrary models(test::plugin_dir() + "/yoloflow_yolo11.so");
  auto model = models.make<Model>("yolo11", {{"nc", 3}}, context);
  // A loss that needs the instances' outlines trains a segmentation head from the batch's masks
  // (the batcher rasterises the outlines): it is checked with YOLO11-seg and mask targets, the
  // first instance of each image on top in its box.
  auto seg_model = models.make<Model>("yolo11", {{"nc", 3}, {"task", "segment"}}, context);
  LossTargets seg_targets = testing::detail::targets(2, 3);
  auto seg_masks = torch::zeros({2, kModelImgsz / 4, kModelImgsz / 4});
  seg_masks.narrow(1, 5, 6).narrow(2, 6, 5).fill_(1);
  seg_targets.tensors["image_masks"] = seg_masks;
  // An evaluator that needs the outlines reads the validation batch's masks: the contract's
  // batch with one plane per image at 1/4, each image's first instance on top in its box.
  Batch seg_batch = testing::detail::evaluation_batch();
  {
    const std::int64_t h = seg_batch.height / 4, w = seg_batch.width / 4;
    std::vector<float> planes(static_cast<std::size_t>(seg_batch.size * h * w), 0.0f);
    for (std::int64_t y = 3; y < 6; ++y) {
      for (std::int64_t x = 3; x < 6; ++x) planes[static_cast<std::size_t>(y * w + x)] = 1.0f;  // image 0, instance 0
    }
    for (std::int64_t y = 4; y < 12; ++y) {
      for (std::int64_t x = 4; x < 12; ++x) planes[static_cast<std::size_t>(h * w + y * w + x)] = 1.0f;  // image 1
    }
    seg_batch.targets["image_masks"] = TargetArray{{seg_batch.size, h, w}, std::move(planes)};
  }

  const auto libraries = plugin_libraries();
  REQUIRE(libraries.size() >= 10);
  int checked = 0;
  std::set<Kind> kinds;
  std::set<std::string> optimizers;
  for (const auto& path : libraries) {
    testing::PluginLibrary library(path);
    CHECK_MESSAGE(!library.components().empty(), path << " registers nothing");
    for (const ComponentInfo& c : library.components()) {
      const std::string label = std::string(kind_name(c.kind)) + " '" + c.name + "' (" + fs::path(path).filename().string() + ")";
      CAPTURE(label);
      // A source reads the dataset; everything else is made from its defaults alone.
      json params = c.schema.find_role(ParamRole::Dataset) != nullptr ? data : json::object();
      // The contract's samples carry keypoints centre, left, right: a left-right flip swaps the last two.
      if (c.schema.find("flip_idx") != nullptr) params["flip_idx"] = {0, 2, 1};
      std::unique_ptr<Component> component, fresh;
      try {
        component.reset(library.create(c.kind, c.name, params, context));
        fresh.reset(library.create(c.kind, c.name, params, context));
      } catch (const std::exception& e) {
        FAIL_CHECK(label << " cannot be made from its schema's defaults: " << e.what());
        continue;
      }
      std::vector<std::string> problems;
      const fs::path own_dir = run_dir / c.name;
      switch (c.kind) {
        case Kind::Source:
          problems = testing::source_contract(static_cast<DataSource&>(*component), kImgsz);
          break;
        case Kind::Augmentation:
          // Every field it declares to keep is checked to move with the pixels.
          problems = testing::augmentation_contract(static_cast<Augmentation&>(*component), samples, kImgsz, 4,
                                                    c.contract.declared ? c.contract.keeps : Fields(Field::Boxes));
          break;
        case Kind::Batcher: {
          // Samples carrying every field it declares to pack, so each target array is checked.
          const Fields keeps = c.contract.declared ? c.contract.keeps : Fields(Field::Boxes);
          std::vector<Sample> annotated;
          for (const auto& s : same_size) annotated.push_back(testing::with_fields(s, keeps));
          problems = testing::batcher_contract(static_cast<Batcher&>(*component), annotated);
          break;
        }
        case Kind::Sink:
          problems = testing::sink_contract(static_cast<Sink&>(*component), batches);
          break;
        case Kind::Model:
          problems = testing::model_contract(static_cast<Model&>(*component), kModelImgsz);
          break;
        case Kind::Loss:
          problems = c.contract.needs.has(Field::Polygons)
                         ? testing::loss_contract(static_cast<Loss&>(*component), *seg_model, kModelImgsz, 2, seg_targets)
                         : testing::loss_contract(static_cast<Loss&>(*component), *model, kModelImgsz);
          break;
        case Kind::Evaluator:
          problems = c.contract.needs.has(Field::Polygons)
                         ? testing::evaluator_contract(static_cast<Evaluator&>(*component), *seg_model, seg_batch)
                         : testing::evaluator_contract(static_cast<Evaluator&>(*component), *model);
          break;
        case Kind::Optimizer:
          problems = testing::optimizer_contract(static_cast<Optimizer&>(*component), static_cast<Optimizer&>(*fresh));
          break;
        case Kind::Precision:
          problems = testing::precision_contract(static_cast<PrecisionStrategy&>(*component),
                                                 static_cast<PrecisionStrategy&>(*fresh));
          break;
        case Kind::Scheduler:
          problems = testing::scheduler_contract(static_cast<Scheduler&>(*component));
          break;
        case Kind::Monitor:
          fs::create_directories(own_dir);
          problems = testing::monitor_contract(static_cast<Monitor&>(*component), own_dir.string());
          break;
        case Kind::Callback: {
          auto& cb = static_cast<Callback&>(*component);
          problems = testing::callback_contract(cb, static_cast<Callback&>(*fresh), batches[0], own_dir.string());
          auto more = testing::callback_tensors_contract(cb, static_cast<Callback&>(*fresh), model->module());
          problems.insert(problems.end(), more.begin(), more.end());
          break;
        }
      }
      CHECK_MESSAGE(problems.empty(), label << ":" << report(problems));
      kinds.insert(c.kind);
      if (c.kind == Kind::Optimizer) optimizers.insert(c.name);
      ++checked;
    }
  }
  fs::remove_all(run_dir);
  // Every kind is shipped, so every contract ran on at least one real component.
  CHECK(kinds.size() == static_cast<std::size_t>(kKindCount));
  // Each of Ultralytics' optimizers that yoloflow ships went through the optimizer contract.
  for (const char* name : {"sgd", "adam", "adamw", "nadam", "radam", "adamax", "rmsprop", "auto"}) {
    CAPTURE(name);
    CHECK(optimizers.count(name) == 1);
  }
  MESSAGE(checked << " components of " << libraries.size() << " plugin libraries checked");
}

TEST_CASE("conformance: the callbacks built into the host meet the callback contract") {
  // ema is registered by the host, not a plugin library: the same contract, made the host's way.
  auto& pm = test::plugins_with("yolo11");
  test::ComponentSetup setup;
  setup.library = "yolo11";
  auto model = test::make_component<Model>(pm, Kind::Model, "yolo11", {{"nc", 2}}, setup);
  int checked = 0;
  for (const auto& name : pm.registry().names(Kind::Callback)) {
    const auto* rc = pm.registry().find(Kind::Callback, name);
    if (rc == nullptr || rc->file != core::kBuiltinFile) continue;
    CAPTURE(name);
    auto a = pm.registry().create_as<Callback>(Kind::Callback, name, name);
    auto b = pm.registry().create_as<Callback>(Kind::Callback, name, name);
    StageContext ctx;
    ctx.node = name;
    const Params defaults(rc->info.schema.resolve(json::object()), "params");
    a->configure(defaults, ctx);
    b->configure(defaults, ctx);
    const Batch batch = black_batch(32);
    const auto dir = fs::temp_directory_path() / ("yf_builtin_cb_" + std::to_string(::getpid()));
    auto problems = testing::callback_contract(*a, *b, batch, dir.string());
    auto more = testing::callback_tensors_contract(*a, *b, model->module());
    problems.insert(problems.end(), more.begin(), more.end());
    fs::remove_all(dir);
    CHECK_MESSAGE(problems.empty(), name << ":" << report(problems));
    ++checked;
  }
  CHECK(checked >= 1);  // ema
}

TEST_CASE("conformance: the harness finds what breaks the contract") {
  // The harness itself: a library that is no plugin, an unknown component, bad parameters.
  CHECK_THROWS_WITH_AS(testing::PluginLibrary(test::plugin_dir() + "/missing.so"),
                       doctest::Contains("cannot load plugin"), yoloflow::Error);
  testing::PluginLibrary flip(test::plugin_dir() + "/yoloflow_flip.so");
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flop"), doctest::Contains("has no augmentation 'flop'"), yoloflow::Error);
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flip", {{"fliplr", 2.0}}), doctest::Contains("params.fliplr"),
                       yoloflow::InvalidInput);
  CHECK_THROWS_WITH_AS(flip.make<Augmentation>("flip", {{"flipud_p", 0.5}}), doctest::Contains("params.flipud_p"),
                       yoloflow::InvalidInput);

  // A source whose boxes leave the image and whose reloads differ is caught.
  struct Broken final : DataSource {
    std::size_t size() const override { return 2; }
    Sample load(std::size_t index) override {
      Sample s;
      s.index = index;
      s.path = "broken.jpg";
      s.image = cv::Mat(10, 10, CV_8UC3, cv::Scalar::all(static_cast<double>(calls++)));
      s.boxes.push_back(Box{5, 5, 20, 8, 0});
      if (index >= 2) throw yoloflow::InvalidInput("out of range");
      return s;
    }
    DatasetInfo info() const override { return {}; }
    std::vector<DataIssue> issues() const override { return {}; }
    int calls = 0;
  } broken;
  const auto problems = testing::source_contract(broken, 320);
  CHECK(problems.size() == 4);  // two samples: each box leaves its image, each reload differs

  // A source whose labels() are not its samples' boxes: one class too many, then a box elsewhere.
  struct WrongLabels final : DataSource {
    std::size_t size() const override { return 2; }
    Sample load(std::size_t index) override {
      if (index >= 2) throw yoloflow::InvalidInput("out of range");
      Sample s;
      s.index = index;
      s.path = "wrong.jpg";
      s.image = cv::Mat(20, 40, CV_8UC3, cv::Scalar::all(60));
      s.boxes.push_back(Box{4, 2, 12, 10, 1});  // normalised: centre (0.2, 0.3), size (0.2, 0.4)
      return s;
    }
    bool labels(std::size_t index, SampleLabels& out) const override {
      out.classes = {1};
      out.boxes = {{0.2f, 0.3f, 0.2f, 0.4f}};
      if (index == 0) out.classes.push_back(2);
      if (index == 1) out.boxes[0][0] = 0.7f;
      return true;
    }
    DatasetInfo info() const override { return {}; }
    std::vector<DataIssue> issues() const override { return {}; }
  } wrong;
  const auto mislabelled = testing::source_contract(wrong, 320);
  INFO(report(mislabelled));
  REQUIRE(mislabelled.size() == 2);
  CHECK(mislabelled[0] == "sample 0: labels() gives 2 classes and 1 boxes where load() gives 1");
  CHECK(mislabelled[1] == "sample 1: labels() box 0 is not load()'s, normalised");

  // An augmentation that pushes boxes out of the image and draws from a generator of its own.
  struct Sloppy final : Augmentation {
    void apply(Sample& s, AugmentContext&) override {
      for (auto& b : s.boxes) b.x2 = static_cast<float>(s.image.cols) + 5.0f;
      s.image.at<cv::Vec3b>(0, 0)[0] = static_cast<unsigned char>(calls++);
    }
    int calls = 0;
  } sloppy;
  Sample one;
  one.path = "one.jpg";
  one.image = cv::Mat(20, 20, CV_8UC3, cv::Scalar::all(50));
  one.boxes.push_back(Box{2, 2, 8, 8, 3});
  const auto found = testing::augmentation_contract(sloppy, {one}, 320, 2);
  CHECK(found.size() == 4);  // per seed: a box leaves the image, another output for the same seed
  CHECK(report(found).find("leaves the 20x20 image") != std::string::npos);
  CHECK(report(found).find("another output for the same seed") != std::string::npos);
}

TEST_CASE("conformance: the contracts of the other kinds find what breaks them") {
  // An optimizer that steps even when told to skip (an fp16 overflow would then corrupt weights).
  struct Careless final : Optimizer {
    void setup(std::vector<ParamGroup> groups, const OptimizerSetup&) override {
      groups_ = std::move(groups);
      for (auto& g : groups_) g.lr = g.initial_lr = 0.1;
    }
    std::vector<ParamGroup>& groups() override { return groups_; }
    void step(const at::Tensor&) override {
      for (auto& g : groups_) {
        for (auto& p : g.params) p.sub_(g.lr * p.grad());
      }
    }
    std::string description() const override { return "careless"; }
    NamedTensors state() const override { return {}; }
    void load_state(const std::map<std::string, at::Tensor>&) override {}
    std::vector<ParamGroup> groups_;
  } careless, careless2;
  const auto opt = testing::optimizer_contract(careless, careless2);
  CHECK(report(opt).find("with skip set changed the parameters") != std::string::npos);

  // A callback that forgets its state on resume.
  struct Forgetful final : Callback {
    void on_epoch_end(const EpochSummary&, const TrainProgress&, TrainControl& control) override {
      ++epochs;
      if (epochs == 2) control.save_checkpoint("../outside.pt");
    }
    json state() const override { return {{"epochs", epochs}}; }
    void load_state(const json&) override {}
    int epochs = 0;
  } forgetful, forgetful2;
  const Batch batch = black_batch(8);
  const auto dir = fs::temp_directory_path() / ("yf_forgetful_" + std::to_string(::getpid()));
  const auto cb = testing::callback_contract(forgetful, forgetful2, batch, dir.string());
  fs::remove_all(dir);
  CHECK(report(cb).find("comes back from load_state() as {\"epochs\":0}") != std::string::npos);
  CHECK(report(cb).find("save_checkpoint(\"../outside.pt\"): not a file name") != std::string::npos);

  // A scheduler whose factor reaches 0 at the last epoch (the lr would stop).
  struct ToZero final : Scheduler {
    double lr_factor(int epoch, int epochs) const override { return 1.0 - static_cast<double>(epoch) / std::max(1, epochs - 1); }
  } to_zero;
  CHECK(report(testing::scheduler_contract(to_zero)).find("lr_factor(1, 2) is 0, not a factor in (0, 100]") != std::string::npos);

  // A model whose head says three strides but which gives two levels.
  struct TwoLevels final : Model {
    TwoLevels() { conv = net.register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4 * 16 + 2, 1))); }
    torch::nn::Module& module() override { return net; }
    HeadDescription head() const override { return {2, 16, {8, 16, 32}}; }
    std::string architecture() const override { return "two_levels"; }
    ModelOutput forward_train(const at::Tensor& x) override {
      return {{conv->forward(torch::avg_pool2d(x, 8)), conv->forward(torch::avg_pool2d(x, 16))}, {}};
    }
    Predictions decode(const ModelOutput&) override { return {}; }
    std::vector<LayerRow> layers() const override { return {LayerRow{}}; }
    void set_activation_checkpointing(bool, bool) override {}
    torch::nn::Module net;
    torch::nn::Conv2d conv{nullptr};
  } two_levels;
  CHECK(report(testing::model_contract(two_levels, 64)).find("forward_train gave 2 levels for 3 strides") != std::string::npos);

  // A monitor that blocks the run.
  struct Slow final : Monitor {
    void on_epoch(const EpochEvent&) override { std::this_thread::sleep_for(std::chrono::milliseconds(80)); }
  } slow;
  CHECK(report(testing::monitor_contract(slow, "", 1, 2)).find("on_epoch(0) took") != std::string::npos);
}
