// yoloflow._yoloflow: the commands of the `yoloflow` program run inside Python (the same words,
// defaults, checks and one-line refusals), with what they produce handed to Python objects
// (cli/command_observer.h) and Python functions called at the trainer's hooks
// (training/callbacks/host_callbacks.h). The Python package (yoloflow/) builds Ultralytics'
// calls on these few functions. C++ runs with the GIL released; every call into Python takes it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "cli/command_line.h"
#include "cli/command_observer.h"
#include "training/predict/prediction_outputs.h"
#include "training/callbacks/host_callbacks.h"
#include "yoloflow/callback.h"
#include "yoloflow/version.h"

namespace py = pybind11;

namespace yoloflow::python {
namespace {

// Calls methods of a Python object with the GIL held. A Python exception is handed to the
// object's _keep_error (Python's side raises it again once the command returns) and the command
// is asked to stop where it can.
class PythonCalls {
 public:
  explicit PythonCalls(py::object target) : target_(std::move(target)) {}
  ~PythonCalls() {
    py::gil_scoped_acquire gil;
    target_ = py::object();
  }
  PythonCalls(const PythonCalls&) = delete;
  PythonCalls& operator=(const PythonCalls&) = delete;

  // `method(*make_args())`; what it returns as text ("" for None). `make_args` runs with the GIL.
  template <class MakeArgs>
  std::string call(const char* method, MakeArgs&& make_args) const {
    py::gil_scoped_acquire gil;
    try {
      const py::object r = target_.attr(method)(*make_args());
      return r.is_none() ? std::string() : py::str(r).cast<std::string>();
    } catch (py::error_already_set& e) {
      failed_.store(true);
      try {
        target_.attr("_keep_error")(e.type(), e.value(), e.trace());
      } catch (py::error_already_set&) {
      }
      return std::string("a Python callback raised ") + e.what();
    }
  }
  bool failed() const { return failed_.load(); }

 private:
  py::object target_;
  mutable std::atomic<bool> failed_{false};
};

py::array_t<std::uint8_t> image_array(const cv::Mat& image) {
  cv::Mat bgr = image.isContinuous() ? image : image.clone();
  py::array_t<std::uint8_t> a({bgr.rows, bgr.cols, bgr.channels()});
  std::memcpy(a.mutable_data(), bgr.data, bgr.total() * bgr.elemSize());
  return a;
}

// [x1, y1, x2, y2, conf, cls] per detection, and each detection's mask outlines (N, 2) in pixels.
py::tuple prediction_arrays(const core::ImagePrediction& p) {
  py::array_t<float> boxes({static_cast<py::ssize_t>(p.detections.size()), py::ssize_t{6}});
  auto b = boxes.mutable_unchecked<2>();
  py::list outlines;
  for (std::size_t i = 0; i < p.detections.size(); ++i) {
    const auto& d = p.detections[i];
    const float row[6] = {d.x1, d.y1, d.x2, d.y2, d.confidence, static_cast<float>(d.cls)};
    for (int k = 0; k < 6; ++k) b(static_cast<py::ssize_t>(i), k) = row[k];
    py::list parts;
    for (const auto& part : d.outlines) {
      py::array_t<float> xy({static_cast<py::ssize_t>(part.size()), py::ssize_t{2}});
      auto x = xy.mutable_unchecked<2>();
      for (std::size_t j = 0; j < part.size(); ++j) {
        x(static_cast<py::ssize_t>(j), 0) = part[j].x;
        x(static_cast<py::ssize_t>(j), 1) = part[j].y;
      }
      parts.append(xy);
    }
    outlines.append(parts);
  }
  return py::make_tuple(boxes, outlines);
}

class Observer final : public cli::CommandObserver {
 public:
  Observer(py::object target, bool saves) : calls_(std::move(target)), saves_(saves) {}
  void run_folder(const std::string& dir) override {
    calls_.call("run_folder", [&] { return py::make_tuple(dir); });
  }
  void run_ended(bool by_signal) override {
    calls_.call("run_ended", [&] { return py::make_tuple(by_signal); });
  }
  void validated(const std::string& metrics, const std::string& dir) override {
    calls_.call("validated", [&] { return py::make_tuple(metrics, dir); });
  }
  void described(const std::string& model) override {
    calls_.call("described", [&] { return py::make_tuple(model); });
  }
  void exported(const std::string& file) override {
    calls_.call("exported", [&] { return py::make_tuple(file); });
  }
  bool saves_predictions() const override { return saves_; }
  void predicted(const std::string& path, int frame, const cv::Mat& image, const core::ImagePrediction& p,
                 const std::vector<std::string>& names) override {
    // Anything returned asks predict to stop (a generator closed early).
    const std::string stop = calls_.call("predicted", [&] {
      return py::make_tuple(path, frame, image_array(image), prediction_arrays(p), names,
                            py::make_tuple(p.preprocess_ms, p.inference_ms, p.postprocess_ms));
    });
    if (!stop.empty()) stop_.store(true);
  }
  bool stop_requested() const override { return stop_.load() || calls_.failed(); }
  // Python's process (a notebook's kernel) goes on: a second Ctrl-C waits for the stop asked.
  bool second_interrupt_ends_process() const override { return false; }

