// coco_json: a data source reading a dataset in COCO's detection format: one JSON file
// (`images`, `annotations`, `categories`) beside a folder of images.
//   - COCO boxes are [x, y, width, height] in pixels of the original image; samples carry
//     [x1, y1, x2, y2] in pixels of the resized image, so boxes are scaled with it.
//   - Category ids are sparse (COCO's run 1..90 with gaps): sorted by id they become the
//     contiguous class indices 0..N-1, named by the categories' names.
//   - An annotation's `segmentation` polygon, when it is one part, is the instance's outline
//     (Sample::polygons, declared with gives(Boxes | Polygons)): every shipped augmentation
//     moves it with the pixels and takes the box from it after a warp, as for YOLO segment
//     labels. An object in several parts keeps its box alone: one part's outline would shrink
//     its box after a warp.
//   - Bad annotations never stop a run: each is dropped (or clipped) and reported with the
//     file and its index in `annotations`; crowd annotations are skipped, as YOLO
//     converters do. Images missing on disk are skipped and reported.
//
// Example stage:
//   "source": {"plugin": "coco_json", "params": {"folder": "data/coco-val"}}
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "yoloflow/annotations.h"
#include "yoloflow/error.h"
#include "yoloflow/plugin.h"
#include "yoloflow/source.h"

namespace {

namespace fs = std::filesystem;
using yoloflow::json;

struct NormalizedBox {
  int cls = 0;
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // 0..1 of the original image
  std::vector<double> outline;            // x, y, x, y, ... 0..1 of the original image; empty: none
};

struct Entry {
  std::string path;
  int width = 0, height = 0;  // as instances.json states them
  std::vector<NormalizedBox> boxes;
};

// The long side becomes imgsz, as the SDK asks of sources (and yolo_dataset does).
cv::Size resized_size(int w0, int h0, int imgsz) {
  const double r = static_cast<double>(imgsz) / std::max(w0, h0);
  if (r == 1.0) return {w0, h0};
  return {std::max(std::min(static_cast<int>(std::ceil(w0 * r)), imgsz), 1),
          std::max(std::min(static_cast<int>(std::ceil(h0 * r)), imgsz), 1)};
}

class CocoJson final : public yoloflow::DataSource {
 public:
  static yoloflow::Schema schema() {
    yoloflow::Schema s;
    s.add_path("folder").required().fixed().doc(
        "Dataset folder holding the annotations file and the images folder.");
    s.add_string("annotations", "instances.json").fixed().doc("COCO JSON file, relative to `folder`.");
    s.add_string("images", "images").fixed().doc(
        "Folder of the images, relative to `folder`; `file_name` entries are relative to it.");
    return s;
  }

  void configure(const yoloflow::Params& params, const yoloflow::StageContext& context) override {
    imgsz_ = context.imgsz;
    const fs::path folder(params.get_string("folder"));
    const std::string json_file = (folder / params.get_string("annotations")).string();
    const std::string image_dir = (folder / params.get_string("images")).string();
    if (json_file == scanned_) return;  // configured again at an epoch boundary: keep the scan
    scan(json_file, image_dir);
    scanned_ = json_file;
  }

  std::size_t size() const override { return entries_.size(); }

  yoloflow::Sample load(std::size_t index) override {
    const Entry& e = entries_.at(index);
    cv::Mat original = cv::imread(e.path, cv::IMREAD_COLOR);
    if (original.empty()) {
      add_issue({e.path, "cannot decode image at load time", "sample not loaded"});
      throw yoloflow::Error("coco_json: cannot decode image '" + e.path + "'");
    }
    if (original.cols != e.width || original.rows != e.height) {
      const std::string problem = "image is " + std::to_string(original.cols) + "x" + std::to_string(original.rows) +
                                  ", " + json_file_ + " says " + std::to_string(e.width) + "x" + std::to_string(e.height);
      add_issue({e.path, problem, "sample not loaded"});
      throw yoloflow::InvalidInput("coco_json: " + e.path + ": " + problem);
    }
    yoloflow::Sample s;
    s.index = index;
    s.path = e.path;
    const cv::Size size = resized_size(original.cols, original.rows, imgsz_);
    if (size.width != original.cols || size.height != original.rows) {
      // Area averaging when shrinking keeps thin structures; linear when enlarging.
      cv::resize(original, s.image, size, 0, 0, size.width < original.cols ? cv::INTER_AREA : cv::INTER_LINEAR);
    } else {
      s.image = original;
    }
    if (!s.image.isContinuous()) s.image = s.image.clone();
    s.geometry.original_width = original.cols;
    s.geometry.original_height = original.rows;
    s.geometry.ratio_x = static_cast<double>(s.image.cols) / original.cols;
    s.geometry.ratio_y = static_cast<double>(s.image.rows) / original.rows;
    const double W = s.image.cols, H = s.image.rows;
    bool outlined = false;
    for (const auto& b : e.boxes) {
      yoloflow::Box p;
      p.cls = b.cls;
      p.x1 = static_cast<float>(b.x1 * W);
      p.y1 = static_cast<float>(b.y1 * H);
      p.x2 = static_cast<float>(b.x2 * W);
      p.y2 = static_cast<float>(b.y2 * H);
      s.boxes.push_back(p);
      outlined = outlined || !b.outline.empty();
    }
    if (outlined) {  // one outline per box, empty where an instance has none
      for (const auto& b : e.boxes) {
        yoloflow::Polygon poly;
        for (std::size_t k = 0; k + 1 < b.outline.size(); k += 2) {
          poly.emplace_back(static_cast<float>(b.outline[k] * W), static_cast<float>(b.outline[k + 1] * H));
        }
        s.polygons.push_back(std::move(poly));
      }
      // As Ultralytics resamples outlines (and yolo_dataset does): boxes after a warp then
      // come from the same points.
      yoloflow::resample_polygons(s.polygons);
    }
    return s;
  }

