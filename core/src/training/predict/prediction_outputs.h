#pragma once
// What `yoloflow predict` writes, apart from the network (predict_sources.h lists what it
// reads): the output folder (annotated images, predictions.json, and on request YOLO-format
// label files and crops). OpenCV and JSON only.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include "training/predict/predictor.h"

namespace yoloflow::core {

// Whether `path` has an image file extension predict reads (jpg, png, bmp, tif, webp, ...).
bool has_image_extension(const std::string& path);


// What a PredictionWriter writes, and how it draws (Ultralytics' predict arguments in brackets,
// with their defaults: label files and their confidence column only when asked for).
struct PredictionOutputs {
  bool images = true;       // annotated images and videos (save)
  bool labels = false;      // labels/*.txt (save_txt)
  bool label_conf = false;  // the confidence column in them (save_conf; nothing without labels)
  bool crops = false;       // crops/<class name>/<stem>.jpg per detection (save_crop)
  bool boxes = true;        // draw the boxes (show_boxes)
  bool box_labels = true;   // their class name tags (show_labels)
  bool box_conf = true;     // the confidence in the tags (show_conf)
  int line_width = 0;       // box line width in pixels; 0: grows with the image (line_width)
};

// Writes into `dir` (created when missing), per image:
//   <file name>          the image with its detections drawn
//   labels/<stem>.txt    with `labels`: one line per detection, class cx cy w h [conf],
//                        normalised to the original image (empty file: nothing detected)
//   crops/<name>/<stem>.jpg  each detection cut out (stem2.jpg, stem3.jpg ... for more of a class)
// per video: <stem>.avi (MJPG) of the predicted frames drawn, and labels/<stem>_<frame>.txt per
// frame (frame 1, 2, ... of those predicted) with `labels`, as Ultralytics names them; and, on finish(),
// predictions.json: one entry per image or frame with its detections in pixels.
class PredictionWriter {
 public:
  PredictionWriter(std::string dir, std::vector<std::string> names, const PredictionOutputs& outputs);
  ~PredictionWriter();
  // Throws yoloflow::Error naming the file that could not be written.
  void add(const std::string& image_path, const cv::Mat& image, const ImagePrediction& prediction);
  // Frame `frame` (1-based) of `video_path`, which plays at `fps`.
  void add_frame(const std::string& video_path, int frame, double fps, const cv::Mat& image,
                 const ImagePrediction& prediction);
  void finish();
  const std::string& dir() const { return dir_; }

 private:
  void write_labels(const std::string& stem, const ImagePrediction& p);
  nlohmann::ordered_json entry(const std::string& path, const ImagePrediction& p) const;
  cv::Mat drawn(const cv::Mat& image, const ImagePrediction& p) const;
  void write_crops(const std::string& stem, const cv::Mat& image, const ImagePrediction& p);

  std::string dir_;
  std::vector<std::string> names_;
  PredictionOutputs outputs_;
  nlohmann::ordered_json entries_ = nlohmann::ordered_json::array();  // keys in the documented order
  struct Videos;
  std::unique_ptr<Videos> videos_;  // the open video writers, by output file
};

// `image` (8-bit BGR) with `prediction` drawn as predict draws it: masks, boxes, their tags (by
// `outputs`' boxes, box_labels, box_conf, line_width).
cv::Mat draw_prediction(const cv::Mat& image, const ImagePrediction& prediction, const std::vector<std::string>& names,
                        const PredictionOutputs& outputs);

// "3 persons, 1 dog" (Ultralytics' per-image summary); "no detections" when empty.
std::string count_summary(const ImagePrediction& prediction, const std::vector<std::string>& names);

}  // namespace yoloflow::core
