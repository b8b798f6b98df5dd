// `yoloflow predict` as a user runs it after `yoloflow train`: a YOLO11n overfit on a few
// coco128 images finds their labelled objects again in the original images (pixels mapped
// back through the letterbox), and the output folder holds what Ultralytics' predict writes.
// Also: what checkpoints now say about their model, and the command's errors.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>

#include "training/checkpoint/checkpoint_model.h"
#include "training/predict/predictor.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#ifdef YOLOFLOW_TEST_EXPORT
#include <onnx/onnx_pb.h>
#include <opencv2/dnn.hpp>

#include <opencv2/imgproc.hpp>

#include "training/detect/nms.h"
#include "support/onnx_torch_eval.h"
#endif
#include "support/train_pipeline.h"
#include "training/checkpoint/checkpoint.h"
#include "runtime/run/results_csv.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A zebra and a dog (one large object each, non-square images: the letterbox pads them).
const char* const kImageNames[] = {"000000000034.jpg", "000000000042.jpg"};
// The overfit run below learns one image's object or the other depending on float rounding:
// OpenBLAS's AVX-512 kernels (SkylakeX) round its sums otherwise than its AVX2 ones and the run
// then learns only the zebra. Its AVX2 kernels on every x86-64 machine make it one run
// (Debian's LibTorch does its CPU matrix products through OpenBLAS).
const char* const kOneBlasKernel = "OPENBLAS_CORETYPE=Haswell ";
constexpr int kImages = 2;

struct PixelBox {
  int cls;
  double x1, y1, x2, y2;
};

