#include "runtime/fetch/builtin_datasets.h"

#include <filesystem>

#include "runtime/fetch/folder_lock.h"
#include "runtime/fetch/named_assets.h"
#include "runtime/fetch/zip_unpack.h"
#include "runtime/util/atomic_file.h"
#include "runtime/util/remove_tree.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

struct BuiltinDataset {
  const char* name;   // the word: coco8 for data=coco8.yaml
  const char* train;  // image folders inside the unpacked dataset
  const char* val;
};

// The splits each archive holds (coco128 validates on its training images, as its yaml says).
constexpr BuiltinDataset kDatasets[] = {{"coco8", "images/train", "images/val"},
                                        {"coco8-seg", "images/train", "images/val"},
                                        {"coco128", "images/train2017", "images/train2017"},
                                        {"coco128-seg", "images/train2017", "images/train2017"}};

// COCO's 80 detection classes, in the order of their ids.
constexpr const char* kCocoNames[] = {
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
    "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
    "tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
    "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
    "potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard",
    "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase",
    "scissors", "teddy bear", "hair drier", "toothbrush"};

const BuiltinDataset* find(const std::string& word) {
  for (const auto& d : kDatasets) {
    if (word == std::string(d.name) + ".yaml") return &d;
  }
  return nullptr;
}

std::string yaml_text(const BuiltinDataset& d) {
  std::string s = std::string("# ") + d.name + ", fetched by yoloflow from Ultralytics' release assets\n" +
                  "path: " + d.name + "\ntrain: " + d.train + "\nval: " + d.val + "\n\nnames:\n";
  int id = 0;
  for (const char* n : kCocoNames) s += "  " + std::to_string(id++) + ": " + n + "\n";
  return s;
}

// The archive unpacked to `folder`: its files are under one folder of the dataset's name (as
// Ultralytics packs them), or at its top.
void unpack(const std::string& zip, const std::string& folder, const std::string& name) {
  const std::string staging = folder + ".staging";
  remove_tree(staging);  // a previous unpacking cut short
  const ZipSummary s = unzip_to_folder(zip, staging);
  std::error_code ec;
  const fs::path inner = fs::path(staging) / name;
  fs::rename(fs::is_directory(inner, ec) ? inner : fs::path(staging), folder, ec);
  if (ec) {
    remove_tree(staging);
    throw InvalidInput("cannot move the unpacked " + zip + " to " + folder + ": " + ec.message());
  }
  remove_tree(staging);
  YF_LOG_INFO("unpacked " << s.files << " files (" << s.bytes << " bytes) from " << zip << " into " << folder);
}

}  // namespace

bool is_builtin_dataset_name(const std::string& name) { return find(name) != nullptr; }

std::string locate_dataset(const std::string& value) {
  std::error_code ec;
  const BuiltinDataset* d = find(value);
  if (!d || fs::exists(value, ec)) return value;
  const std::string root = datasets_folder();
  const std::string yaml = root + "/" + value;
  const std::string folder = root + "/" + d->name;
  const std::string zip = folder + ".zip";
  if (!fs::is_directory(folder, ec) && !fs::is_regular_file(zip, ec)) {
    const std::string url = assets_base_url() + "/v0.0.0/" + d->name + ".zip";
    fetch_file(url, zip, [](const std::string& part) { check_zip(part); },
               "download it by hand and put it in " + root + " (yoloflow unpacks it there)");
  }
  {
    // One process unpacks; the others wait here and find the folder.
    FolderLock lock(root);
    if (!fs::is_directory(folder, ec)) unpack(zip, folder, d->name);
    fs::remove(zip, ec);  // unpacked: the archive is not needed again
  }
  for (const char* split : {d->train, d->val}) {
    if (!fs::is_directory(fs::path(folder) / split, ec)) {
      throw InvalidInput(value + ": " + folder + " has no " + split + " folder; remove " + folder +
                         " and yoloflow fetches the dataset again");
    }
  }
  if (!fs::is_regular_file(yaml, ec)) write_file_atomic(yaml, yaml_text(*d));
  read_data_yaml(yaml);  // what the pipeline will read, checked now
  return yaml;
}

std::vector<std::string> expand_data_words(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (const auto& word : overrides) {
    out.push_back(word.rfind("data=", 0) == 0 ? "data=" + locate_dataset(word.substr(5)) : word);
  }
  return out;
}

}  // namespace yoloflow::core
