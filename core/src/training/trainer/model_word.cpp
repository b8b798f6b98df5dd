#include "training/trainer/model_word.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <nlohmann/json.hpp>

#include "runtime/pipeline/json_text.h"
#include "runtime/words/word_values.h"
#include "runtime/util/string_affixes.h"
#include "training/model/fetched_weights.h"
#include "training/model/model_yaml.h"
#include "training/model/torch_file.h"
#include "training/model/ultralytics_checkpoint.h"
#include "training/checkpoint/checkpoint.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

// The architecture a yoloflow checkpoint's meta names: its model entry's plugin and scale.
std::string checkpoint_architecture(const TorchFile& file) {
  const PickleValue* meta = file.root().get("meta");
  if (!meta || meta->kind != PickleValue::Kind::String) return "";
  nlohmann::json j;
  Diagnostics ignored;
  if (!parse_json_text(meta->s, j, ignored) || !j.is_object()) return "";
  if (j.contains("model") && j["model"].is_object() && j["model"].contains("plugin") && j["model"]["plugin"].is_string()) {
    const auto& m = j["model"];
    const auto params = m.value("params", nlohmann::json::object());
    // yolo11n, and yolo11n-seg for a segmentation model (the word's task suffix).
    const auto text = [&](const char* key) {
      return params.is_object() && params.contains(key) && params[key].is_string() ? params[key].get<std::string>()
                                                                                   : std::string();
    };
    // A model yaml's own multiples: the name the model gave itself, which carries them
    // (yolo11n[0.33,0.25,1024]).
    for (const char* key : {"depth_multiple", "width_multiple", "max_channels"}) {
      if (params.is_object() && params.contains(key) && params[key].is_number() && params[key].get<double>() > 0 &&
          j.contains("architecture") && j["architecture"].is_string()) {
        return j["architecture"].get<std::string>();
      }
    }
    return m["plugin"].get<std::string>() + text("scale") + (text("task") == "segment" ? "-seg" : "");
  }
  if (j.contains("architecture") && j["architecture"].is_string()) return j["architecture"].get<std::string>();
  return "";
}

// Names of architectures the yolo11 model plugin builds (yolo11n, yolo11s-seg, ...): only these
// are suggested as words, so that a hint never leads to a refused command.
bool buildable_architecture(const std::string& stem) {
  return std::regex_match(stem, std::regex("yolo11[nslmx]?(-seg)?"));
}

constexpr const char* kBuildable = "yoloflow builds YOLO11 (yolo11n ... yolo11x, and -seg of each)";

}  // namespace

std::vector<std::string> expand_model_words(const std::vector<std::string>& overrides) {
  const bool has_imgsz = std::any_of(overrides.begin(), overrides.end(),
                                     [](const std::string& o) { return o.rfind("imgsz=", 0) == 0; });
  const bool not_pretrained = std::any_of(overrides.begin(), overrides.end(), [](const std::string& o) {
    bool b = true;
    return o.rfind("pretrained=", 0) == 0 && parse_word_bool(o.substr(11), b) && !b;
  });
  std::vector<std::string> out;
  for (const auto& word : overrides) {
    if (word.rfind("model=", 0) != 0) {
      out.push_back(word);
      continue;
    }
    const std::string given = word.substr(6);
    if (ends_with(given, ".yaml") || ends_with(given, ".yml")) {
      // A model yaml that is a file is read (model_yaml.h): what it describes is built, or it is
      // refused naming its line; never replaced by a stock model. A bare name that is no file
      // (yolo11s.yaml, yolo11n-seg.yaml) is Ultralytics' packaged yaml of that architecture.
      std::error_code ec;
      if (fs::exists(given, ec)) {
        out.push_back("model=" + read_model_yaml(given, word).architecture);
        continue;
      }
      const fs::path named(given);
      if (named.has_parent_path() ||
          !std::regex_match(named.stem().string(), std::regex("yolo[v]?[0-9]+[nslmx]?(-[a-z]+)?"))) {
        throw InvalidInput(word + ": no such file; a model yaml is a file of yours, or the name of an architecture "
                           "yoloflow builds (yolo11n.yaml ... yolo11x.yaml, yolo11n-seg.yaml ...)");
      }
      if (!buildable_architecture(named.stem().string())) {
        throw InvalidInput(word + ": no such file, and not an architecture yoloflow builds: " + kBuildable +
                           "; give model=yolo11n.yaml or the path of a model yaml of yours");
      }
      out.push_back("model=" + named.stem().string());
      continue;
    }
    // yolo11n.pt: the file here, else the one in the weights folder, else fetched there.
    const std::string value = locate_weights_file(given);
    const bool file_like = ends_with(value, ".pt") || ends_with(value, ".pth");
    std::error_code ec;
    if (!file_like && !fs::is_regular_file(value, ec)) {
      out.push_back(word);  // an architecture word (yolo11s), as before
      continue;
    }
    if (!fs::exists(value, ec)) {
      const std::string stem = fs::path(value).stem().string();
      throw InvalidInput(word + ": no such file (yoloflow fetches only Ultralytics' released names, such as "
                         "yolo11n.pt): give the path of the weights file (e.g. a run's best.pt), or " +
                         (buildable_architecture(stem) ? "model=" + stem + " to train that architecture from scratch"
                                                       : std::string(kBuildable) + ": model=yolo11n to train one from scratch"));
    }
    const std::string name = word;
    TorchFile file = TorchFile::open(value, name);
    std::string architecture;
    std::string imgsz;
    if (is_ultralytics_checkpoint(file.root())) {
      // Read whole: a file that cannot be fine-tuned from is refused now, in its terms.
      const UltralyticsCheckpoint u = read_ultralytics_checkpoint(file);
      architecture = u.architecture();
      if (u.train_args.contains("imgsz") && u.train_args["imgsz"].is_number_integer()) {
        imgsz = std::to_string(u.train_args["imgsz"].get<std::int64_t>());
      }
    } else if (is_yoloflow_checkpoint(file)) {
      architecture = checkpoint_architecture(file);
      if (architecture.empty()) {
        throw InvalidInput(name + ": this checkpoint does not say which model it holds (written by an older yoloflow); "
                           "give it as weights=" + value + " with model=ARCHITECTURE");
      }
    } else {
      throw InvalidInput(name + ": a plain state dict does not say which model it holds; give model=yolo11n weights=" +
                         value + " (its architecture and the file)");
    }
    out.push_back("model=" + architecture);
    // pretrained=False (Ultralytics' word): the file's architecture, trained from scratch.
    if (!not_pretrained) out.push_back("weights=" + fs::absolute(value).lexically_normal().string());
    if (!imgsz.empty() && !has_imgsz) out.push_back("imgsz=" + imgsz);
  }
  return out;
}

}  // namespace yoloflow::core