double iou(const PixelBox& a, const PixelBox& b) {
  const double w = std::max(0.0, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const double h = std::max(0.0, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const double inter = w * h;
  const double u = (a.x2 - a.x1) * (a.y2 - a.y1) + (b.x2 - b.x1) * (b.y2 - b.y1) - inter;
  return u > 0 ? inter / u : 0.0;
}

// YOLO label lines (class cx cy w h [conf], normalised) as pixel boxes of a w x h image.
std::vector<PixelBox> read_yolo_boxes(const std::string& path, int w, int h, std::vector<double>* conf = nullptr) {
  std::vector<PixelBox> out;
  std::istringstream in(test::read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    double c, cx, cy, bw, bh, p;
    if (!(l >> c >> cx >> cy >> bw >> bh)) continue;
    if (conf && (l >> p)) conf->push_back(p);
    out.push_back({static_cast<int>(c), (cx - bw / 2) * w, (cy - bh / 2) * h, (cx + bw / 2) * w, (cy + bh / 2) * h});
  }
  return out;
}

// One training run shared by the test cases: YOLO11n on kImageNames (coco128 train images),
// trained and validated on the same images until it has memorised them.
struct TrainedRun {
  std::string dir, run_dir, images_dir;
  std::vector<std::string> images;  // copies of the original files, in images_dir
  std::string output;
  int exit_code = -1;
};

const TrainedRun& trained_run() {
  static const TrainedRun run = [] {
    TrainedRun r;
    r.dir = test::temp_dir("predict");
    r.images_dir = r.dir + "/images";
    fs::create_directories(r.images_dir);
    std::string list, repeated;
    for (const char* name : kImageNames) {
      const std::string src = test::coco128_dir() + "/images/train2017/" + name;
      fs::copy_file(src, r.images_dir + "/" + name);
      r.images.push_back(r.images_dir + "/" + name);
      list += src + "\n";
    }
    // Every batch holds both images (listed 16 times, not shuffled): BatchNorm's running
    // statistics then converge to the very statistics training normalised with, so the
    // eval-mode network predict runs scores like the trained one after a few hundred steps
    // (with varying batches they lag the weights and eval-mode scores stay near zero).
    for (int i = 0; i < 16; ++i) repeated += list;
    test::write_file(r.dir + "/val.txt", list);
    test::write_file(r.dir + "/train.txt", repeated);
    test::write_coco128_subset(r.dir, 1);  // for its data.yaml's class names
    std::string yaml = test::read_file(r.dir + "/data.yaml");
    yaml.replace(yaml.find("train: subset.txt"), 17, "train: train.txt");
    yaml.replace(yaml.find("val: subset.txt"), 15, "val: val.txt");
    test::write_file(r.dir + "/data.yaml", yaml);
    // 320 steps at imgsz 64; the cosine schedule's long low-lr tail lets the statistics catch up.
    // (Measured: the dog's confidence 0.80 at lr0 0.004 for 20 epochs; 0.41 at 0.002 for 24,
    // 0.01 at 0.003 for 16: the run is deterministic, its outcome sensitive to the recipe and to
    // float rounding, hence one BLAS kernel on every machine: kOneBlasKernel.)
    test::TrainPipeline p;
    p.name = "predict-overfit";
    p.epochs = 20;
    p.top = R"("shuffle": false)";
    p.scheduler = R"({"plugin": "cosine"})";
    p.train = R"("model": {"plugin": "yolo11", "params": {"scale": "n"}}, "optimizer": {"plugin": "adamw", "params": {"lr0": 0.004}}, )"
              R"("nominal_batch": 2, "warmup_epochs": 0, "val_every": 0, "log_every": 100)";
    test::write_file(r.dir + "/train.json", p.json());
    r.run_dir = r.dir + "/run";
    const auto res = test::run_cli("train " + r.dir + "/train.json --run-dir " + r.run_dir, kOneBlasKernel);
    r.output = res.output;
    r.exit_code = res.exit_code;
    return r;
  }();
  return run;
}

}  // namespace

TEST_CASE("predict: a checkpoint written by the train sink holds its model, class names and pipeline") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const auto ck = core::load_checkpoint(run.run_dir + "/weights/last.pt");
  CHECK(ck.meta.at("model").at("plugin") == "yolo11");
  CHECK(ck.meta.at("model").at("params").at("scale") == "n");
  CHECK(ck.meta.at("model").at("params").at("nc") == 80);
  REQUIRE(ck.meta.at("names").size() == 80);
  CHECK(ck.meta.at("names")[0] == "person");
  // The resolved pipeline the run folder holds, not the file as written.
  const json on_disk = json::parse(test::read_file(run.run_dir + "/pipeline.json"));
  CHECK(ck.meta.at("pipeline") == on_disk);
  CHECK(ck.meta.at("pipeline").at("name") == "predict-overfit");
  const auto described = core::describe_checkpoint_model(ck.meta, run.run_dir + "/weights/last.pt");
  CHECK(described.spec.at("plugin") == "yolo11");
  CHECK(described.names.size() == 80);
  // The validation transform the pipeline left out, as core/resources/train-defaults.json gives it.
  const json& transform = ck.meta.at("pipeline").at("stages").at("train").at("params").at("val_transform");
  CHECK(transform.at("plugin") == "letterbox");
  CHECK(transform.at("params").at("scaleup") == false);
}

