#include "cli/predict_media.h"

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <opencv2/imgcodecs.hpp>

#include "cli/command_observer.h"
#if YOLOFLOW_WITH_VIDEO
#include <opencv2/videoio.hpp>
#endif

#include "yoloflow/image_header.h"
#include "yoloflow/user_file.h"

namespace yoloflow::cli {
namespace {

std::string ms(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v << "ms";
  return os.str();
}

void count(const core::ImagePrediction& p, PredictTally& tally) {
  tally.preprocess_ms += p.preprocess_ms;
  tally.inference_ms += p.inference_ms;
  tally.postprocess_ms += p.postprocess_ms;
  tally.detections += p.detections.size();
  ++tally.predicted;
}

}  // namespace

void predict_image(core::Predictor& predictor, core::PredictionWriter* writer, const std::string& path, std::size_t k,
                   std::size_t n, PredictTally& tally) {
  std::cout << "image " << k << "/" << n << " " << path << ": ";
  // The header first, as training reads images: a file over the byte budget or an image over the
  // pixel limit is skipped before a decoder allocates it.
  if (const std::string refusal = image_file_refusal(path); !refusal.empty()) {
    std::cout << "skipped: " << refusal << std::endl;
    tally.skipped.push_back(path);
    return;
  }
  cv::Mat image;
  try {
    image = cv::imread(path, cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {
    image.release();  // a decoder that throws on a broken file: the same as unreadable
  }
  if (image.empty()) {
    std::cout << "skipped: cannot decode the image (corrupt or not an image)" << std::endl;
    tally.skipped.push_back(path);
    return;
  }
  const core::ImagePrediction p = predictor.predict(image);
  if (writer != nullptr) writer->add(path, image, p);
  if (CommandObserver* observer = command_observer()) observer->predicted(path, 0, image, p, predictor.names());
  std::cout << p.width << "x" << p.height << ", " << core::count_summary(p, predictor.names()) << ", "
            << ms(p.preprocess_ms + p.inference_ms + p.postprocess_ms) << std::endl;
  count(p, tally);
}

void predict_video(core::Predictor& predictor, core::PredictionWriter* writer, const std::string& path, int vid_stride,
                   std::size_t k, std::size_t n, bool (*stop)(), PredictTally& tally) {
#if !YOLOFLOW_WITH_VIDEO
  (void)predictor, (void)writer, (void)vid_stride, (void)stop;
  std::cout << "video " << k << "/" << n << " " << path << ": skipped: this yoloflow was built with an OpenCV without "
            << "videoio (Debian: libopencv-videoio-dev), so it reads no video" << std::endl;
  tally.skipped.push_back(path);
#else
  // A named pipe or a device would block the demuxer; a loop of links is said as such.
  if (const std::string why = file_refusal(path, FileBudget{~std::uint64_t{0}, "a video"}); !why.empty()) {
    std::cout << "video " << k << "/" << n << " " << path << ": skipped: it " << why << std::endl;
    tally.skipped.push_back(path);
    return;
  }
  cv::VideoCapture capture;
  try {
    capture.open(path);
  } catch (const cv::Exception&) {
    capture.release();
  }
  if (!capture.isOpened()) {
    std::cout << "video " << k << "/" << n << " " << path << ": skipped: cannot decode the video (corrupt, or no "
              << "decoder for it in this OpenCV)" << std::endl;
    tally.skipped.push_back(path);
    return;
  }
  // Frames are decoded by the demuxer's own decoder: its frame size, from the container, is held
  // to the limit of images before the first frame is decoded.
  const auto frame_width = static_cast<std::uint64_t>(std::max(0.0, capture.get(cv::CAP_PROP_FRAME_WIDTH)));
  const auto frame_height = static_cast<std::uint64_t>(std::max(0.0, capture.get(cv::CAP_PROP_FRAME_HEIGHT)));
  if (const std::string refusal = image_size_refusal(frame_width, frame_height); !refusal.empty()) {
    std::cout << "video " << k << "/" << n << " " << path << ": skipped: its frames are " << refusal.substr(refusal.find(':') + 2)
              << std::endl;
    tally.skipped.push_back(path);
    return;
  }
  const double fps = capture.get(cv::CAP_PROP_FPS);
  // Frames predicted, of the stride's share of the video's frame count (a count the container
  // may not know: then only the frame number is shown).
  const auto total = static_cast<long>(capture.get(cv::CAP_PROP_FRAME_COUNT)) / std::max(vid_stride, 1);
  int frame = 0;
  cv::Mat image;
  while (!stop()) {
    // Every vid_stride-th frame: the others are grabbed, not decoded.
    bool more = true;
    for (int s = 0; s < vid_stride && more; ++s) more = capture.grab();
    if (!more || !capture.retrieve(image) || image.empty()) break;
    ++frame;
    const core::ImagePrediction p = predictor.predict(image);
    if (writer != nullptr) writer->add_frame(path, frame, fps, image, p);
    if (CommandObserver* observer = command_observer()) observer->predicted(path, frame, image, p, predictor.names());
    std::cout << "video " << k << "/" << n << " (frame " << frame;
    if (total > 0) std::cout << "/" << total;
    std::cout << ") " << path << ": " << p.width << "x" << p.height << ", " << core::count_summary(p, predictor.names())
              << ", " << ms(p.preprocess_ms + p.inference_ms + p.postprocess_ms) << std::endl;
    count(p, tally);
  }
  if (frame == 0 && !stop()) {
    std::cout << "video " << k << "/" << n << " " << path << ": skipped: no frame could be decoded" << std::endl;
    tally.skipped.push_back(path);
  }
#endif
}

}  // namespace yoloflow::cli
