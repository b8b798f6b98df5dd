#pragma once
// What `yoloflow predict` reads and writes, apart from the network: the list of images a
// source names, and the output folder (annotated images, YOLO-format label files with
// confidences, predictions.json). OpenCV and JSON only.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "training/predict/predictor.h"

namespace yoloflow::core {

// Whether `path` has an image file extension predict reads (jpg, png, bmp, tif, webp, ...).
bool has_image_extension(const std::string& path);

// An image file gives itself; a folder its image files (not recursive), sorted by name.
// Throws InvalidInput naming `source` when it is missing, not an image, or a folder without images.
std::vector<std::string> list_images(const std::string& source);

// Writes into `dir` (created when missing), per image:
//   <file name>          the image with its detections drawn (unless save_images is false)
//   labels/<stem>.txt    one line per detection: class cx cy w h conf, normalised to the
//                        original image (empty file: nothing detected)
// and, on finish(), predictions.json: one entry per image with its detections in pixels.
class PredictionWriter {
 public:
  PredictionWriter(std::string dir, std::vector<std::string> names, bool save_images);
  // Throws yoloflow::Error naming the file that could not be written.
  void add(const std::string& image_path, const cv::Mat& image, const ImagePrediction& prediction);
  void finish();
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> names_;
  bool save_images_;
  nlohmann::ordered_json entries_ = nlohmann::ordered_json::array();  // keys in the documented order
};

// "3 persons, 1 dog" (Ultralytics' per-image summary); "no detections" when empty.
std::string count_summary(const ImagePrediction& prediction, const std::vector<std::string>& names);

}  // namespace yoloflow::core