 private:
  PythonCalls calls_;
  bool saves_;
  std::atomic<bool> stop_{false};
};

py::dict progress_dict(const TrainProgress& p) {
  py::dict d;
  d["epoch"] = p.epoch;
  d["epochs"] = p.epochs;
  d["step"] = p.step;
  d["steps_in_epoch"] = p.steps_in_epoch;
  d["global_step"] = p.global_step;
  d["optimizer_stepped"] = p.optimizer_stepped;
  return d;
}

// The trainer's hooks, each passed to Python's hook(event, details), which returns a reason
// to stop the run (a callback asked for it, or raised) or None.
class PythonCallback final : public Callback {
 public:
  explicit PythonCallback(std::shared_ptr<PythonCalls> calls) : calls_(std::move(calls)) {}

  void on_train_start(const TrainRun& run, TrainControl& control) override {
    hook(&control, "on_train_start", [&] {
      py::dict d;
      d["save_dir"] = run.run_dir;
      d["names"] = run.names;
      d["epochs"] = run.epochs;
      d["resumed"] = run.resumed;
      return d;
    });
  }
  void on_batch_start(const Batch&, const TrainProgress& p, TrainControl& control) override {
    hook(&control, "on_train_batch_start", [&] { return progress_dict(p); });
  }
  void on_batch_end(const TrainProgress& p, TrainControl& control) override {
    hook(&control, "on_train_batch_end", [&] { return progress_dict(p); });
  }
  void on_optimizer_step(TrainingView&) override {
    hook(nullptr, "optimizer_step", [] { return py::dict(); });
  }
  void on_validation_start(TrainingView&) override {
    hook(nullptr, "on_val_start", [] { return py::dict(); });
  }
  void on_validation_end(TrainingView&) override {
    hook(nullptr, "on_val_end", [] { return py::dict(); });
  }
  void on_epoch_end(const EpochSummary& e, const TrainProgress& p, TrainControl& control) override {
    hook(&control, "on_fit_epoch_end", [&] {
      py::dict d = progress_dict(p);
      d["validated"] = e.validated;
      d["fitness"] = e.fitness;
      d["last"] = e.last;
      d["metrics"] = e.values;
      return d;
    });
  }
  void on_train_end(const TrainProgress& p, TrainControl& control) override {
    hook(&control, "on_train_end", [&] { return progress_dict(p); });
  }

