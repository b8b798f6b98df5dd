// What a checkpoint says its use should default to (checkpoint_model.h): the image size and the
// dataset it was trained with.
#include <filesystem>

#include "training/checkpoint/checkpoint_model.h"

namespace yoloflow::core {
namespace {

// The value a pipeline's imgsz has in its last epoch: a number, or a schedule
// ({"steps": {"0": 320, "-1": 640}}, {"linear": {...}}) whose entry at the latest epoch wins
// (negative epochs count from the end).
int last_epoch_imgsz(const nlohmann::json& pipeline) {
  if (!pipeline.is_object() || !pipeline.contains("imgsz")) return 0;
  const nlohmann::json& v = pipeline["imgsz"];
  if (v.is_number_integer()) return v.get<int>();
  if (!v.is_object() || v.size() != 1) return 0;
  const nlohmann::json& points = v.begin().value();
  if (!points.is_object()) return 0;
  const long epochs = pipeline.value("epochs", 1);
  long best_epoch = -1;
  int best = 0;
  for (const auto& [k, value] : points.items()) {
    if (!value.is_number_integer()) continue;
    long e = 0;
    try {
      e = std::stol(k);
    } catch (const std::exception&) {
      continue;
    }
    if (e < 0) e += epochs;
    if (e >= best_epoch) {
      best_epoch = e;
      best = value.get<int>();
    }
  }
  return best;
}

}  // namespace

int default_imgsz(const LoadedCheckpointModel& loaded) {
  const auto& a = loaded.about;
  int imgsz = 0;
  if (a.contains("train_args") && a["train_args"].contains("imgsz") && a["train_args"]["imgsz"].is_number_integer()) {
    imgsz = a["train_args"]["imgsz"].get<int>();
  } else {
    imgsz = last_epoch_imgsz(loaded.described.pipeline);
  }
  return imgsz >= 32 && imgsz <= 8192 ? imgsz : 640;
}

std::string default_data(const LoadedCheckpointModel& loaded) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto& a = loaded.about;
  std::string data;
  if (a.contains("train_args") && a["train_args"].contains("data") && a["train_args"]["data"].is_string()) {
    data = a["train_args"]["data"].get<std::string>();
  } else if (loaded.described.pipeline.is_object()) {
    // A run folder's pipeline.json names its dataset at the top, absolute.
    data = loaded.described.pipeline.value("data", std::string());
  }
  return !data.empty() && fs::is_regular_file(data, ec) ? data : "";
}

}  // namespace yoloflow::core