  yoloflow::DatasetInfo info() const override { return info_; }

  std::vector<yoloflow::DataIssue> issues() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return issues_;
  }

 private:
  void add_issue(yoloflow::DataIssue issue) {
    std::lock_guard<std::mutex> lock(mutex_);
    issues_.push_back(std::move(issue));
  }

  // A problem of annotation `i`: reported, the box dropped or clipped.
  void annotation_issue(std::size_t i, const std::string& problem, const std::string& action) {
    add_issue({json_file_, "annotations[" + std::to_string(i) + "]: " + problem, action});
  }

  void scan(const std::string& json_file, const std::string& image_dir) {
    json_file_ = json_file;
    entries_.clear();
    issues_.clear();
    std::ifstream in(json_file);
    if (!in) throw yoloflow::InvalidInput("coco_json: cannot read " + json_file);
    json doc;
    try {
      doc = json::parse(in);
    } catch (const std::exception& e) {
      throw yoloflow::InvalidInput("coco_json: " + json_file + " is not valid JSON: " + e.what());
    }
    for (const char* key : {"images", "annotations", "categories"}) {
      if (!doc.contains(key) || !doc[key].is_array()) {
        throw yoloflow::InvalidInput("coco_json: " + json_file + ": no '" + key + "' array (not a COCO detection file)");
      }
    }
    // Categories sorted by id give the class indices.
    std::map<std::int64_t, std::string> categories;
    for (std::size_t i = 0; i < doc["categories"].size(); ++i) {
      const json& c = doc["categories"][i];
      if (!c.is_object() || !c.contains("id") || !c["id"].is_number_integer()) {
        throw yoloflow::InvalidInput("coco_json: " + json_file + ": categories[" + std::to_string(i) + "] has no integer id");
      }
      const auto id = c["id"].get<std::int64_t>();
      if (categories.count(id)) {
        throw yoloflow::InvalidInput("coco_json: " + json_file + ": categories[" + std::to_string(i) + "]: id " +
                                     std::to_string(id) + " is used twice");
      }
      categories[id] = c.value("name", std::to_string(id));
    }
    std::map<std::int64_t, int> class_of;
    info_ = {};
    info_.root = fs::path(json_file).parent_path().string();
    for (const auto& [id, name] : categories) {
      class_of[id] = static_cast<int>(info_.names.size());
      info_.names.push_back(name);
    }
    // Images by id; those missing on disk are dropped with their annotations.
    std::map<std::int64_t, std::size_t> entry_of;
    std::vector<Entry> all;
    for (std::size_t i = 0; i < doc["images"].size(); ++i) {
      const json& im = doc["images"][i];
      const std::string where = "images[" + std::to_string(i) + "]";
      if (!im.is_object() || !im.contains("id") || !im["id"].is_number_integer() || !im.contains("file_name") ||
          !im["file_name"].is_string() || !im.contains("width") || !im["width"].is_number_integer() ||
          !im.contains("height") || !im["height"].is_number_integer() || im["width"].get<int>() <= 0 ||
          im["height"].get<int>() <= 0) {
        add_issue({json_file, where + ": needs integer id, file_name, and positive integer width and height",
                   "skipped image"});
        continue;
      }
      Entry e;
      e.path = (fs::path(image_dir) / im["file_name"].get<std::string>()).lexically_normal().string();
      e.width = im["width"].get<int>();
      e.height = im["height"].get<int>();
      std::error_code ec;
      if (!fs::is_regular_file(e.path, ec)) {
        add_issue({e.path, "image missing (" + where + ")", "skipped image"});
        continue;
      }
      entry_of[im["id"].get<std::int64_t>()] = all.size();
      all.push_back(std::move(e));
    }
    const json& anns = doc["annotations"];
    for (std::size_t i = 0; i < anns.size(); ++i) {
      const json& a = anns[i];
      if (!a.is_object() || !a.contains("image_id") || !a["image_id"].is_number_integer() ||
          !a.contains("category_id") || !a["category_id"].is_number_integer()) {
        annotation_issue(i, "needs integer image_id and category_id", "dropped box");
        continue;
      }
      if (a.value("iscrowd", 0) != 0) continue;  // crowd regions are not single objects
      const auto image = entry_of.find(a["image_id"].get<std::int64_t>());
      if (image == entry_of.end()) {
        annotation_issue(i, "image_id " + std::to_string(a["image_id"].get<std::int64_t>()) +
                                " is not a usable image of this file", "dropped box");
        continue;
      }
      const auto cls = class_of.find(a["category_id"].get<std::int64_t>());
      if (cls == class_of.end()) {
        annotation_issue(i, "category_id " + std::to_string(a["category_id"].get<std::int64_t>()) +
                                " is not in categories", "dropped box");
        continue;
      }
      const json& bbox = a.contains("bbox") ? a["bbox"] : json();
      if (!bbox.is_array() || bbox.size() != 4 ||
          !std::all_of(bbox.begin(), bbox.end(), [](const json& v) { return v.is_number(); })) {
        annotation_issue(i, "bbox is not [x, y, width, height]", "dropped box");
        continue;
      }
      Entry& e = all[image->second];
      const double x = bbox[0].get<double>(), y = bbox[1].get<double>();
      const double w = bbox[2].get<double>(), h = bbox[3].get<double>();
      if (!(w > 0) || !(h > 0)) {
        annotation_issue(i, "bbox width and height must be positive (is " + bbox.dump() + ")", "dropped box");
        continue;
      }
      // Clipped to the image; a box wholly outside is dropped.
      const double x1 = std::clamp(x, 0.0, double(e.width)), y1 = std::clamp(y, 0.0, double(e.height));
      const double x2 = std::clamp(x + w, 0.0, double(e.width)), y2 = std::clamp(y + h, 0.0, double(e.height));
      if (x2 <= x1 || y2 <= y1) {
        annotation_issue(i, "bbox " + bbox.dump() + " lies outside its " + std::to_string(e.width) + "x" +
                                std::to_string(e.height) + " image", "dropped box");
        continue;
      }
      if (x1 != x || y1 != y || x2 != x + w || y2 != y + h) {
        annotation_issue(i, "bbox " + bbox.dump() + " extends beyond its image", "clipped box");
      }
      NormalizedBox box{cls->second, x1 / e.width, y1 / e.height, x2 / e.width, y2 / e.height, {}};
      box.outline = outline(a, i, e.width, e.height);
      e.boxes.push_back(std::move(box));
    }
    entries_ = std::move(all);
    info_.images = entries_.size();
    for (const auto& e : entries_) info_.boxes += e.boxes.size();
    if (entries_.empty()) throw yoloflow::InvalidInput("coco_json: " + json_file + ": no usable image");
  }

