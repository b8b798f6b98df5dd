#include "training/predict/prediction_outputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#if YOLOFLOW_WITH_VIDEO
#include <opencv2/videoio.hpp>
#endif

#include "runtime/util/ascii_lower.h"
#include "runtime/util/atomic_file.h"
#include "runtime/util/path_words.h"
#include "training/detect/box_drawing.h"
#include "training/predict/outlines.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

// Image formats OpenCV reads here (Ultralytics' list less dng/mpo/heic, which it cannot).
const char* const kImageExtensions[] = {".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp", ".pfm"};

std::string class_name(int cls, const std::vector<std::string>& names) {
  return cls >= 0 && cls < static_cast<int>(names.size()) ? names[static_cast<std::size_t>(cls)] : std::to_string(cls);
}

}  // namespace

bool has_image_extension(const std::string& path) {
  const std::string ext = ascii_lower(fs::path(path).extension().string());
  return std::find(std::begin(kImageExtensions), std::end(kImageExtensions), ext) != std::end(kImageExtensions);
}

struct PredictionWriter::Videos {
#if YOLOFLOW_WITH_VIDEO
  // The encoder writes to the atomic writer's temporary name (which keeps the extension, so
  // the container is the one asked for); finish() renames it, so a video is either whole or
  // absent, and one left unfinished leaves no file behind.
  struct Video {
    std::unique_ptr<AtomicFileWriter> file;
    cv::VideoWriter writer;
  };
  std::map<std::string, Video> open;
#endif
};

PredictionWriter::PredictionWriter(std::string dir, std::vector<std::string> names, const PredictionOutputs& outputs)
    : dir_(std::move(dir)), names_(std::move(names)), outputs_(outputs), videos_(std::make_unique<Videos>()) {
  check_path_word("the output folder", dir_);
  // crops/<class name>/: a class name is a folder name there, and must stay inside crops/.
  if (outputs_.crops) {
    for (const auto& n : names_) {
      if (!n.empty()) check_name_word("the class name", n);
    }
  }
  std::error_code ec;
  const fs::path folder = outputs_.labels ? fs::path(dir_) / "labels" : fs::path(dir_);
  fs::create_directories(folder, ec);
  if (!fs::is_directory(folder)) {
    throw Error("cannot create the output folder " + folder.string() + (ec ? ": " + ec.message() : std::string()));
  }
}

PredictionWriter::~PredictionWriter() = default;

void PredictionWriter::write_labels(const std::string& stem, const ImagePrediction& p) {
  if (!outputs_.labels) return;
  const double w = std::max(p.width, 1), h = std::max(p.height, 1);
  std::ostringstream txt;
  txt.precision(6);
  for (const auto& d : p.detections) {
    if (!d.outlines.empty()) {
      // A segmentation model's: the instance's polygon, as Ultralytics' segment labels (x y pairs,
      // normalised), its parts joined into one.
      txt << d.cls;
      for (const auto& q : joined_polygon(d.outlines)) txt << ' ' << q.x / w << ' ' << q.y / h;
    } else {
      txt << d.cls << ' ' << (d.x1 + d.x2) / 2 / w << ' ' << (d.y1 + d.y2) / 2 / h << ' ' << (d.x2 - d.x1) / w << ' '
          << (d.y2 - d.y1) / h;
    }
    if (outputs_.label_conf) txt << ' ' << d.confidence;
    txt << '\n';
  }
  write_file_atomic((fs::path(dir_) / "labels" / (stem + ".txt")).string(), txt.str());
}

nlohmann::ordered_json PredictionWriter::entry(const std::string& path, const ImagePrediction& p) const {
  nlohmann::ordered_json dets = nlohmann::ordered_json::array();
  // Hundredths of a pixel and five decimals of confidence: no float noise in the file.
  auto px = [](float v) { return std::round(static_cast<double>(v) * 100.0) / 100.0; };
  for (const auto& d : p.detections) {
    nlohmann::ordered_json det;
    det["class"] = d.cls;
    det["name"] = class_name(d.cls, names_);
    det["confidence"] = std::round(static_cast<double>(d.confidence) * 1e5) / 1e5;
    det["box_xyxy"] = {px(d.x1), px(d.y1), px(d.x2), px(d.y2)};
    if (!d.outlines.empty()) {
      // A segmentation model's: the outer contours of its mask, each a list of [x, y].
      nlohmann::ordered_json outlines = nlohmann::ordered_json::array();
      for (const auto& part : d.outlines) {
        nlohmann::ordered_json points = nlohmann::ordered_json::array();
        for (const auto& q : part) points.push_back({px(q.x), px(q.y)});
        outlines.push_back(std::move(points));
      }
      det["outlines"] = std::move(outlines);
    }
    dets.push_back(std::move(det));
  }
  nlohmann::ordered_json e;
  e["file"] = path;
  e["width"] = p.width;
  e["height"] = p.height;
  e["detections"] = std::move(dets);
  return e;
}

cv::Mat PredictionWriter::drawn(const cv::Mat& image, const ImagePrediction& p) const {
  return draw_prediction(image, p, names_, outputs_);
}

