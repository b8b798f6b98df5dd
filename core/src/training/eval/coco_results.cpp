#include "training/eval/coco_results.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "runtime/util/string_affixes.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

double round_to(double v, double scale) { return std::round(v * scale) / scale; }


}  // namespace

bool is_coco_split(const std::string& data_yaml, const std::string& split) {
  DataYaml yaml;
  try {
    yaml = read_data_yaml(data_yaml);
  } catch (const Error&) {
    return false;
  }
  const auto it = yaml.splits.find(split);
  if (it == yaml.splits.end() || it->second.size() != 1) return false;
  const std::string& entry = it->second.front();
  return entry.find("coco") != std::string::npos && (ends_with(entry, "/val2017.txt") || ends_with(entry, "/test-dev2017.txt"));
}

const std::vector<int>& coco80_category_ids() {
  // COCO 2017 numbers its 80 detection categories 1..90, leaving out 12, 26, 29, 30, 45, 66,
  // 68, 69, 71, 83.
  static const std::vector<int> ids = [] {
    const std::vector<int> gaps{12, 26, 29, 30, 45, 66, 68, 69, 71, 83};
    std::vector<int> v;
    for (int id = 1; id <= 90; ++id) {
      if (std::find(gaps.begin(), gaps.end(), id) == gaps.end()) v.push_back(id);
    }
    return v;
  }();
  return ids;
}

nlohmann::ordered_json coco_results(const std::vector<OriginalImageDetections>& predictions, bool coco_ids) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  const auto& ids = coco80_category_ids();
  for (const auto& image : predictions) {
    const std::filesystem::path path(image.path);
    const std::string stem = path.stem().string();
    const bool numeric = !stem.empty() && std::all_of(stem.begin(), stem.end(), ::isdigit) && stem.size() < 19;
    const nlohmann::ordered_json image_id = numeric ? nlohmann::ordered_json(std::stoll(stem)) : nlohmann::ordered_json(stem);
    for (std::size_t k = 0; k < image.boxes.size(); ++k) {
      const auto& b = image.boxes[k];
      const int cls = static_cast<int>(b[5]);
      const int category = coco_ids && cls >= 0 && cls < static_cast<int>(ids.size()) ? ids[static_cast<std::size_t>(cls)]
                                                                                     : cls + 1;
      nlohmann::ordered_json d;
      d["image_id"] = image_id;
      d["file_name"] = path.filename().string();
      d["category_id"] = category;
      d["bbox"] = {round_to(b[0], 1e3), round_to(b[1], 1e3), round_to(b[2] - b[0], 1e3), round_to(b[3] - b[1], 1e3)};
      d["score"] = round_to(b[4], 1e5);
      // A segmentation model's mask, as COCO's "segm" results give it.
      if (k < image.mask_rles.size()) d["segmentation"] = {{"size", {image.height, image.width}}, {"counts", image.mask_rles[k]}};
      out.push_back(d);
    }
  }
  return out;
}

}  // namespace yoloflow::core
