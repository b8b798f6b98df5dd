#include "train/validation_loader.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <opencv2/imgproc.hpp>
#include <tbb/parallel_for.h>

#include "pipeline/component_factory.h"
#include "pipeline/component_spec.h"
#include "pipeline/default_documents.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/rng.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

std::pair<int, int> rect_batch_shape(double min_ar, double max_ar, int imgsz, int stride) {
  double h = 1.0, w = 1.0;  // relative to imgsz; square when the batch holds both orientations
  if (max_ar < 1.0) {
    h = max_ar;
  } else if (min_ar > 1.0) {
    w = 1.0 / min_ar;
  }
  auto side = [&](double s) { return static_cast<int>(std::ceil(s * imgsz / stride + 0.5)) * stride; };
  return {side(h), side(w)};
}

void check_validation_transform(const Registry& registry, const json& spec, const std::string& path) {
  if (!spec.is_object()) {
    throw InvalidInput(path + ": no validation transform: give {\"plugin\": NAME, \"params\": {...}}, an augmentation "
                       "with `height` and `width` parameters");
  }
  const std::string plugin = spec.value("plugin", std::string());
  Diagnostics problems;
  const RegisteredComponent* rc = find_component_of_kind(registry, Kind::Augmentation, plugin, path + ".plugin", problems);
  if (!rc) {
    throw InvalidInput(problems.empty() ? path + ".plugin: no augmentation '" + plugin + "' is loaded"
                                        : problems.front().path + ": " + problems.front().message);
  }
  if (!rc->info.schema.find("height") || !rc->info.schema.find("width")) {
    throw InvalidInput(path + ".plugin: '" + plugin + "' has no `height` and `width` parameters: the validation transform "
                       "is given each batch's shape through them (`yoloflow describe " + plugin + "`)");
  }
}

ValidationLoader::ValidationLoader(const Registry& registry, DataSource& source, const ValidationOptions& options,
                                   std::string where)
    : registry_(registry), source_(source), options_(options), where_(std::move(where)) {
  if (options_.batch < 1) throw InvalidInput(where_ + ": the validation batch must be at least 1");
  if (options_.transform.is_null()) {
    options_.transform = train_sink_default("val_transform");
    options_.transform_path = train_defaults().file + ": stages." + sink_stage(train_defaults().document, "train").first +
                              ".params.val_transform";
  }
  if (options_.transform_path.empty()) options_.transform_path = where_ + ".transform";
  check_validation_transform(registry_, options_.transform, options_.transform_path);
}

ValidationLoader::~ValidationLoader() = default;

std::size_t ValidationLoader::batches() {
  if (!planned_) plan();
  return batches_.size();
}

std::pair<int, int> ValidationLoader::shape(std::size_t batch) {
  if (!planned_) plan();
  return shapes_.at(batch);
}

void ValidationLoader::plan() {
  const std::size_t n = source_.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> ar(n, 1.0);
  if (options_.rect) {
    // The original file's aspect ratio decides the order and the shapes; reading each image
    // once is what a source without a size index costs.
    std::vector<char> ok(n, 0);
    tbb::parallel_for<std::size_t>(0, n, [&](std::size_t i) {
      try {
        const Sample s = source_.load(i);
        const int w = s.geometry.original_width > 0 ? s.geometry.original_width : s.image.cols;
        const int h = s.geometry.original_height > 0 ? s.geometry.original_height : s.image.rows;
        if (w > 0 && h > 0) {
          ar[i] = static_cast<double>(h) / w;
          ok[i] = 1;
        }
      } catch (const std::exception& e) {
        YF_LOG_WARN(where_ << ": skipped image " << i << ": " << e.what());
      }
    });
    order.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (ok[i]) order.push_back(i);
    }
    skipped_ += n - order.size();
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ar[a] < ar[b]; });
  }
  const auto batch = static_cast<std::size_t>(options_.batch);
  for (std::size_t start = 0; start < order.size(); start += batch) {
    const std::size_t end = std::min(order.size(), start + batch);
    batches_.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                          order.begin() + static_cast<std::ptrdiff_t>(end));
    // Sorted: the batch's extremes are its first and last image.
    shapes_.push_back(options_.rect ? rect_batch_shape(ar[order[start]], ar[order[end - 1]], options_.imgsz,
                                                       options_.stride)
                                    : std::make_pair(options_.imgsz, options_.imgsz));
  }
  for (const auto& s : shapes_) transform_for(s);  // created here, shared read-only by the loading threads
  planned_ = true;
}