#ifdef YOLOFLOW_TEST_EXPORT
TEST_CASE("export: a training checkpoint exports with its class names and computes what LibTorch computes") {
  const auto& run = trained_run();
  REQUIRE(run.exit_code == 0);
  const auto weights = run.run_dir + "/weights/last.pt";
  const auto r = test::run_cli("export --weights " + weights + " --imgsz 320");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("EMA weights") != std::string::npos);
  const auto path = run.run_dir + "/weights/last.onnx";  // the default: beside the weights
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  std::string names;
  for (const auto& p : m.metadata_props()) {
    if (p.key() == "names") names = p.value();
  }
  CHECK(names.rfind("{0: 'person', 1: 'bicycle', 2: 'car', ", 0) == 0);

  auto loaded = core::load_checkpoint_model(test::plugins_with("yolo11").registry(), weights,
                                            torch::Device(torch::kCPU), "--weights");
  torch::manual_seed(11);
  const auto x = torch::rand({1, 3, 320, 320});
  torch::Tensor ref;
  {
    torch::NoGradGuard ng;
    ref = test::export_layout(loaded.model->decode(loaded.model->forward_train(x)));
  }
  auto errors = [&](const torch::Tensor& ours) {
    REQUIRE(ours.sizes() == ref.sizes());
    return std::make_pair((ours.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>(),
                          (ours.slice(1, 4) - ref.slice(1, 4)).abs().max().item<double>());
  };
  // The file's graph, evaluated op by op in float64: what it computes.
  const auto [box, prob] = errors(test::onnx_torch_eval(path, x, run.dir));
  MESSAGE("trained checkpoint, op-by-op PyTorch float64 vs LibTorch: max |box| " << box << " px, max |prob| " << prob);
  CHECK(box < 1e-3);
  CHECK(prob < 1e-4);
  // OpenCV 4.6's dnn on the same file, as yoloflow runs it (layer fusion off): the same numbers.
  // Its default fusion drifts on these trained weights (0.17 px measured on boxes of up to 640 px).
  auto opencv = [&](bool fusion) {
    auto net = cv::dnn::readNetFromONNX(path);
    net.enableFusion(fusion);
    const int shape[] = {1, 3, 320, 320};
    net.setInput(cv::Mat(4, shape, CV_32F, x.data_ptr<float>()).clone(), "images");
    const cv::Mat out = net.forward();
    REQUIRE(out.total() == static_cast<std::size_t>(ref.numel()));
    return errors(torch::from_blob(const_cast<float*>(out.ptr<float>()), ref.sizes(), torch::kFloat).clone());
  };
  const auto [cv_box, cv_prob] = opencv(false);
  const auto [fused_box, fused_prob] = opencv(true);
  MESSAGE("trained checkpoint, OpenCV dnn vs LibTorch: max |box| " << cv_box << " px, max |prob| " << cv_prob
                                                                   << "; fused: " << fused_box << " px, " << fused_prob);
  CHECK(cv_box < 1e-3);
  CHECK(cv_prob < 1e-4);
  CHECK(fused_box > cv_box);
}

