// The source contract: what every data source's samples must be before a batcher sees them.
#include <algorithm>
#include <cmath>
#include <exception>

#include "testing_sample_checks.h"
#include "yoloflow/testing.h"

namespace yoloflow::testing {

using detail::check_sample;
using detail::same_sample;

std::vector<std::string> source_contract(DataSource& source, int imgsz, std::size_t count) {
  std::vector<std::string> out;
  const std::size_t n = source.size();
  if (n == 0) return {"size() is 0"};
  for (std::size_t i = 0; i < std::min(n, count); ++i) {
    const std::string what = "sample " + std::to_string(i);
    Sample a, b;
    try {
      a = source.load(i);
      b = source.load(i);
    } catch (const std::exception& e) {
      out.push_back(what + ": threw: " + e.what());
      continue;
    }
    check_sample(a, what, out);
    if (std::max(a.image.cols, a.image.rows) > imgsz) {
      out.push_back(what + ": " + std::to_string(a.image.cols) + "x" + std::to_string(a.image.rows) +
                    " is larger than imgsz " + std::to_string(imgsz));
    }
    if (a.index != i) out.push_back(what + ": index " + std::to_string(a.index));
    if (a.path.empty()) out.push_back(what + ": no path");
    if (!same_sample(a, b)) out.push_back(what + ": another sample when loaded again");
    // labels(), where the source gives them: the loaded sample's classes and boxes, normalised.
    SampleLabels labels;
    bool given = false;
    try {
      given = source.labels(i, labels);
    } catch (const std::exception& e) {
      out.push_back(what + ": labels() threw: " + e.what());
    }
    if (!given) continue;
    if (labels.classes.size() != a.boxes.size() || labels.boxes.size() != a.boxes.size()) {
      out.push_back(what + ": labels() gives " + std::to_string(labels.classes.size()) + " classes and " +
                    std::to_string(labels.boxes.size()) + " boxes where load() gives " + std::to_string(a.boxes.size()));
      continue;
    }
    const float w = static_cast<float>(a.image.cols), h = static_cast<float>(a.image.rows);
    constexpr float kTol = 1e-3f;  // the loaded boxes are rounded to the resized image's pixels
    for (std::size_t k = 0; k < a.boxes.size(); ++k) {
      const Box& box = a.boxes[k];
      const auto& l = labels.boxes[k];
      if (labels.classes[k] != box.cls || std::fabs(l[0] - (box.x1 + box.x2) * 0.5f / w) > kTol ||
          std::fabs(l[1] - (box.y1 + box.y2) * 0.5f / h) > kTol || std::fabs(l[2] - box.width() / w) > kTol ||
          std::fabs(l[3] - box.height() / h) > kTol) {
        out.push_back(what + ": labels() box " + std::to_string(k) + " is not load()'s, normalised");
        break;
      }
    }
  }
  try {
    source.load(n);
    out.push_back("load(size()) returned instead of throwing");
  } catch (const std::exception&) {
  }
  return out;
}

}  // namespace yoloflow::testing
