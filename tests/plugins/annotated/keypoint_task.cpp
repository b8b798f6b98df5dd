// A task the host does not know, written as a third party writes one: a model whose head
// describes itself as "pose" with a per-anchor "keypoints" output, and an evaluator for it whose
// columns and fitness the run writes. With the keypoint_probe loss (keypoint_loss.cpp), which
// reads the keypoints output and the batch's keypoint targets, a pipeline trains, validates and
// chooses best.pt for this task with no change to the host.
//
//   keypoint_net   head task "pose": per level (B, 4 * 16 + nc, H, W) from one 1x1 convolution of
//                  the average-pooled image, and "keypoints" (B, 3K, A) from another; decode puts
//                  the keypoints in input pixels around their anchor.
//   keypoint_eval  columns metrics/labelled_keypoints(P) (visible label keypoints per image, from
//                  the batch's "keypoints" targets) and metrics/predicted_keypoints(P) (keypoints
//                  of the kept detections per image, from their "keypoints" rows); fitness the
//                  labelled count. It refuses a head without a "keypoints" output.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "yoloflow/error.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/fields.h"
#include "yoloflow/head_geometry.h"
#include "yoloflow/model.h"
#include "yoloflow/plugin.h"

namespace yoloflow::test_annotated {

namespace {

constexpr int kBins = 16;
const std::vector<std::int64_t> kStrides = {8, 16, 32};

struct KeypointNetModule : torch::nn::Module {
  KeypointNetModule(int nc, int keypoints) {
    boxes = register_module("boxes", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 4 * kBins + nc, 1)));
    points = register_module("points", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 3 * keypoints, 1)));
  }
  torch::nn::Conv2d boxes{nullptr}, points{nullptr};
};

class KeypointNet final : public Model {
 public:
  void configure(const Params& p, const StageContext&) override {
    const int nc = static_cast<int>(p.get_int("nc")), k = static_cast<int>(p.get_int("keypoints"));
    if (net_ && nc == nc_ && k == k_) return;  // architecture unchanged: keep the weights
    nc_ = nc > 0 ? nc : 1;
    k_ = k;
    net_ = std::make_shared<KeypointNetModule>(nc_, k_);
  }
  torch::nn::Module& module() override { return *net_; }
  HeadDescription head() const override {
    HeadDescription h{nc_, kBins, kStrides};
    h.task = "pose";
    h.outputs.push_back({"keypoints", true, 3 * k_, "K x (x, y, visibility) per anchor"});
    return h;
  }
  std::string architecture() const override { return "keypoint_net"; }

  ModelOutput forward_train(const torch::Tensor& images) override {
    ModelOutput out;
    std::vector<torch::Tensor> points;
    for (const auto s : kStrides) {
      const auto pooled = torch::avg_pool2d(images, s);
      out.levels.push_back(net_->boxes->forward(pooled));
      points.push_back(net_->points->forward(pooled).flatten(2));
    }
    out.extras["keypoints"] = torch::cat(points, 2);  // (B, 3K, A)
    return out;
  }

  Predictions decode(const ModelOutput& output) override {
    const auto& levels = output.levels;
    const auto b = levels.at(0).size(0);
    std::vector<torch::Tensor> flat;
    std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
    for (const auto& l : levels) {
      flat.push_back(l.to(torch::kFloat).flatten(2));
      sizes.emplace_back(l.size(2), l.size(3));
    }
    const auto x = torch::cat(flat, 2);  // (B, 64 + nc, A)
    const auto a = x.size(2);
    const auto grid = head_geometry::anchor_grid(sizes, kStrides, x.options());
    // DFL: the expectation of each side's bins, in cells.
    const auto bins = x.narrow(1, 0, 4 * kBins).reshape({b, 4, kBins, a}).softmax(2);
    const auto distances = (bins * torch::arange(kBins, x.options()).view({1, 1, kBins, 1})).sum(2).transpose(1, 2);
    Predictions p;
    p.boxes = head_geometry::distances_to_boxes(distances, grid.points.unsqueeze(0)) * grid.strides.unsqueeze(0);
    p.scores = x.narrow(1, 4 * kBins, nc_).sigmoid().transpose(1, 2).contiguous();
    // Keypoints: offsets from the anchor in cells, visibility through a sigmoid.
    const auto raw = output.extra("keypoints").to(torch::kFloat).transpose(1, 2).reshape({b, a, k_, 3});
    const auto xy = (raw.narrow(3, 0, 2) + grid.points.view({1, a, 1, 2})) * grid.strides.view({1, a, 1, 1});
    p.extras["keypoints"] = torch::cat({xy, raw.narrow(3, 2, 1).sigmoid()}, 3).reshape({b, a, 3 * k_});
    return p;
  }