TEST_CASE("export: the --nms graph keeps the detections yoloflow's own NMS keeps") {
  const auto& run = trained_run();
  REQUIRE(run.exit_code == 0);
  const auto path = run.dir + "/nms.onnx";
  const auto r = test::run_cli("export --weights " + run.run_dir + "/weights/last.pt --imgsz 64 --batch 2 --nms --conf 0.001 --out " + path);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // The training images the model has memorised, letterboxed as predict does (long side 64, the
  // training size; grey 114 bars), as one batch of two.
  std::vector<torch::Tensor> images;
  for (const char* name : kImageNames) {
    cv::Mat bgr = cv::imread(run.images_dir + "/" + name), rgb;
    REQUIRE(!bgr.empty());
    const double scale = 64.0 / std::max(bgr.cols, bgr.rows);
    const int w = static_cast<int>(std::lround(bgr.cols * scale)), h = static_cast<int>(std::lround(bgr.rows * scale));
    cv::resize(bgr, bgr, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
    cv::copyMakeBorder(bgr, bgr, (64 - h) / 2, 64 - h - (64 - h) / 2, (64 - w) / 2, 64 - w - (64 - w) / 2,
                       cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
    cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
    images.push_back(torch::from_blob(rgb.data, {64, 64, 3}, torch::kUInt8).permute({2, 0, 1}).to(torch::kFloat) / 255);
  }
  const auto x = torch::stack(images).contiguous();

  auto loaded = core::load_checkpoint_model(test::plugins_with("yolo11").registry(), run.run_dir + "/weights/last.pt",
                                            torch::Device(torch::kCPU), "--weights");
  std::vector<torch::Tensor> want;
  {
    torch::NoGradGuard ng;
    core::NmsOptions o;
    o.conf = 0.001;  // the weights are trained for a few hundred steps: low but distinct scores
    const auto d = loaded.model->decode(loaded.model->forward_train(x.contiguous()));
    want = core::non_max_suppression(d, o);
  }
  const auto got = test::onnx_torch_eval(path, x, run.dir);
  REQUIRE(got.sizes() == torch::IntArrayRef({2, 300, 6}));
  // The overfit's scores depend on the processor's float sums (one image may score below even
  // conf 0.001 on some): the comparison needs detections in the batch, not in each image.
  CHECK(want[0].size(0) + want[1].size(0) > 0);
  for (int b = 0; b < 2; ++b) {
    const auto& want_b = want[static_cast<std::size_t>(b)];
    const auto rows = got[b];
    const auto found = rows.select(1, 4).gt(0).sum().item<std::int64_t>();
    MESSAGE("--nms, image " << b << ": " << found << " detections, yoloflow's NMS: " << want_b.size(0));
    CHECK(found == want_b.size(0));
    // Every detection is one of theirs (same class, boxes within 0.01 px, score 1e-4), best
    // first, and the rows after the last are zero.
    int matched = 0;
    for (std::int64_t i = 0; i < found; ++i) {
      const auto row = rows[i];
      const auto close = (want_b.slice(1, 0, 4) - row.slice(0, 0, 4)).abs().amax(1).lt(1e-2) &
                         (want_b.select(1, 4) - row[4]).abs().lt(1e-4) & want_b.select(1, 5).eq(row[5]);
      matched += close.any().item<bool>();
      if (i > 0) CHECK(rows[i - 1][4].item<float>() >= row[4].item<float>());
    }
    CHECK(matched == found);
    CHECK(rows.slice(0, found).abs().sum().item<double>() == 0.0);
  }
}
#endif

TEST_CASE("predict: finds the labelled objects of the images it was trained on, in original pixels") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string out = run.dir + "/pred";
  const auto r = test::run_cli("predict --weights " + run.run_dir + "/weights/last.pt --source " + run.images_dir +
                                   " --out " + out + " --imgsz 64 --device cpu --save-txt --save-conf",
                               kOneBlasKernel);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("image 1/" + std::to_string(kImages) + " ") != std::string::npos);
  CHECK(r.output.find("Speed: ") != std::string::npos);

  const json predictions = json::parse(test::read_file(out + "/predictions.json"));
  REQUIRE(predictions.size() == run.images.size());
  int labelled = 0, found = 0;
  double found_iou = 0;
  for (std::size_t i = 0; i < run.images.size(); ++i) {
    const std::string& src = run.images[i];
    const std::string stem = fs::path(src).stem().string();
    CAPTURE(src);
    const cv::Mat original = cv::imread(src);
    const cv::Mat drawn = cv::imread(out + "/" + fs::path(src).filename().string());
    REQUIRE(!drawn.empty());
    CHECK(drawn.cols == original.cols);
    CHECK(drawn.rows == original.rows);
    CHECK(cv::norm(drawn, original, cv::NORM_L1) > 0);  // boxes were drawn

    // Label file: 6 numbers per line, coordinates and confidence in [0, 1], valid classes.
    std::istringstream txt(test::read_file(out + "/labels/" + stem + ".txt"));
    std::string line;
    int lines = 0;
    while (std::getline(txt, line)) {
      std::istringstream l(line);
      std::vector<double> v;
      double x;
      while (l >> x) v.push_back(x);
      REQUIRE(v.size() == 6);
      CHECK(v[0] == static_cast<int>(v[0]));
      CHECK(v[0] >= 0);
      CHECK(v[0] < 80);
      for (int k = 1; k < 6; ++k) {
        CHECK(v[k] >= 0.0);
        CHECK(v[k] <= 1.0);
      }
      CHECK(v[5] >= 0.25);  // the default --conf
      ++lines;
    }
    // predictions.json agrees with the label file.
    const json& e = predictions[i];
    CHECK(e.at("file") == src);
    CHECK(e.at("width") == original.cols);
    CHECK(e.at("height") == original.rows);
    REQUIRE(e.at("detections").size() == static_cast<std::size_t>(lines));
    std::vector<PixelBox> predicted;
    for (const auto& d : e.at("detections")) {
      const auto b = d.at("box_xyxy");
      predicted.push_back({d.at("class").get<int>(), b[0], b[1], b[2], b[3]});
      CHECK(b[0].get<double>() >= 0);
      CHECK(b[2].get<double>() <= original.cols);
      CHECK(b[3].get<double>() <= original.rows);
    }
    const std::vector<PixelBox> txt_boxes = read_yolo_boxes(out + "/labels/" + stem + ".txt", original.cols, original.rows);
    for (std::size_t k = 0; k < txt_boxes.size(); ++k) {
      CHECK(txt_boxes[k].cls == predicted[k].cls);
      CHECK(iou(txt_boxes[k], predicted[k]) > 0.99);
    }

    // The ground truth, in the original image's pixels.
    const auto truth = read_yolo_boxes(test::coco128_dir() + "/labels/train2017/" + stem + ".txt", original.cols,
                                       original.rows);
    for (const auto& t : truth) {
      ++labelled;
      double best = 0;
      for (const auto& p : predicted) {
        if (p.cls == t.cls) best = std::max(best, iou(p, t));
      }
      if (best >= 0.5) {
        ++found;
        found_iou += best;
      }
    }
  }
  MESSAGE("found " << found << " of " << labelled << " labelled objects (same class, IoU >= 0.5), mean IoU "
                   << (found ? found_iou / found : 0.0));
  CHECK(labelled == 2);
  // 320 steps from scratch teach at least one of the two (with the pinned kernel, both).
  CHECK(found >= 1);
  // Found boxes sit on the labels: a letterbox pad left in (about 80 px here) would pull the
  // IoU down to ~0.6, a wrong scale far lower.
  CHECK(found_iou / std::max(found, 1) > 0.8);
}

