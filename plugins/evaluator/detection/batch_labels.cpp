#include "batch_labels.h"

#include <string>

#include "yoloflow/error.h"

namespace yoloflow::detection_eval {

std::vector<ImageLabels> labels_per_image(const Batch& batch) {
  const std::vector<float>& a = batch.boxes().values;
  const float w = static_cast<float>(batch.width), h = static_cast<float>(batch.height);
  std::vector<std::vector<float>> values(static_cast<std::size_t>(batch.size));
  std::vector<ImageLabels> out(static_cast<std::size_t>(batch.size));
  for (std::size_t k = 0; k + 6 <= a.size(); k += 6) {
    const auto image = static_cast<std::int64_t>(a[k]);
    if (image < 0 || image >= batch.size) {
      throw Error("a label of image " + std::to_string(image) + " in a batch of " + std::to_string(batch.size));
    }
    const float cx = a[k + 2] * w, cy = a[k + 3] * h, bw = a[k + 4] * w, bh = a[k + 5] * h;
    auto& v = values[static_cast<std::size_t>(image)];
    v.insert(v.end(), {a[k + 1], cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2});
    out[static_cast<std::size_t>(image)].rows.push_back(static_cast<std::int64_t>(k / 6));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    auto& v = values[i];
    out[i].labels = torch::from_blob(v.data(), {static_cast<std::int64_t>(v.size() / 5), 5}, torch::kFloat).clone();
  }
  return out;
}

}  // namespace yoloflow::detection_eval
