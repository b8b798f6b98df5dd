#pragma once
// `yoloflow predict`'s work on one source file: an image, or a video read frame by frame
// (every vid_stride-th frame, as Ultralytics reads them), each prediction printed in one line
// and handed to the writer; the phases' times summed for the speed line.
#include <cstddef>
#include <string>
#include <vector>

#include "training/predict/prediction_outputs.h"
#include "training/predict/predictor.h"

namespace yoloflow::cli {

struct PredictTally {
  std::size_t predicted = 0, detections = 0;  // images and frames predicted
  double preprocess_ms = 0, inference_ms = 0, postprocess_ms = 0;
  std::vector<std::string> skipped;  // files that could not be decoded
};

// `k` of `n` is where the file stands among the sources, for the progress line. `writer` null:
// nothing written (the command observer, command_observer.h, still gets each prediction).
void predict_image(core::Predictor& predictor, core::PredictionWriter* writer, const std::string& path, std::size_t k,
                   std::size_t n, PredictTally& tally);
// Stops between frames once `stop()` is true.
void predict_video(core::Predictor& predictor, core::PredictionWriter* writer, const std::string& path, int vid_stride,
                   std::size_t k, std::size_t n, bool (*stop)(), PredictTally& tally);

}  // namespace yoloflow::cli