TEST_CASE("predict: a corrupt image in the folder is skipped and named; the others are predicted") {
  const auto& run = trained_run();
  REQUIRE(run.exit_code == 0);
  const std::string src = run.dir + "/with-corrupt";
  fs::create_directories(src);
  fs::copy_file(run.images[0], src + "/" + fs::path(run.images[0]).filename().string());
  test::write_file(src + "/broken.jpg", "\xff\xd8\xff not really a jpeg");
  test::write_file(src + "/notes.txt", "not an image: ignored");
  const std::string out = run.dir + "/pred-corrupt";
  auto r = test::run_cli("predict --weights " + run.run_dir + "/weights/last.pt --source " + src + " --out " + out +
                         " --imgsz 64 --no-images --save-txt --device cpu");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("broken.jpg: skipped") != std::string::npos);
  CHECK(r.output.find("skipped 1 unreadable file") != std::string::npos);
  const json predictions = json::parse(test::read_file(out + "/predictions.json"));
  CHECK(predictions.size() == 1);
  CHECK(fs::exists(out + "/labels/" + fs::path(run.images[0]).stem().string() + ".txt"));
  CHECK(!fs::exists(out + "/" + fs::path(run.images[0]).filename().string()));  // --no-images

  // Nothing readable at all: an error.
  const std::string bad = run.dir + "/only-corrupt";
  test::write_file(bad + "/broken.jpg", "not a jpeg");
  r = test::run_cli("predict --weights " + run.run_dir + "/weights/last.pt --source " + bad + " --out " + run.dir +
                    "/pred-bad --imgsz 64 --device cpu");
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("none of its 1 files could be decoded") != std::string::npos);
}