  std::vector<LayerRow> layers() const override {
    std::int64_t params = 0;
    for (const auto& t : net_->parameters()) params += t.numel();
    return {LayerRow{0, "-1", 1, "Conv", "[3, 1x1]", params}};
  }
  void set_activation_checkpointing(bool, bool) override {}

 private:
  int nc_ = 0, k_ = 3;
  std::shared_ptr<KeypointNetModule> net_;
};

class KeypointEval final : public Evaluator {
 public:
  void setup(const HeadDescription& head) override {
    const HeadOutput* o = head.output("keypoints");
    if (o == nullptr || !o->per_anchor || o->channels % 3 != 0) {
      throw InvalidInput("keypoint_eval evaluates heads with a per-anchor 'keypoints' output (K x 3 channels); the model's '" +
                  head.task + "' head has none");
    }
    k_ = o->channels / 3;
    nc_ = head.nc;
  }
  std::vector<std::string> columns() const override {
    return {"metrics/labelled_keypoints(P)", "metrics/predicted_keypoints(P)"};
  }
  std::vector<MetricColumn> table() const override {
    return {{"labelled", "Labelled", "labelled", true}, {"predicted", "Predicted", "predicted", false}};
  }
  void reset() override {
    images_ = 0;
    labelled_ = predicted_ = 0;
    per_class_.assign(static_cast<std::size_t>(nc_), {});
  }
  void add_batch(const Batch& batch, const std::vector<ImagePredictions>& predictions) override {
    images_ += batch.size;
    const auto& boxes = batch.boxes().values;  // (N, 6)
    const TargetArray& keypoints = batch.target("keypoints");
    const std::size_t per_row = static_cast<std::size_t>(keypoints.row_size());
    std::vector<std::vector<char>> seen(per_class_.size(), std::vector<char>(static_cast<std::size_t>(batch.size), 0));
    for (std::size_t i = 0; i * 6 < boxes.size(); ++i) {
      double visible = 0;
      for (std::size_t j = 2; j < per_row; j += 3) visible += keypoints.values[i * per_row + j] > 0 ? 1 : 0;
      labelled_ += visible;
      const auto cls = static_cast<std::size_t>(boxes[i * 6 + 1]);
      const auto image = static_cast<std::size_t>(boxes[i * 6]);
      if (cls < per_class_.size()) {
        per_class_[cls].instances += 1;
        per_class_[cls].labelled += visible;
        if (!seen[cls][image]) per_class_[cls].images += 1;
        seen[cls][image] = 1;
      }
    }
    for (const auto& p : predictions) {
      const auto& k = p.extras.at("keypoints");
      if (k.dim() != 2 || k.size(0) != p.boxes.size(0) || k.size(1) != 3 * k_) {
        throw Error("keypoint_eval: the predictions' keypoints are not one row of " + std::to_string(3 * k_) +
                    " per detection");
      }
      predicted_ += static_cast<double>(k.size(0) * k_);
    }
  }
  Evaluation compute() override {
    const double images = std::max<std::int64_t>(images_, 1);
    Evaluation e;
    e.columns = {{"metrics/labelled_keypoints(P)", labelled_ / images}, {"metrics/predicted_keypoints(P)", predicted_ / images}};
    e.fitness = labelled_ / images;
    e.images = static_cast<int>(images_);
    e.all = {labelled_ / images, predicted_ / images};
    for (std::size_t c = 0; c < per_class_.size(); ++c) {
      const auto& s = per_class_[c];
      if (s.instances == 0) continue;
      e.instances += s.instances;
      e.per_class.push_back({static_cast<int>(c), s.images, s.instances, {s.labelled / std::max(s.images, 1), 0.0}});
    }
    return e;
  }

 private:
  struct ClassCount {
    int images = 0, instances = 0;
    double labelled = 0;
  };
  int k_ = 0, nc_ = 0;
  std::int64_t images_ = 0;
  double labelled_ = 0, predicted_ = 0;
  std::vector<ClassCount> per_class_;
};

}  // namespace

void register_keypoint_task(Registrar& r) {
  Schema model;
  model.add_int("nc", 0).min(0).doc("Classes (0: the dataset's).");
  model.add_int("keypoints", 3).range(1, 64).doc("Keypoints per instance.");
  r.add_model<KeypointNet>("keypoint_net", std::move(model),
                           "A 'pose' head of two 1x1 convolutions: boxes and classes, and K keypoints per anchor (test plugin).");
  r.add_evaluator<KeypointEval>("keypoint_eval", Schema(),
                                "Visible label keypoints and predicted keypoints per image; fitness the labelled count "
                                "(test plugin).",
                                needs(Field::Boxes | Field::Keypoints));
}

}  // namespace yoloflow::test_annotated
