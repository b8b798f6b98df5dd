// yolo11_segmentation against Ultralytics 8.4.56's v8SegmentationLoss on the same predictions and
// targets (tests/fixtures/ultralytics-8.4.56-seg-loss.pt, made by
// tests/fixtures/make-ultralytics-seg-loss.py with its own code): the loss items and the gradients
// reaching every prediction, with overlapping (per image) and separate (per instance) masks at
// mask ratios 1, 2 and 4; the same numbers whatever the chunk of masks computed at once; the SDK's
// loss contract on a YOLO11-seg model; and what it refuses.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "support/paths.h"
#include "support/plugin_set.h"
#include "support/tensor_fixture.h"
#include "yoloflow/error.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/testing_torch.h"
#include "support/doctest_checks.h"  // last: CHECK is doctest's after LibTorch's headers

using namespace yoloflow;

namespace {

const std::map<std::string, torch::Tensor>& fixture() {
  static const std::map<std::string, torch::Tensor> tensors =
      test::read_tensor_dict(std::string(YOLOFLOW_SOURCE_DIR) + "/tests/fixtures/ultralytics-8.4.56-seg-loss.pt");
  return tensors;
}

const HeadDescription& seg_head() {
  static const HeadDescription head = [] {
    HeadDescription h;
    h.nc = 3;
    h.strides = {8, 16, 32};
    h.task = "segment";
    h.outputs = {{"mask_coefficients", true, 32, ""}, {"prototypes", false, 32, ""}};
    return h;
  }();
  return head;
}

std::unique_ptr<Loss> make_loss(const json& params = json::object()) {
  auto loss = plugin_test::make_component<Loss>(plugin_test::plugins_with("yolo11_segmentation"), Kind::Loss,
                                                "yolo11_segmentation", params);
  loss->setup(seg_head());
  return loss;
}

// [sum, sum |g|, sum g * w], w = sin(k * 0.6180339887 + 0.25): what the fixture keeps of a gradient.
torch::Tensor projection(const torch::Tensor& g) {
  const auto g64 = g.to(torch::kDouble).reshape(-1);
  const auto w = torch::sin(torch::arange(g64.numel(), torch::kDouble) * 0.6180339887 + 0.25);
  return torch::stack({g64.sum(), g64.abs().sum(), (g64 * w).sum()});
}

struct CaseResult {
  torch::Tensor items;
  std::map<std::string, torch::Tensor> grads;  // as the fixture names the predictions
};

// The fixture's predictions as the model gives them, its targets as a batch's, through the loss.
CaseResult run_case(Loss& loss, const std::string& name, const torch::Device& device = torch::kCPU) {
  const auto& f = fixture();
  const auto boxes = f.at("boxes").to(device).clone().requires_grad_(true);    // (B, 64, A)
  const auto scores = f.at("scores").to(device).clone().requires_grad_(true);  // (B, nc, A)
  const auto coefficients = f.at("mask_coefficient").to(device).clone().requires_grad_(true);
  const auto proto = f.at("proto").to(device).clone().requires_grad_(true);
  const auto B = boxes.size(0);
  ModelOutput out;
  const auto all = torch::cat({boxes, scores}, 1);
  std::int64_t begin = 0;
  for (std::int64_t side : {8, 4, 2}) {
    out.levels.push_back(all.narrow(2, begin, side * side).reshape({B, all.size(1), side, side}));
    begin += side * side;
  }
  out.extras["mask_coefficients"] = coefficients;
  out.extras["prototypes"] = proto;
  // Targets padded per image as the host pads them: (B, M, 5) [cls, cx, cy, w, h], rows of an
  // image in label order, padding class -1.
  const auto batch_idx = f.at("batch_idx"), cls = f.at("cls"), bboxes = f.at("bboxes");
  const std::int64_t M = 3;
  auto targets = torch::full({B, M, 5}, -1.0f);
  auto separate = torch::zeros({B, M, 1, 1});
  const auto& masks = f.at(name + ".masks");
  if (name.rfind("separate", 0) == 0) separate = torch::zeros({B, M, masks.size(1), masks.size(2)});
  std::vector<std::int64_t> rows(static_cast<std::size_t>(B), 0);
  for (std::int64_t i = 0; i < batch_idx.size(0); ++i) {
    const auto b = static_cast<std::int64_t>(batch_idx[i].item<float>());
    const auto r = rows[static_cast<std::size_t>(b)]++;
    targets[b][r][0] = cls[i];
    targets[b][r].narrow(0, 1, 4).copy_(bboxes[i]);
    if (name.rfind("separate", 0) == 0) separate[b][r].copy_(masks[i]);
  }
  LossTargets t;
  t.tensors["boxes"] = targets.to(device);
  if (name.rfind("overlap", 0) == 0) {
    t.tensors["image_masks"] = masks.to(device);
  } else {
    t.tensors["masks"] = separate.to(device);
  }
  const LossOutput o = loss.compute(out, t, 1.0);
  o.total.backward();
  return {o.items.cpu(), {{"boxes", boxes.grad().cpu()}, {"scores", scores.grad().cpu()},
                          {"mask_coefficient", coefficients.grad().cpu()}, {"proto", proto.grad().cpu()}}};
}

// Whether this build compiled the loss's CUDA kernels (a CUDA LibTorch and a CUDA compiler).
#ifdef YOLOFLOW_TEST_CUDA_KERNELS
constexpr bool kCudaKernels = true;
#else
constexpr bool kCudaKernels = false;
#endif

// Two computations of one case agree: the items within `rtol`, each gradient within `rtol` and
// `atol` of its largest magnitude (float sums in another order).
void check_same_result(const std::string& name, const CaseResult& a, const CaseResult& b, double rtol, double atol) {
  CHECK(torch::allclose(a.items, b.items, rtol, atol));
  for (const auto& [input, grad] : a.grads) {
    CAPTURE(input);
    const double scale = b.grads.at(input).abs().max().item<double>();
    MESSAGE(name << " " << input << ": max |difference| " << (grad - b.grads.at(input)).abs().max().item<double>()
                 << " of max |gradient| " << scale);
    CHECK(torch::allclose(grad, b.grads.at(input), rtol, atol * scale));
  }
}

const char* const kCases[] = {"overlap_r1", "overlap_r2", "overlap_r4", "separate_r1", "separate_r2", "separate_r4"};

}  // namespace

