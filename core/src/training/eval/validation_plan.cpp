#include "training/eval/validation_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <tbb/parallel_for.h>

#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/component_spec.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/source.h"

namespace yoloflow::core {

std::pair<int, int> rect_batch_shape(double min_ar, double max_ar, int imgsz, int stride, double pad) {
  double h = 1.0, w = 1.0;  // relative to imgsz; square when the batch holds both orientations
  if (max_ar < 1.0) {
    h = max_ar;
  } else if (min_ar > 1.0) {
    w = 1.0 / min_ar;
  }
  auto side = [&](double s) { return static_cast<int>(std::ceil(s * imgsz / stride + pad)) * stride; };
  return {side(h), side(w)};
}

namespace {

// The component `spec` names, of `kind`; `role` and `needs` say what it is for in messages.
const RegisteredComponent& validation_component(const Registry& registry, Kind kind, const json& spec,
                                                const std::string& path, const std::string& role,
                                                const std::string& needs) {
  if (!spec.is_object()) {
    throw InvalidInput(path + ": no " + role + ": give {\"plugin\": NAME, \"params\": {...}}, " + needs);
  }
  const std::string plugin = spec.value("plugin", std::string());
  Diagnostics problems;
  const RegisteredComponent* rc = find_component_of_kind(registry, kind, plugin, path + ".plugin", problems);
  if (!rc) {
    throw InvalidInput(problems.empty() ? path + ".plugin: no " + kind_name(kind) + " '" + plugin + "' is loaded"
                                        : problems.front().path + ": " + problems.front().message);
  }
  return *rc;
}

}  // namespace

void check_validation_transform(const Registry& registry, const json& spec, const std::string& path) {
  const auto& rc = validation_component(registry, Kind::Augmentation, spec, path, "validation transform",
                                        "an augmentation with `height` and `width` parameters");
  if (!rc.info.schema.find("height") || !rc.info.schema.find("width")) {
    throw InvalidInput(path + ".plugin: '" + rc.info.name + "' has no `height` and `width` parameters: the validation "
                       "transform is given each batch's shape through them (`yoloflow describe " + rc.info.name + "`)");
  }
}

void check_validation_batcher(const Registry& registry, const json& spec, const std::string& path) {
  const auto& rc = validation_component(registry, Kind::Batcher, spec, path, "validation batcher",
                                        "a batcher with an integer `batch` parameter");
  const ParamSpec* batch = rc.info.schema.find("batch");
  if (!batch || batch->type != ParamType::Int) {
    throw InvalidInput(path + ".plugin: '" + rc.info.name + "' has no integer `batch` parameter: the validation batcher "
                       "is given `val_batch` through it (`yoloflow describe " + rc.info.name + "`)");
  }
}

ValidationPlan plan_validation(DataSource& source, const ValidationOptions& options, const std::string& where) {
  ValidationPlan out;
  std::size_t n = source.size();
  if (options.fraction < 1.0) n = static_cast<std::size_t>(std::llround(static_cast<double>(n) * std::max(0.0, options.fraction)));
  if (options.limit > 0) n = std::min(n, options.limit);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::vector<double> ar(n, 1.0);
  if (options.rect) {
    // The original file's aspect ratio decides the order and the shapes; reading each image
    // once is what a source without a size index costs.
    std::vector<char> ok(n, 0);
    tbb::parallel_for<std::size_t>(0, n, [&](std::size_t i) {
      try {
        const Sample s = source.load(i);
        const int w = s.geometry.original_width > 0 ? s.geometry.original_width : s.image.cols;
        const int h = s.geometry.original_height > 0 ? s.geometry.original_height : s.image.rows;
        if (w > 0 && h > 0) {
          ar[i] = static_cast<double>(h) / w;
          ok[i] = 1;
        }
      } catch (const std::exception& e) {
        YF_LOG_WARN(where << ": skipped image " << i << ": " << e.what());
      }
    });
    order.clear();
    for (std::size_t i = 0; i < n; ++i) {
      if (ok[i]) order.push_back(i);
    }
    out.skipped = n - order.size();
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ar[a] < ar[b]; });
  }
  const auto batch = static_cast<std::size_t>(options.batch);
  for (std::size_t start = 0; start < order.size(); start += batch) {
    const std::size_t end = std::min(order.size(), start + batch);
    out.batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                             order.begin() + static_cast<std::ptrdiff_t>(end));
    // Sorted: the batch's extremes are its first and last image.
    out.shapes.push_back(options.rect ? rect_batch_shape(ar[order[start]], ar[order[end - 1]], options.imgsz, options.stride,
                                                       options.pad)
                                      : std::make_pair(options.height > 0 ? options.height : options.imgsz,
                                                       options.width > 0 ? options.width : options.imgsz));
  }
  return out;
}

}  // namespace yoloflow::core
