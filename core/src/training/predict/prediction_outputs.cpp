#include "training/predict/prediction_outputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "training/detect/box_drawing.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

// Image formats OpenCV reads here (Ultralytics' list less dng/mpo/heic, which it cannot).
const char* const kImageExtensions[] = {".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp", ".pfm"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string class_name(int cls, const std::vector<std::string>& names) {
  return cls >= 0 && cls < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(cls)] : std::to_string(cls);
}

}  // namespace

bool has_image_extension(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  return std::find(std::begin(kImageExtensions), std::end(kImageExtensions), ext) != std::end(kImageExtensions);
}

std::vector<std::string> list_images(const std::string& source) {
  std::error_code ec;
  if (!fs::exists(source, ec)) throw InvalidInput("--source " + source + ": no such file or folder");
  if (fs::is_directory(source, ec)) {
    std::vector<std::string> images;
    for (const auto& e : fs::directory_iterator(source, ec)) {
      if (e.is_regular_file() && has_image_extension(e.path().string())) images.push_back(e.path().string());
    }
    if (ec) throw InvalidInput("--source " + source + ": cannot list the folder: " + ec.message());
    if (images.empty()) {
      throw InvalidInput("--source " + source + ": the folder holds no images (.jpg, .png, .bmp, .tif, .webp)");
    }
    std::sort(images.begin(), images.end());
    return images;
  }
  if (!has_image_extension(source)) {
    throw InvalidInput("--source " + source + ": not an image (.jpg, .png, .bmp, .tif, .webp) or a folder of images");
  }
  // A named pipe or a device would block or never end.
  if (!fs::is_regular_file(source, ec)) throw InvalidInput("--source " + source + ": not a regular file");
  return {source};
}

PredictionWriter::PredictionWriter(std::string dir, std::vector<std::string> names, bool save_images)
    : dir_(std::move(dir)), names_(std::move(names)), save_images_(save_images) {
  std::error_code ec;
  fs::create_directories(fs::path(dir_) / "labels", ec);
  if (!fs::is_directory(fs::path(dir_) / "labels")) {
    throw Error("cannot create the output folder " + (fs::path(dir_) / "labels").string() +
                (ec ? ": " + ec.message() : std::string()));
  }
}

void PredictionWriter::add(const std::string& image_path, const cv::Mat& image, const ImagePrediction& p) {
  const fs::path file = fs::path(image_path).filename();
  const double w = std::max(p.width, 1), h = std::max(p.height, 1);
  std::ostringstream txt;
  txt.precision(6);
  nlohmann::ordered_json dets = nlohmann::ordered_json::array();
  // Hundredths of a pixel and five decimals of confidence: no float noise in the file.
  auto px = [](float v) { return std::round(static_cast<double>(v) * 100.0) / 100.0; };
  for (const auto& d : p.detections) {
    txt << d.cls << ' ' << (d.x1 + d.x2) / 2 / w << ' ' << (d.y1 + d.y2) / 2 / h << ' ' << (d.x2 - d.x1) / w << ' '
        << (d.y2 - d.y1) / h << ' ' << d.confidence << '\n';
    nlohmann::ordered_json det;
    det["class"] = d.cls;
    det["name"] = class_name(d.cls, names_);
    det["confidence"] = std::round(static_cast<double>(d.confidence) * 1e5) / 1e5;
    det["box_xyxy"] = {px(d.x1), px(d.y1), px(d.x2), px(d.y2)};
    dets.push_back(std::move(det));
  }
  const fs::path label_path = fs::path(dir_) / "labels" / file.stem().concat(".txt");
  write_file_atomic(label_path.string(), txt.str());
  nlohmann::ordered_json entry;
  entry["file"] = image_path;
  entry["width"] = p.width;
  entry["height"] = p.height;
  entry["detections"] = std::move(dets);
  entries_.push_back(std::move(entry));
  if (!save_images_) return;

  cv::Mat drawn = image.clone();
  // Line width grows with the image, as Ultralytics' annotator does; text scales with it.
  const int lw = std::max(static_cast<int>(std::lround((p.width + p.height) / 2.0 * 0.003)), 2);
  // Lowest confidence first, so the strongest boxes end on top.
  for (auto it = p.detections.rbegin(); it != p.detections.rend(); ++it) {
    std::ostringstream label;
    label.precision(2);
    label << class_name(it->cls, names_) << ' ' << std::fixed << it->confidence;
    draw_labelled_box(drawn, cv::Point(static_cast<int>(std::lround(it->x1)), static_cast<int>(std::lround(it->y1))),
                      cv::Point(static_cast<int>(std::lround(it->x2)), static_cast<int>(std::lround(it->y2))), it->cls,
                      label.str(), lw / 3.0, lw);
  }
  // Encoded first, then written atomically: an interrupted predict leaves whole images.
  const std::string out = (fs::path(dir_) / file).string();
  std::vector<unsigned char> encoded;
  bool ok = false;
  try {
    ok = cv::imencode(file.extension().string(), drawn, encoded);
  } catch (const cv::Exception&) {
    ok = false;
  }
  if (!ok) throw Error("cannot encode the annotated image " + out + " as " + file.extension().string());
  write_file_atomic(out, std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
}

void PredictionWriter::finish() {
  write_file_atomic((fs::path(dir_) / "predictions.json").string(), entries_.dump(2) + "\n");
}

std::string count_summary(const ImagePrediction& p, const std::vector<std::string>& names) {
  if (p.detections.empty()) return "no detections";
  std::map<int, int> counts;
  for (const auto& d : p.detections) ++counts[d.cls];
  std::ostringstream os;
  bool first = true;
  for (const auto& [cls, n] : counts) {
    os << (first ? "" : ", ") << n << ' ' << class_name(cls, names) << (n > 1 ? "s" : "");
    first = false;
  }
  return os.str();
}

}  // namespace yoloflow::core