TEST_CASE("yolo11_segmentation equals Ultralytics' v8SegmentationLoss: items and gradients, both mask layouts, mask ratios 1, 2, 4") {
  auto loss = make_loss();
  const std::vector<std::string> names{"box", "seg", "cls", "dfl", "sem"};
  CHECK(loss->item_names() == names);
  for (const std::string name : kCases) {
    CAPTURE(name);
    const CaseResult r = run_case(*loss, name);
    const auto& want = fixture().at(name + ".loss");
    MESSAGE(name << ": ours " << r.items << " Ultralytics " << want);
    REQUIRE(r.items.sizes() == want.sizes());
    CHECK(torch::allclose(r.items, want, 1e-4, 1e-5));
    CHECK(want[1].item<float>() > 1.0f);  // the mask term is there to compare
    for (const auto& [input, grad] : r.grads) {
      CAPTURE(input);
      const auto ours = projection(grad);
      const auto theirs = fixture().at(name + ".grad." + input).to(torch::kDouble);
      CHECK(torch::allclose(ours, theirs, 1e-4, 1e-6));
    }
  }
  // The two layouts differ where instances overlap, and so do the losses.
  const float overlap_seg = fixture().at("overlap_r1.loss")[1].item<float>();
  const float separate_seg = fixture().at("separate_r1.loss")[1].item<float>();
  CHECK(overlap_seg != separate_seg);
}