TEST_CASE("predict: missing weights, a bad source and a bad --conf are clear errors") {
  const auto dir = test::temp_dir("predict-errors");
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  auto r = test::run_cli("predict --weights " + dir + "/nope.pt --source " + image);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(dir + "/nope.pt: no such file") != std::string::npos);

  test::write_file(dir + "/fake.pt", "not a checkpoint");
  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + image + " --out " + dir + "/o");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("--weights " + dir + "/fake.pt is not a PyTorch file: it starts with text (\"not a checkpoint\")") !=
        std::string::npos);

  // A .txt file is a list of sources, as Ultralytics reads it.
  test::write_file(dir + "/notes.txt", "hello");
  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + dir + "/notes.txt");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(dir + "/notes.txt: hello: no such file or folder") != std::string::npos);
  test::write_file(dir + "/notes.md", "hello");
  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + dir + "/notes.md");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(dir + "/notes.md: not an image or a video") != std::string::npos);

  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + dir + "/missing");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find(dir + "/missing: no such file or folder") != std::string::npos);

  fs::create_directories(dir + "/empty");
  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + dir + "/empty");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("holds no images") != std::string::npos);

  r = test::run_cli("predict --weights " + dir + "/fake.pt --source " + image + " --conf 1.5");
  CHECK(r.exit_code == kExitInvalid);
  CHECK(r.output.find("--conf") != std::string::npos);
}

TEST_CASE("predict: the model of a checkpoint comes from its meta, else the run folder's pipeline.json") {
  const auto dir = test::temp_dir("predict-describe");
  const std::string ck = dir + "/run/weights/best.pt";
  const json pipeline = {{"stages",
                          {{"source", {{"plugin", "yolo_dataset"}}},
                           {"train", {{"plugin", "train"}, {"params", {{"model", {{"plugin", "yolo11"}, {"params", {{"scale", "s"}}}}}}}}}}}};
  SUBCASE("the model entry wins") {
    const json meta = {{"model", {{"plugin", "yolo11"}, {"params", {{"scale", "m"}, {"nc", 3}}}}},
                       {"pipeline", pipeline}, {"names", {"a", "b", "c"}}, {"nc", 3}};
    const auto d = core::describe_checkpoint_model(meta, ck);
    CHECK(d.spec.at("params").at("scale") == "m");
    CHECK(d.names == std::vector<std::string>{"a", "b", "c"});
  }
  SUBCASE("a pipeline entry: the train stage's model, nc from the checkpoint") {
    const auto d = core::describe_checkpoint_model({{"pipeline", pipeline}, {"nc", 3}}, ck);
    CHECK(d.spec.at("params").at("scale") == "s");
    CHECK(d.spec.at("params").at("nc") == 3);
  }
  SUBCASE("an older checkpoint: RUN/pipeline.json beside its weights folder") {
    test::write_file(dir + "/run/pipeline.json", pipeline.dump());
    const auto d = core::describe_checkpoint_model({{"nc", 5}}, ck);
    CHECK(d.spec.at("params").at("scale") == "s");
    CHECK(d.spec.at("params").at("nc") == 5);
    CHECK(d.origin == dir + "/run/pipeline.json");
  }
  SUBCASE("nothing says: the error names the file and what is missing") {
    try {
      core::describe_checkpoint_model(json::object(), ck);
      FAIL("no error");
    } catch (const InvalidInput& e) {
      const std::string msg = e.what();
      CHECK(msg.find(ck + " does not say which model it holds") != std::string::npos);
      CHECK(msg.find(dir + "/run/pipeline.json does not exist") != std::string::npos);
    }
  }
}

TEST_CASE("val: `yoloflow val` on last.pt gives the numbers the train sink reported after its last epoch") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  core::ResultsCsv results(run.run_dir + "/results.csv");
  results.load();
  REQUIRE_FALSE(results.rows().empty());
  const auto trained = results.rows().back();
  REQUIRE(trained.count("metrics/mAP50(B)") == 1);
  // Something was learnt, so equal numbers mean something.
  CHECK(trained.at("metrics/mAP50(B)") > 0.1);
  // The train sink validated last.pt's EMA weights on exactly these images (rectangular
  // batches, the default of both) after its last epoch.
  const std::string out = run.dir + "/val-rect";
  const auto r = test::run_cli("val --weights " + run.run_dir + "/weights/last.pt --data " + run.dir +
                               "/data.yaml --imgsz 64 --device cpu --out " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json m = json::parse(test::read_file(out + "/metrics.json"));
  CHECK(m.at("rect") == true);
  CHECK(m.at("images") == kImages);
  CHECK(m.at("instances") == 2);
  // results.csv keeps 6 significant digits.
  CHECK(m.at("precision").get<double>() == doctest::Approx(trained.at("metrics/precision(B)")).epsilon(1e-5));
  CHECK(m.at("recall").get<double>() == doctest::Approx(trained.at("metrics/recall(B)")).epsilon(1e-5));
  CHECK(m.at("mAP50").get<double>() == doctest::Approx(trained.at("metrics/mAP50(B)")).epsilon(1e-5));
  CHECK(m.at("mAP50-95").get<double>() == doctest::Approx(trained.at("metrics/mAP50-95(B)")).epsilon(1e-5));
  // The console table, Ultralytics' columns.
  CHECK(r.output.find("Class     Images  Instances      Box(P          R      mAP50  mAP50-95)") != std::string::npos);
  CHECK(r.output.find("results in " + out + ": metrics.json") != std::string::npos);
}