Augmentation& ValidationLoader::transform_for(std::pair<int, int> shape) {
  auto it = transforms_.find(shape);
  if (it != transforms_.end()) return *it->second;
  StageContext ctx;
  ctx.node = options_.transform_path;
  ctx.imgsz = options_.imgsz;
  json spec = options_.transform;
  if (!spec.contains("params") || !spec["params"].is_object()) spec["params"] = json::object();
  spec["params"]["height"] = shape.first;
  spec["params"]["width"] = shape.second;
  auto t = create_component<Augmentation>(registry_, Kind::Augmentation, spec, ctx.node, ctx);
  return *transforms_.emplace(shape, std::move(t)).first->second;
}

ValidationBatch ValidationLoader::load(std::size_t batch) {
  if (!planned_) plan();
  const auto& indices = batches_.at(batch);
  const auto [h, w] = shapes_.at(batch);
  Augmentation& transform = transform_for({h, w});
  const std::size_t count = indices.size();
  std::vector<Sample> samples(count);
  std::vector<char> ok(count, 0);
  SourceSamples loader(source_);
  tbb::parallel_for<std::size_t>(0, count, [&](std::size_t i) {
    try {
      samples[i] = source_.load(indices[i]);
      Rng rng(0);
      AugmentContext ac{rng, loader, options_.imgsz, 0};
      transform.apply(samples[i], ac);
      ok[i] = 1;
    } catch (const std::exception& e) {
      YF_LOG_WARN(where_ << ": skipped image " << indices[i] << ": " << e.what());
    }
  });
  std::vector<std::size_t> good;
  for (std::size_t i = 0; i < count; ++i) {
    if (ok[i]) good.push_back(i);
  }
  skipped_ += count - good.size();
  ValidationBatch out;
  out.pixels = torch::empty({static_cast<std::int64_t>(good.size()), h, w, 3}, torch::kUInt8);
  std::vector<float> rows;
  for (std::size_t k = 0; k < good.size(); ++k) {
    Sample& s = samples[good[k]];
    if (s.image.rows != h || s.image.cols != w || s.image.type() != CV_8UC3) {
      throw Error(options_.transform_path + " (" + options_.transform.value("plugin", std::string()) + ") made " + s.path +
                  " " + std::to_string(s.image.cols) + "x" + std::to_string(s.image.rows) + ", not the batch's " +
                  std::to_string(w) + "x" + std::to_string(h) + " 8-bit 3-channel image");
    }
    cv::Mat dst(h, w, CV_8UC3, out.pixels[static_cast<std::int64_t>(k)].data_ptr<std::uint8_t>());
    cv::cvtColor(s.image, dst, cv::COLOR_BGR2RGB);
    for (const auto& b : s.boxes) {
      rows.insert(rows.end(), {static_cast<float>(k), static_cast<float>(b.cls), (b.x1 + b.x2) / 2 / w,
                               (b.y1 + b.y2) / 2 / h, (b.x2 - b.x1) / w, (b.y2 - b.y1) / h});
    }
    SampleInfo info;
    info.index = s.index;
    info.path = s.path;
    info.geometry = s.geometry;
    out.samples.push_back(std::move(info));
  }
  out.rows = torch::from_blob(rows.data(), {static_cast<std::int64_t>(rows.size() / 6), 6}, torch::kFloat).clone();
  return out;
}

}  // namespace yoloflow::core