TEST_CASE("yolo11_segmentation gives the same loss and gradients whatever the chunk of masks computed at once") {
  // 65,536 values: five of the 30 positive slots a chunk at 64 x 64 masks, three images.
  auto small = make_loss({{"mask_chunk", 65536}});
  auto whole = make_loss();
  for (const std::string name : {"overlap_r1", "separate_r2"}) {
    CAPTURE(name);
    // Chunks change only the order of float sums (the BLAS blocks each size its own way).
    check_same_result(name, run_case(*small, name), run_case(*whole, name), 1e-5, 1e-6);
  }
}

TEST_CASE("yolo11_segmentation mask_backend kernels: refused in one line by a build without CUDA kernels") {
  if (kCudaKernels) {
    CHECK_NOTHROW(make_loss({{"mask_backend", "kernels"}}));
    return;
  }
  CHECK_THROWS_WITH_AS(make_loss({{"mask_backend", "kernels"}}),
                       doctest::Contains(".mask_backend: 'kernels' needs a yoloflow built with a CUDA compiler"),
                       InvalidInput);
}

TEST_CASE("yolo11_segmentation on CUDA: the mask kernels give the tensor path's loss and gradients") {
  if (!torch::cuda::is_available() || !kCudaKernels) {
    MESSAGE("no CUDA device or no CUDA kernels in this build: the kernels are compared on a machine with both");
    return;
  }
  auto kernels = make_loss({{"mask_backend", "kernels"}});
  auto tensor = make_loss();
  for (const std::string name : kCases) {
    CAPTURE(name);
    const CaseResult a = run_case(*kernels, name, torch::kCUDA), b = run_case(*tensor, name, torch::kCUDA);
    MESSAGE(name << ": kernels " << a.items << " tensor path " << b.items);
    check_same_result(name, a, b, 1e-4, 1e-5);
    // And Ultralytics' numbers, as on the CPU.
    CHECK(torch::allclose(a.items, fixture().at(name + ".loss"), 1e-4, 1e-5));
  }
}

TEST_CASE("yolo11_segmentation meets the SDK's loss contract on a YOLO11-seg model and refuses what it cannot train") {
  auto model = plugin_test::make_component<Model>(plugin_test::plugins_with("yolo11"), Kind::Model, "yolo11",
                                                  {{"scale", "n"}, {"task", "segment"}, {"nc", 3}});
  auto loss = plugin_test::make_component<Loss>(plugin_test::plugins_with("yolo11_segmentation"), Kind::Loss,
                                                "yolo11_segmentation", json::object());
  LossTargets targets = testing::detail::targets(2, 3);
  // Per image at 1/4 of 64: the first instance's box filled with 1, the second's with 2.
  auto masks = torch::zeros({2, 16, 16});
  masks.narrow(1, 5, 6).narrow(2, 6, 5).fill_(1);
  masks.narrow(1, 9, 4).narrow(2, 2, 3).fill_(2);
  targets.tensors["image_masks"] = masks;
  std::string problems;
  for (const auto& p : testing::loss_contract(*loss, *model, 64, 2, targets)) problems += p + "\n";
  CHECK_MESSAGE(problems.empty(), problems);

  // A detector's head: nothing to train the masks from.
  HeadDescription detector;
  detector.nc = 3;
  detector.strides = {8, 16, 32};
  try {
    loss->setup(detector);
    FAIL("expected a refusal");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()) == "yolo11_segmentation trains heads with per-anchor 'mask_coefficients' and per-image "
                                   "'prototypes' (a YOLO11-seg model, e.g. yolo11n-seg); the model's 'detect' head has neither");
  }
  // A batch without masks names what it has.
  loss->setup(model->head());
  model->module().train();
  const ModelOutput out = model->forward_train(torch::rand({2, 3, 64, 64}));
  try {
    loss->compute(out, testing::detail::targets(2, 3), 1.0);
    FAIL("expected a refusal");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("the batch has no masks ('image_masks' or 'masks' targets; it has: boxes)") !=
          std::string::npos);
  }
}
