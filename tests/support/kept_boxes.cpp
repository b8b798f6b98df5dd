#include "support/kept_boxes.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include <doctest/doctest.h>

namespace yoloflow::test {
namespace {

double iou(const std::array<float, 6>& a, const std::vector<double>& b) {
  const double iw = std::max(0.0, std::min<double>(a[2], b[2]) - std::max<double>(a[0], b[0]));
  const double ih = std::max(0.0, std::min<double>(a[3], b[3]) - std::max<double>(a[1], b[1]));
  const double inter = iw * ih;
  const double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
  return uni > 0 ? inter / uni : 0.0;
}

double aspect(const core::OriginalImageDetections& d) { return static_cast<double>(d.height) / d.width; }

}  // namespace

KeptBoxesComparison compare_kept_boxes(const std::vector<core::OriginalImageDetections>& preds,
                                       const nlohmann::json& ref_images, std::size_t batch) {
  KeptBoxesComparison out;
  for (std::size_t i = 0; i < preds.size(); ++i) {
    const auto& img = preds[i];
    const std::string name = std::filesystem::path(img.path).filename().string();
    CAPTURE(name);
    REQUIRE(ref_images.contains(name));
    bool ambiguous = false;
    for (std::size_t j = 0; batch > 0 && j < preds.size(); ++j) ambiguous |= j / batch != i / batch && aspect(preds[j]) == aspect(img);
    if (ambiguous) continue;
    ++out.images_compared;
    const double r = 640.0 / std::max(img.width, img.height);
    const double rw = r == 1.0 ? 1.0 : std::min(std::ceil(img.width * r), 640.0) / img.width;
    const double rh = r == 1.0 ? 1.0 : std::min(std::ceil(img.height * r), 640.0) / img.height;
    std::vector<char> used(img.boxes.size(), 0);
    const auto& rows = ref_images.at(name);
    for (std::size_t row = 0; row < rows.size(); ++row) {
      auto t = rows[row].get<std::vector<double>>();
      REQUIRE(t.size() >= 6);
      t[0] *= rh / rw;
      t[2] *= rh / rw;
      if (t[2] <= t[0] || t[3] <= t[1]) {
        ++out.degenerate;
        continue;
      }
      ++out.compared;
      double best = 0;
      std::size_t best_k = img.boxes.size();
      for (std::size_t k = 0; k < img.boxes.size(); ++k) {
        if (used[k] || static_cast<int>(img.boxes[k][5]) != static_cast<int>(t[5])) continue;
        const double v = iou(img.boxes[k], t);
        if (v > best) {
          best = v;
          best_k = k;
        }
      }
      if (best >= 0.99) {
        used[best_k] = 1;
        ++out.matched;
        out.matches.push_back({i, best_k, row});
      }
    }
  }
  return out;
}

}  // namespace yoloflow::test