TEST_CASE("val: `yoloflow val` fits and reads images as the checkpoint's pipeline says, not as the host would") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  auto ck = core::load_checkpoint(run.run_dir + "/weights/last.pt");
  json& train = ck.meta.at("pipeline").at("stages").at("train").at("params");
  const std::string weights = run.dir + "/recorded/weights/last.pt";
  fs::create_directories(run.dir + "/recorded/weights");
  const std::string val = "val --weights " + weights + " --data " + run.dir + "/data.yaml --imgsz 64 --device cpu --out " +
                          run.dir + "/val-recorded";
  SUBCASE("its val_transform") {
    // flip has no height and width: only a validation that takes the recorded transform fails.
    train["val_transform"] = {{"plugin", "flip"}};
    core::save_checkpoint(weights, ck);
    const auto r = test::run_cli(val);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(weights + " (its pipeline entry): stages.train.params.val_transform.plugin: 'flip' has no "
                        "`height` and `width` parameters") != std::string::npos);
  }
  SUBCASE("its val_source") {
    train["val_source"]["plugin"] = "letterbox";
    core::save_checkpoint(weights, ck);
    const auto r = test::run_cli(val);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find(weights + " (its pipeline entry): stages.train.params.val_source.plugin: no source plugin "
                        "'letterbox'") != std::string::npos);
  }
}

TEST_CASE("val sink: pipelines/val-coco128.json gives what `yoloflow val --square` gives") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string cli_out = run.dir + "/val-square";
  const auto c = test::run_cli("val --square --weights " + run.run_dir + "/weights/last.pt --data " + run.dir +
                               "/data.yaml --imgsz 64 --device cpu --out " + cli_out);
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  const json want = json::parse(test::read_file(cli_out + "/metrics.json"));
  CHECK(want.at("rect") == false);

  // The shipped pipeline on the run's own val split, at its imgsz: its graph letterboxes
  // every image to a square, as --square does.
  const std::string out = run.dir + "/validate";
  const auto r = test::run_cli("run " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/val-coco128.json --run-dir " +
                               out + " imgsz=64 device=cpu stages.source.params.data=" + run.dir +
                               "/data.yaml stages.val.params.weights=" + run.run_dir + "/weights/last.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json m = json::parse(test::read_file(out + "/metrics.json"));
  CHECK(m.at("weights") == run.run_dir + "/weights/last.pt");
  CHECK(m.at("images") == kImages);
  CHECK(m.at("instances") == 2);
  for (const char* key : {"precision", "recall", "mAP50", "mAP50-95"}) {
    CAPTURE(key);
    CHECK(m.at(key).get<double>() == doctest::Approx(want.at(key).get<double>()).epsilon(1e-9));
  }
  REQUIRE(m.at("per_class").size() >= 1);
  CHECK(m.at("per_class") == want.at("per_class"));
  // The console shows the same numbers, overall and per class.
  CHECK(r.output.find("validated " + run.run_dir + "/weights/last.pt: 2 images, 2 instances") != std::string::npos);
  CHECK(r.output.find("mAP50-95 ") != std::string::npos);
  CHECK(r.output.find("written to " + out + "/metrics.json") != std::string::npos);

  // A missing checkpoint: a clear error naming the parameter's JSON path and the file.
  const auto bad = test::run_cli("run " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/val-coco128.json --run-dir " +
                                 run.dir + "/validate-missing imgsz=64 device=cpu stages.source.params.data=" + run.dir +
                                 "/data.yaml stages.val.params.weights=" + run.dir + "/nope.pt");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("stages.val.params.weights " + run.dir + "/nope.pt: no such file") != std::string::npos);
}