  // The annotation's `segmentation` as one outline, 0..1 of the image and clipped to it; empty
  // when it has none, is in several parts or is a run-length mask (reported when malformed).
  std::vector<double> outline(const json& a, std::size_t i, int width, int height) {
    if (!a.contains("segmentation")) return {};
    const json& seg = a["segmentation"];
    if (!seg.is_array() || seg.size() != 1) return {};  // none, several parts, or a run-length mask
    const json& part = seg[0];
    const bool numbers = part.is_array() && std::all_of(part.begin(), part.end(), [](const json& v) {
      return v.is_number() && std::isfinite(v.get<double>());
    });
    if (!numbers || part.size() % 2 != 0 || part.size() < 6) {
      annotation_issue(i, "segmentation is not one polygon of 3 points or more", "kept box without outline");
      return {};
    }
    std::vector<double> out;
    out.reserve(part.size());
    for (std::size_t k = 0; k < part.size(); k += 2) {
      out.push_back(std::clamp(part[k].get<double>() / width, 0.0, 1.0));
      out.push_back(std::clamp(part[k + 1].get<double>() / height, 0.0, 1.0));
    }
    return out;
  }

  int imgsz_ = 640;
  std::string scanned_, json_file_;
  std::vector<Entry> entries_;
  yoloflow::DatasetInfo info_;
  mutable std::mutex mutex_;
  std::vector<yoloflow::DataIssue> issues_;
};

void register_components(yoloflow::Registrar& registrar) {
  registrar.add_source<CocoJson>(
      "coco_json", CocoJson::schema(),
      "Reads a COCO detection JSON (images, annotations, categories) and its image folder; sparse category ids "
      "become contiguous classes, one-part segmentation polygons become outlines, bad annotations are dropped "
      "and reported.",
      yoloflow::gives(yoloflow::Field::Boxes | yoloflow::Field::Polygons));
}

}  // namespace

YOLOFLOW_PLUGIN("example_coco_json", "1.0.0", register_components)
