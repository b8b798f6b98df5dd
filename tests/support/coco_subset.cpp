#include "support/coco_subset.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <vector>

#include "support/paths.h"
#include "support/run_cli.h"

namespace yoloflow::test {
namespace fs = std::filesystem;

// 8 coco128 train images (sorted, the first ones with labels) listed in a .txt beside a
// data.yaml that uses the list for both train and val.
std::string write_coco128_subset(const std::string& dir, int count) {
  std::vector<fs::path> images;
  for (const auto& e : fs::directory_iterator(coco128_dir() + "/images/train2017")) images.push_back(e.path());
  std::sort(images.begin(), images.end());
  std::ostringstream list;
  int n = 0;
  for (const auto& p : images) {
    const auto label = fs::path(coco128_dir()) / "labels/train2017" / p.filename().replace_extension(".txt");
    if (!fs::exists(label) || fs::file_size(label) == 0) continue;
    list << fs::absolute(p).string() << "\n";
    if (++n == count) break;
  }
  write_file(dir + "/subset.txt", list.str());
  std::string yaml = "path: .\ntrain: subset.txt\nval: subset.txt\nnames:\n";
  // Class names come from coco128's own data.yaml ("names:" map lines).
  std::istringstream src(read_file(coco128_dir() + "/data.yaml"));
  std::string line;
  bool in_names = false;
  while (std::getline(src, line)) {
    if (line.rfind("names:", 0) == 0) { in_names = true; continue; }
    if (in_names && line.rfind("  ", 0) == 0) yaml += line + "\n";
  }
  write_file(dir + "/data.yaml", yaml);
  return dir + "/data.yaml";
}

std::string write_inspect_pipeline(const std::string& dir, int epochs, const std::string& monitors) {
  write_coco128_subset(dir, 4);
  write_file(dir + "/inspect.json", R"({
  "name": "inspect", "epochs": )" + std::to_string(epochs) + R"(, "imgsz": 64,
  "stages": {
    "source": {"plugin": "yolo_dataset", "params": {"data": "data.yaml", "split": "train"}},
    "letterbox": {"plugin": "letterbox", "input": "source"},
    "batch": {"plugin": "collate", "input": "letterbox", "params": {"batch": 2}},
    "sink": {"plugin": "throughput", "input": "batch"}
  },
  "monitors": )" + monitors + R"(
})");
  return dir + "/inspect.json";
}

}  // namespace yoloflow::test