TEST_CASE("predict sink: pipelines/predict-coco128.json writes what `yoloflow predict` writes for the same weights") {
  const auto& run = trained_run();
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  // The dog image (640x478) at the imgsz it was trained at: the source's resize to 64x48 and
  // predict's letterbox resize agree on the size (the source rounds up, the letterbox to
  // nearest; for 640x425 they differ by a row), so both run the network on the same pixels.
  // A very low conf keeps many detections to compare (an overfit model scores the rest near 0).
  const std::string image = run.images[1];
  REQUIRE(fs::path(image).filename() == "000000000042.jpg");
  const std::string one = run.dir + "/one-image";
  fs::create_directories(one);
  fs::copy_file(image, one + "/000000000042.jpg", fs::copy_options::overwrite_existing);
  test::write_file(one + "/list.txt", test::coco128_dir() + "/images/train2017/000000000042.jpg\n");
  std::string yaml = test::read_file(run.dir + "/data.yaml");
  yaml.replace(yaml.find("train: train.txt"), 16, "train: list.txt");
  yaml.replace(yaml.find("val: val.txt"), 12, "val: list.txt");
  test::write_file(one + "/data.yaml", yaml);
  const std::string weights = run.run_dir + "/weights/last.pt";
  const std::string graph_out = run.dir + "/predict-pipeline", cli_out = run.dir + "/predict-cli";
  const auto g = test::run_cli("run " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/predict-coco128.json --run-dir " +
                               graph_out + " imgsz=64 device=cpu stages.source.params.data=" + one +
                               "/data.yaml stages.predict.params.weights=" + weights + " stages.predict.params.conf=0.00001");
  INFO(g.output);
  REQUIRE(g.exit_code == 0);
  CHECK(g.output.find("1 image, ") != std::string::npos);
  const auto c = test::run_cli("predict --weights " + weights + " --source " + one + "/000000000042.jpg --out " + cli_out +
                               " --imgsz 64 --conf 0.00001 --device cpu --save-txt --save-conf");
  INFO(c.output);
  REQUIRE(c.exit_code == 0);

  const json from_graph = json::parse(test::read_file(graph_out + "/predictions.json"));
  const json from_cli = json::parse(test::read_file(cli_out + "/predictions.json"));
  REQUIRE(from_graph.size() == 1);
  REQUIRE(from_cli.size() == 1);
  std::map<std::string, json> graph_by_name;
  for (const auto& e : from_graph) graph_by_name[fs::path(e.at("file").get<std::string>()).filename().string()] = e;
  for (const auto& e : from_cli) {
    const std::string name = fs::path(e.at("file").get<std::string>()).filename().string();
    CAPTURE(name);
    REQUIRE(graph_by_name.count(name) == 1);
    const json& ge = graph_by_name[name];
    CHECK(ge.at("width") == e.at("width"));
    CHECK(ge.at("height") == e.at("height"));
    CHECK(e.at("detections").size() >= 10);
    CHECK(ge.at("detections") == e.at("detections"));
    const std::string stem = fs::path(name).stem().string();
    CHECK(test::read_file(graph_out + "/labels/" + stem + ".txt") == test::read_file(cli_out + "/labels/" + stem + ".txt"));
    // The annotated images: the same boxes drawn on the same original pixels.
    const cv::Mat a = cv::imread(graph_out + "/" + name), b = cv::imread(cli_out + "/" + name);
    REQUIRE(!a.empty());
    REQUIRE(a.size() == b.size());
    CHECK(cv::norm(a, b, cv::NORM_L1) == 0);
  }
}