cv::Mat draw_prediction(const cv::Mat& image, const ImagePrediction& p, const std::vector<std::string>& names,
                        const PredictionOutputs& outputs) {
  cv::Mat out = image.clone();
  // A segmentation model's masks first, filled in their class's colour at half opacity (as
  // Ultralytics draws them), the strongest detection on top; then the boxes.
  bool any_mask = false;
  for (const auto& d : p.detections) any_mask = any_mask || !d.outlines.empty();
  if (any_mask) {
    cv::Mat colour(out.size(), out.type(), cv::Scalar(0, 0, 0));
    cv::Mat inside(out.size(), CV_8U, cv::Scalar(0));
    for (auto it = p.detections.rbegin(); it != p.detections.rend(); ++it) {
      if (it->outlines.empty()) continue;
      std::vector<std::vector<cv::Point>> parts;
      for (const auto& part : it->outlines) {
        std::vector<cv::Point> points;
        for (const auto& q : part) points.emplace_back(static_cast<int>(std::lround(q.x)), static_cast<int>(std::lround(q.y)));
        parts.push_back(std::move(points));
      }
      cv::fillPoly(colour, parts, class_colour(it->cls), cv::LINE_8);
      cv::fillPoly(inside, parts, cv::Scalar(255), cv::LINE_8);
    }
    cv::Mat blended;
    cv::addWeighted(out, 0.5, colour, 0.5, 0.0, blended);
    blended.copyTo(out, inside);
  }
  if (!outputs.boxes) return out;
  // Line width grows with the image, as Ultralytics' annotator does; text scales with it.
  const int lw = outputs.line_width > 0 ? outputs.line_width
                                         : std::max(static_cast<int>(std::lround((p.width + p.height) / 2.0 * 0.003)), 2);
  // Lowest confidence first, so the strongest boxes end on top.
  for (auto it = p.detections.rbegin(); it != p.detections.rend(); ++it) {
    std::ostringstream label;
    if (outputs.box_labels) {
      label.precision(2);
      label << class_name(it->cls, names);
      if (outputs.box_conf) label << ' ' << std::fixed << it->confidence;
    }
    draw_labelled_box(out, cv::Point(static_cast<int>(std::lround(it->x1)), static_cast<int>(std::lround(it->y1))),
                      cv::Point(static_cast<int>(std::lround(it->x2)), static_cast<int>(std::lround(it->y2))), it->cls,
                      label.str(), lw / 3.0, lw);
  }
  return out;
}

void PredictionWriter::write_crops(const std::string& stem, const cv::Mat& image, const ImagePrediction& p) {
  if (!outputs_.crops) return;
  for (const auto& d : p.detections) {
    // As Ultralytics cuts them: the box grown by 2% and 10 pixels, clipped to the image.
    const double cx = (d.x1 + d.x2) / 2.0, cy = (d.y1 + d.y2) / 2.0;
    const double w = (d.x2 - d.x1) * 1.02 + 10, h = (d.y2 - d.y1) * 1.02 + 10;
    const int x1 = std::clamp(static_cast<int>(cx - w / 2), 0, image.cols), x2 = std::clamp(static_cast<int>(cx + w / 2), 0, image.cols);
    const int y1 = std::clamp(static_cast<int>(cy - h / 2), 0, image.rows), y2 = std::clamp(static_cast<int>(cy + h / 2), 0, image.rows);
    if (x2 <= x1 || y2 <= y1) continue;
    const fs::path folder = fs::path(dir_) / "crops" / class_name(d.cls, names_);
    std::error_code ec;
    fs::create_directories(folder, ec);
    fs::path file = folder / (stem + ".jpg");
    for (int n = 2; fs::exists(file, ec); ++n) file = folder / (stem + std::to_string(n) + ".jpg");
    std::vector<unsigned char> encoded;
    if (!cv::imencode(".jpg", image(cv::Rect(x1, y1, x2 - x1, y2 - y1)), encoded)) {
      throw Error("cannot encode the crop " + file.string());
    }
    write_file_atomic(file.string(), std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
  }
}

void PredictionWriter::add(const std::string& image_path, const cv::Mat& image, const ImagePrediction& p) {
  const fs::path file = fs::path(image_path).filename();
  write_labels(file.stem().string(), p);
  entries_.push_back(entry(image_path, p));
  write_crops(file.stem().string(), image, p);
  if (!outputs_.images) return;
  // Encoded first, then written atomically: an interrupted predict leaves whole images.
  const std::string out = (fs::path(dir_) / file).string();
  std::vector<unsigned char> encoded;
  bool ok = false;
  try {
    ok = cv::imencode(file.extension().string(), drawn(image, p), encoded);
  } catch (const cv::Exception&) {
    ok = false;
  }
  if (!ok) throw Error("cannot encode the annotated image " + out + " as " + file.extension().string());
  write_file_atomic(out, std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
}

void PredictionWriter::add_frame(const std::string& video_path, int frame, double fps, const cv::Mat& image,
                                 const ImagePrediction& p) {
  const std::string stem = fs::path(video_path).stem().string() + "_" + std::to_string(frame);
  write_labels(stem, p);
  nlohmann::ordered_json e = entry(video_path, p);
  e["frame"] = frame;
  entries_.push_back(std::move(e));
  write_crops(stem, image, p);
  if (!outputs_.images) return;
  // Ultralytics' video on Linux: <stem>.avi, Motion JPEG, at the source's frame rate.
  const std::string out = (fs::path(dir_) / fs::path(video_path).filename()).replace_extension(".avi").string();
#if YOLOFLOW_WITH_VIDEO
  Videos::Video& video = videos_->open[out];
  if (!video.writer.isOpened()) {
    video.file = std::make_unique<AtomicFileWriter>(out);
    video.writer.open(video.file->temp_path(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps > 0 ? fps : 30.0,
                      cv::Size(image.cols, image.rows));
    if (!video.writer.isOpened()) throw Error("cannot write the annotated video " + out + " (OpenCV has no MJPG writer here)");
  }
  video.writer.write(drawn(image, p));
#else
  (void)fps;
  throw Error("cannot write the annotated video " + out + ": this yoloflow was built with an OpenCV without videoio");
#endif
}

void PredictionWriter::finish() {
#if YOLOFLOW_WITH_VIDEO
  for (auto& [path, video] : videos_->open) {
    video.writer.release();
    video.file->commit();
  }
  videos_->open.clear();
#endif
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
