// tensorboard: writes a run's progress as TensorBoard event files, so `tensorboard --logdir`
// shows it live: the step reports' values every `step_interval` optimizer steps, every
// epoch's values under their results.csv names (at the 1-based epoch, as Ultralytics logs
// them), and the plots the run writes in its folder (results.png) as images.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "tfevent_format.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/monitor.h"
#include "yoloflow/plugin.h"

namespace yoloflow::plugins {
namespace {

namespace fs = std::filesystem;

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// Data-parallel runs: rank 0 writes every output; the other ranks' events would duplicate it.
bool is_secondary_rank() {
  for (const char* var : {"RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(var);
    if (v && *v) return std::atoi(v) != 0;
  }
  return false;
}

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

class TensorBoard final : public Monitor {
 public:
  static Schema schema() {
    Schema s;
    s.add_path("log_dir").fixed().doc(
        "Folder of the event file (created if missing); default: the run folder, as Ultralytics "
        "does. Point `tensorboard --logdir` at it or at a folder above several runs.");
    s.add_int("step_interval", 10).min(1).fixed().doc(
        "Optimizer steps between logged step reports (tags `step/<name>` at the global step). The "
        "train sink reports every `log_every` steps; a report comes through when at least this "
        "many steps passed since the last one written.");
    s.add_bool("images", true).fixed().doc(
        "Log the PNG/JPEG files of the run folder (results.png) as images at each epoch end and "
        "at the run end, each when it changed.");
    return s;
  }

  void configure(const Params& p, const StageContext& context) override {
    log_dir_param_ = p.has("log_dir") && !p.is_null("log_dir") ? p.get_string("log_dir") : "";
    step_interval_ = p.get_int("step_interval");
    images_ = p.get_bool("images");
  }

  void on_run_start(const RunEvent& event) override {
    run_dir_ = event.run_dir;
    if (is_secondary_rank()) return;
    const std::string dir = log_dir_param_.empty() ? event.run_dir : log_dir_param_;
    if (dir.empty()) {
      YF_LOG_WARN("tensorboard: this run has no run folder and no log_dir is set; nothing is logged "
                  "(set monitors[].params.log_dir or pass --run-dir)");
      return;
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      throw Error("tensorboard: cannot create the log folder '" + dir + "'" + (ec ? ": " + ec.message() : ""));
    }
    const std::string stem = (fs::path(dir) / ("events.out.tfevents." + std::to_string(std::time(nullptr)) + "." +
                                               host_name())).string();
    path_ = stem;
    // Another writer may have started in the same second (a second monitor, a resumed run).
    for (int n = 1; fs::exists(path_); ++n) path_ = stem + "." + std::to_string(n);
    out_.open(path_, std::ios::binary | std::ios::trunc);
    if (!out_) throw Error("tensorboard: cannot create the event file '" + path_ + "'");
    write(tfevent::file_version_event(wall_time()));
    flush();
    YF_LOG_INFO("tensorboard: logging to " << path_ << " (view with: tensorboard --logdir " << dir << ")");
  }

  void on_step(const StepEvent& event) override {
    if (!out_.is_open()) return;
    if (last_step_ >= 0 && event.global_step < last_step_ + step_interval_) return;
    std::vector<std::pair<std::string, float>> scalars;
    scalars.emplace_back("step/images_per_second", static_cast<float>(event.images_per_second));
    for (const auto& [name, value] : event.values) scalars.emplace_back("step/" + name, static_cast<float>(value));
    write(tfevent::scalars_event(wall_time(), event.global_step, scalars));
    last_step_ = event.global_step;
  }

  void on_epoch(const EpochEvent& event) override {
    if (!out_.is_open()) return;
    last_epoch_ = event.epoch + 1;
    std::vector<std::pair<std::string, float>> scalars;
    for (const auto& [name, value] : event.values) {
      if (name != "epoch") scalars.emplace_back(name, static_cast<float>(value));  // the step axis already
    }
    write(tfevent::scalars_event(wall_time(), last_epoch_, scalars));
    if (images_) write_changed_images(last_epoch_);
    flush();  // users watch the run live
  }

  void on_run_end(const RunEvent& event) override {
    if (!out_.is_open()) return;
    if (images_) write_changed_images(last_epoch_);
    flush();
    out_.close();
  }

 private:
  void write(const std::string& payload) {
    const std::string record = tfevent::framed_record(payload);
    out_.write(record.data(), static_cast<std::streamsize>(record.size()));
    if (!out_) throw Error("tensorboard: cannot write to '" + path_ + "' (disk full?)");
  }

  void flush() {
    out_.flush();
    if (!out_) throw Error("tensorboard: cannot write to '" + path_ + "' (disk full?)");
  }

  // Plots the run wrote in its folder since they were last logged, tagged by file name.
  void write_changed_images(std::int64_t step) {
    if (run_dir_.empty()) return;
    std::error_code ec;
    std::vector<fs::path> files;
    for (fs::directory_iterator it(run_dir_, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec) && is_image_file(it->path())) files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const auto stamp = std::make_pair(fs::last_write_time(file, ec).time_since_epoch().count(),
                                        static_cast<std::int64_t>(fs::file_size(file, ec)));
      if (ec) continue;  // vanished meanwhile
      auto& seen = logged_[file.string()];
      if (seen == stamp) continue;
      const cv::Mat image = cv::imread(file.string(), cv::IMREAD_UNCHANGED);
      if (image.empty() || (image.channels() != 1 && image.channels() != 3 && image.channels() != 4)) {
        YF_LOG_WARN("tensorboard: cannot read " << file.string() << " as an image; not logged");
        continue;
      }
      tfevent::ImageData data;
      data.height = image.rows;
      data.width = image.cols;
      data.colorspace = image.channels();
      std::vector<unsigned char> png;
      if (!cv::imencode(".png", image, png)) {
        YF_LOG_WARN("tensorboard: cannot encode " << file.string() << " as PNG; not logged");
        continue;
      }
      data.png.assign(png.begin(), png.end());
      write(tfevent::image_event(wall_time(), step, file.stem().string(), data));
      seen = stamp;
    }
  }

  std::string log_dir_param_, run_dir_, path_;
  std::int64_t step_interval_ = 10;
  bool images_ = true;
  std::ofstream out_;
  std::int64_t last_step_ = -1;
  std::int64_t last_epoch_ = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> logged_;  // file -> (mtime, size)
};

void register_tensorboard(Registrar& r) {
  r.add_monitor<TensorBoard>(
      "tensorboard", TensorBoard::schema(),
      "Writes TensorBoard event files: step and epoch values (results.csv names) and the run's "
      "plots as images; view with `tensorboard --logdir RUN_DIR`.");
}

}  // namespace
}  // namespace yoloflow::plugins

YOLOFLOW_PLUGIN("tensorboard", "1.0.0", yoloflow::plugins::register_tensorboard)