 private:
  // A hook without a control (an optimizer step, a validation) keeps a stop for the next one
  // that has one.
  template <class MakeDetails>
  void hook(TrainControl* control, const char* event, MakeDetails&& details) {
    const std::string reason = calls_->call("hook", [&] { return py::make_tuple(event, details()); });
    if (!reason.empty() && pending_.empty()) pending_ = reason;
    if (control != nullptr && !pending_.empty()) {
      control->request_stop(pending_);
      pending_.clear();
    }
  }
  std::shared_ptr<PythonCalls> calls_;
  std::string pending_;
};

// run(args, observer, saves, hooks, plugin_paths, capture) -> (exit code, error lines, output)
py::tuple run(const std::vector<std::string>& args, py::object observer, bool saves, py::object hooks,
              const std::vector<std::string>& plugin_paths, bool capture) {
  std::unique_ptr<Observer> watching;
  if (!observer.is_none()) watching = std::make_unique<Observer>(observer, saves);
  std::vector<core::HostCallback> callbacks;
  if (!hooks.is_none()) {
    auto calls = std::make_shared<PythonCalls>(hooks);
    callbacks.push_back({"python", [calls] { return std::make_unique<PythonCallback>(calls); }});
  }
  cli::CommandLineResult result;
  std::string output;
  {
    py::gil_scoped_release release;
    cli::CommandObserverScope scope(watching.get());
    core::HostCallbackScope added(std::move(callbacks));
    result = cli::run_command_line(args, plugin_paths, capture ? &output : nullptr);
    watching.reset();  // takes the GIL to let go of the Python object
  }
  return py::make_tuple(result.exit_code, result.error, py::bytes(output).attr("decode")("utf-8", "replace"));
}

py::array_t<std::uint8_t> draw(py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> image,
                               py::array_t<float, py::array::c_style | py::array::forcecast> boxes, py::list outlines,
                               const std::vector<std::string>& names, int line_width, bool show_boxes, bool labels,
                               bool conf) {
  if (image.ndim() != 3 || image.shape(2) != 3) throw py::value_error("image: an (H, W, 3) uint8 BGR array is drawn on");
  if (boxes.ndim() != 2 || boxes.shape(1) != 6) throw py::value_error("boxes: an (N, 6) array of x1, y1, x2, y2, conf, cls");
  const cv::Mat view(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)), CV_8UC3,
                     const_cast<std::uint8_t*>(image.data()));
  core::ImagePrediction p;
  p.width = view.cols;
  p.height = view.rows;
  const auto b = boxes.unchecked<2>();
  for (py::ssize_t i = 0; i < boxes.shape(0); ++i) {
    core::Detection d;
    d.x1 = b(i, 0), d.y1 = b(i, 1), d.x2 = b(i, 2), d.y2 = b(i, 3), d.confidence = b(i, 4);
    d.cls = static_cast<int>(b(i, 5));
    if (static_cast<std::size_t>(i) < outlines.size()) {
      for (const auto& part : outlines[static_cast<std::size_t>(i)].cast<py::list>()) {
        const auto xy = part.cast<py::array_t<float, py::array::c_style | py::array::forcecast>>();
        const auto x = xy.unchecked<2>();
        std::vector<cv::Point2f> points;
        for (py::ssize_t j = 0; j < xy.shape(0); ++j) points.emplace_back(x(j, 0), x(j, 1));
        d.outlines.push_back(std::move(points));
      }
    }
    p.detections.push_back(std::move(d));
  }
  core::PredictionOutputs o;
  o.boxes = show_boxes;
  o.box_labels = labels;
  o.box_conf = conf;
  o.line_width = line_width;
  cv::Mat drawn;
  {
    py::gil_scoped_release release;
    drawn = core::draw_prediction(view, p, names, o);
  }
  return image_array(drawn);
}

void save_image(const std::string& path, py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> image) {
  if (image.ndim() != 3 || image.shape(2) != 3) throw py::value_error("image: an (H, W, 3) uint8 BGR array is written");
  const cv::Mat view(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)), CV_8UC3,
                     const_cast<std::uint8_t*>(image.data()));
  bool written = false;
  try {
    written = cv::imwrite(path, view);
  } catch (const cv::Exception&) {
    written = false;
  }
  if (!written) throw py::value_error("cannot write the image " + path + " (no such folder, or no image file extension)");
}

py::bytes encode_image(const std::string& extension, py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> image) {
  if (image.ndim() != 3 || image.shape(2) != 3) throw py::value_error("image: an (H, W, 3) uint8 BGR array is encoded");
  const cv::Mat view(static_cast<int>(image.shape(0)), static_cast<int>(image.shape(1)), CV_8UC3,
                     const_cast<std::uint8_t*>(image.data()));
  std::vector<unsigned char> encoded;
  bool done = false;
  try {
    done = cv::imencode(extension, view, encoded);
  } catch (const cv::Exception&) {
    done = false;
  }
  if (!done) throw py::value_error("cannot encode an image as " + extension);
  return py::bytes(reinterpret_cast<const char*>(encoded.data()), encoded.size());
}

}  // namespace
}  // namespace yoloflow::python

PYBIND11_MODULE(_yoloflow, m) {
  m.doc() = "yoloflow's commands inside Python; use the yoloflow package (from yoloflow import YOLO)";
  m.attr("version") = YOLOFLOW_VERSION_STRING;
  m.attr("torch_version") = YOLOFLOW_PYTHON_TORCH_VERSION;
  m.def("run", &yoloflow::python::run, py::arg("args"), py::arg("observer") = py::none(), py::arg("saves") = true,
        py::arg("hooks") = py::none(), py::arg("plugin_paths") = std::vector<std::string>{}, py::arg("capture") = false,
        "Runs one yoloflow command line (the words after `yoloflow`); returns (exit code, error lines, what it "
        "printed when captured)");
  m.def("draw", &yoloflow::python::draw, py::arg("image"), py::arg("boxes"), py::arg("outlines"), py::arg("names"),
        py::arg("line_width") = 0, py::arg("boxes_shown") = true, py::arg("labels") = true, py::arg("conf") = true,
        "An image with detections drawn as `yoloflow predict` draws them");
  m.def("encode_image", &yoloflow::python::encode_image, py::arg("extension"), py::arg("image"),
        "An (H, W, 3) BGR image encoded as a file of that extension ('.png', '.jpg') would hold it");
  m.def("save_image", &yoloflow::python::save_image, py::arg("path"), py::arg("image"),
        "Writes an (H, W, 3) BGR image; the format by the file's extension");
}
