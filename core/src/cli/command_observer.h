#pragma once
// What a program that runs yoloflow's commands inside its own process (the Python module,
// python/src/module.cpp) learns of a command beyond its printed lines and exit code, and what it
// may ask of it: the run folder a training wrote, the metrics of a validation, each image's
// prediction (with or without the run folder predict writes), the file an export wrote. One
// observer at a time, for the scope of one command; without one the commands behave as the
// `yoloflow` program's.
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "training/predict/predictor.h"

namespace yoloflow::cli {

class CommandObserver {
 public:
  virtual ~CommandObserver() = default;
  // train / run / predict: the folder the command writes (once it is claimed).
  virtual void run_folder(const std::string& dir) { (void)dir; }
  // train / run: the run ended; `by_signal`: SIGINT or SIGTERM stopped it (resumable when it
  // saved, see the command's lines).
  virtual void run_ended(bool by_signal) { (void)by_signal; }
  // val: metrics.json's document, and the folder it was written to.
  virtual void validated(const std::string& metrics_json, const std::string& dir) { (void)metrics_json, (void)dir; }
  // info: the model's figures as JSON (architecture, layers, parameters, gradients, gflops,
  // imgsz, nc, names: the weights' class names, empty for an architecture).
  virtual void described(const std::string& model_json) { (void)model_json; }
  // export: the file written.
  virtual void exported(const std::string& file) { (void)file; }
  // predict: whether it writes its run folder (annotated images, predictions.json, ...). When
  // false nothing is written and predicted() is the only output.
  virtual bool saves_predictions() const { return true; }
  // predict: one image, or frame `frame` (1-based, 0 for an image) of a video, with its
  // detections; `image` is valid only during the call.
  virtual void predicted(const std::string& path, int frame, const cv::Mat& image,
                         const core::ImagePrediction& prediction, const std::vector<std::string>& names) {
    (void)path, (void)frame, (void)image, (void)prediction, (void)names;
  }
  // predict stops between images (and video frames) once this is true.
  virtual bool stop_requested() const { return false; }
  // Whether a second SIGINT/SIGTERM ends the process at once, as it does the program's; a host
  // whose process must go on (a notebook's kernel) says no: the stop already asked for finishes.
  virtual bool second_interrupt_ends_process() const { return true; }
};

// What the observer of the command running now said of a second interrupt (true without one).
// Async-signal-safe: the signal handlers read it.
bool second_interrupt_ends_process();

// The observer of the command running now; null when there is none.
CommandObserver* command_observer();

// Makes `observer` the command observer until the scope ends (the previous one is restored).
class CommandObserverScope {
 public:
  explicit CommandObserverScope(CommandObserver* observer);
  ~CommandObserverScope();
  CommandObserverScope(const CommandObserverScope&) = delete;
  CommandObserverScope& operator=(const CommandObserverScope&) = delete;

 private:
  CommandObserver* previous_;
};

}  // namespace yoloflow::cli
