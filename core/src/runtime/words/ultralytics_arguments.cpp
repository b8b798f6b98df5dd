#include "runtime/words/ultralytics_arguments.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "runtime/util/ascii_lower.h"
#include "runtime/words/word_values.h"

namespace yoloflow::core {
namespace {

using Verbs = std::vector<std::string>;
const Verbs kNone{};
const Verbs kTrain{"train"};
const Verbs kVal{"val"};
const Verbs kPredict{"predict"};
const Verbs kExport{"export"};
const Verbs kTrainVal{"train", "val"};
const Verbs kValPredict{"val", "predict"};
const Verbs kValPredictExport{"val", "predict", "export"};
const Verbs kTrainValPredict{"train", "val", "predict"};
const Verbs kTrainValPredictExport{"train", "val", "predict", "export"};
const Verbs kEvery{"train", "val", "predict", "export", "info"};

// Reasons shared by several keys.
const char* kClassify = "it is a classification setting and yoloflow trains detectors and segmentation models";
const char* kPose = "it is a pose or oriented-box setting and yoloflow trains detectors and segmentation models";
const char* kTrainOnly = "it is a training setting; this command trains nothing";
const char* kPredictOnly = "it is a setting of predict";
const char* kExportOnly = "it is a setting of export";

std::vector<UltralyticsArgument> make_arguments() {
  return {
      {"task", kEvery, "the tasks detect and segment (docs/segmentation.md)"},
      {"mode", kEvery, "the command is the mode: yoloflow train, val, predict, export"},
      // Train settings
      {"model", kEvery, ""},
      {"data", {"train", "val", "export"}, "predict takes the class names from the weights"},
      {"epochs", kTrain, kTrainOnly},
      {"time", kTrain, kTrainOnly},
      {"patience", kTrain, kTrainOnly},
      {"batch", {"train", "val", "export"}, "predict runs one image at a time"},
      {"imgsz", kEvery, ""},
      {"save", {"train", "predict"}, "train always writes weights/last.pt and best.pt (save=False is refused); "
                                     "val always writes metrics.json"},
      {"save_period", kTrain, kTrainOnly},
      {"cache", kTrain, kTrainOnly},
      {"device", {"train", "val", "predict"}, "export and info run on the CPU"},
      {"workers", kTrain, "val and predict read their images on the command's own threads"},
      {"project", kTrainValPredict, "export writes beside the weights (or to --out)"},
      {"name", kTrainValPredict, "export writes beside the weights (or to --out)"},
      {"exist_ok", kTrainValPredict, "export replaces its output file"},
      {"pretrained", kTrain, kTrainOnly},
      {"optimizer", kTrain, kTrainOnly},
      {"verbose", kNone, "yoloflow's output is set by --log-level (warn prints less, debug more)"},
      {"seed", kTrain, kTrainOnly},
      {"deterministic", kTrain, kTrainOnly},
      {"single_cls", kTrainVal, "it reads a dataset's labels as one class; predict and export keep the model's classes"},
      {"rect", kTrainVal, "predict fits each image to its own stride-aligned rectangle; export writes a fixed input"},
      {"cos_lr", kTrain, kTrainOnly},
      {"close_mosaic", kTrain, kTrainOnly},
      {"resume", kTrain, kTrainOnly},
      {"amp", kTrain, kTrainOnly},
      {"fraction", {"train", "export"}, "it reads part of the train split (export: the calibration images of "
                                         "int8=True); val and predict read every image"},
      {"profile", kNone, "profiling ONNX and TensorRT speeds during training is not built; "
                         "stages.train.params.profile_every=N times the training step phase by phase"},
      {"freeze", kTrain, kTrainOnly},
      {"multi_scale", kTrain, kTrainOnly},
      {"compile", kNone, "torch.compile is Python's; on CUDA yoloflow captures the training step as a CUDA graph "
                         "instead (stages.train.params.cuda_graph)"},
      // The batchers' mask layout and size (train and the train sink's validation).
      {"overlap_mask", kTrain, kTrainOnly},
      {"mask_ratio", kTrain, kTrainOnly},
      {"dropout", kNone, kClassify},
      // Val/Test settings
      {"val", kTrain, kTrainOnly},
      {"split", kVal, "train validates on the train sink's val_split (stages.train.params.val_split)"},
      {"save_json", kVal, "only val writes COCO results"},
      {"conf", {"train", "val", "predict", "export"}, "info computes no detections"},
      {"iou", {"train", "val", "predict", "export"}, "info computes no detections"},
      {"max_det", {"train", "val", "predict", "export"}, "info computes no detections"},
      {"half", kExport, "val and predict run the weights in fp32; export half=True writes an fp16 ONNX file"},
      {"dnn", kNone, "yoloflow runs trained weights with LibTorch, not with OpenCV's DNN module"},
      {"plots", kTrainVal, "predict and export draw no plots"},
      {"end2end", kNone, "end-to-end heads (YOLO26, YOLOv10) are not built; yoloflow's YOLO11 head uses NMS"},
      // Predict settings
      {"source", kPredict, kPredictOnly},
      {"vid_stride", kPredict, kPredictOnly},
      {"stream_buffer", kNone, "streams (RTSP, webcams) are not read; predict takes images, videos, folders, globs "
                               "and .txt lists"},
      {"visualize", kNone, "drawing the model's feature maps is not built"},
      {"augment", kNone, "test-time augmentation is not built"},
      {"agnostic_nms", kNone, "class-agnostic NMS is not offered on the command line; NMS keeps boxes per class, "
                              "as Ultralytics' default"},
      {"classes", kTrainValPredict, "export writes every class the model detects"},
      {"retina_masks", kPredict, kPredictOnly},
      {"embed", kNone, "returning feature embeddings is not built"},
      // Visualize settings
      {"show", kNone, "yoloflow opens no windows; the annotated images and videos are written to the run folder"},
      {"save_frames", kNone, "saving each video frame as an image is not built; the annotated video is written"},
      {"save_txt", kPredict, "only predict writes label files (val: save_json=True writes its detections)"},
      {"save_conf", kPredict, "only predict writes label files (val: save_json=True writes its detections)"},
      {"save_crop", kPredict, kPredictOnly},
      {"show_labels", kPredict, kPredictOnly},
      {"show_conf", kPredict, kPredictOnly},
      {"show_boxes", kPredict, kPredictOnly},
      {"line_width", kPredict, kPredictOnly},
      // Export settings
      {"format", kExport, kExportOnly},
      {"keras", kNone, "yoloflow exports ONNX only (format=onnx), no TensorFlow formats"},
      {"optimize", kNone, "it applies to TorchScript and DEEPX exports; yoloflow exports ONNX only"},
      {"int8", kExport, kExportOnly},
      {"dynamic", kExport, kExportOnly},
      {"simplify", kExport, kExportOnly},
      {"opset", kExport, kExportOnly},
      {"workspace", kNone, "it sizes TensorRT's builder; yoloflow exports ONNX only"},
      {"nms", kExport, kExportOnly},
      // Hyperparameters
      {"lr0", kTrain, kTrainOnly},
      {"lrf", kTrain, kTrainOnly},
      {"momentum", kTrain, kTrainOnly},
      {"weight_decay", kTrain, kTrainOnly},
      {"warmup_epochs", kTrain, kTrainOnly},
      {"warmup_momentum", kTrain, kTrainOnly},
      {"warmup_bias_lr", kTrain, kTrainOnly},
      {"box", kTrain, kTrainOnly},
      {"cls", kTrain, kTrainOnly},
      {"cls_pw", kNone, "class weighting of the classification loss is not built in the yolo11_detection loss"},
      {"dfl", kTrain, kTrainOnly},
      {"pose", kNone, kPose},
      {"kobj", kNone, kPose},
      {"rle", kNone, kPose},
      {"angle", kNone, kPose},
      {"nbs", kTrain, kTrainOnly},
      {"hsv_h", kTrain, kTrainOnly},
      {"hsv_s", kTrain, kTrainOnly},
      {"hsv_v", kTrain, kTrainOnly},
      {"degrees", kTrain, kTrainOnly},
      {"translate", kTrain, kTrainOnly},
      {"scale", kTrain, kTrainOnly},
      {"shear", kTrain, kTrainOnly},
      {"perspective", kTrain, kTrainOnly},
      {"flipud", kTrain, kTrainOnly},
      {"fliplr", kTrain, kTrainOnly},
      {"bgr", kNone, "the RGB-BGR channel swap augmentation is not built"},
      {"mosaic", kTrain, kTrainOnly},
      {"mixup", kTrain, kTrainOnly},
      {"cutmix", kTrain, kTrainOnly},
      {"copy_paste", kNone, "copy-paste of segmentation instances between images is not built"},
      {"copy_paste_mode", kNone, "copy-paste of segmentation instances between images is not built"},
      {"auto_augment", kNone, kClassify},
      {"erasing", kNone, kClassify},
      // Custom config
      {"cfg", kEvery, ""},  // read before the other words (runtime/words/cfg_words.h)
      // Tracker settings
      {"tracker", kNone, "yoloflow has no track mode"},
  };
}

}  // namespace

const std::vector<UltralyticsArgument>& ultralytics_arguments() {
  static const std::vector<UltralyticsArgument> table = make_arguments();
  return table;
}

const UltralyticsArgument* find_ultralytics_argument(const std::string& key) {
  const auto& table = ultralytics_arguments();
  const auto it = std::find_if(table.begin(), table.end(), [&](const UltralyticsArgument& a) { return a.key == key; });
  return it == table.end() ? nullptr : &*it;
}

bool is_ultralytics_switch(const std::string& key) {
  // default.yaml's keys whose default is True or False (8.4.56).
  static const std::set<std::string> kSwitches = {
      "save",          "cache",        "exist_ok",    "pretrained",  "verbose",      "deterministic", "single_cls",
      "rect",          "cos_lr",       "resume",      "amp",         "profile",      "compile",       "overlap_mask",
      "val",           "save_json",    "half",        "dnn",         "plots",        "stream_buffer", "visualize",
      "augment",       "agnostic_nms", "retina_masks", "show",       "save_frames",  "save_txt",      "save_conf",
      "save_crop",     "show_labels",  "show_conf",   "show_boxes",  "keras",        "optimize",      "int8",
      "dynamic",       "simplify",     "nms"};
  return kSwitches.count(key) > 0;
}

std::string ultralytics_default(const std::string& key) {
  // default.yaml's values (tests/fixtures/ultralytics-8.4.56-arguments.txt lists the same).
  static const std::map<std::string, std::string> kDefaults = {
      {"task", "detect"}, {"mode", "train"}, {"model", ""}, {"data", ""},
      {"epochs", "100"}, {"time", ""}, {"patience", "100"}, {"batch", "16"},
      {"imgsz", "640"}, {"save", "True"}, {"save_period", "-1"}, {"cache", "False"},
      {"device", ""}, {"workers", "8"}, {"project", ""}, {"name", ""},
      {"exist_ok", "False"}, {"pretrained", "True"}, {"optimizer", "auto"}, {"verbose", "True"},
      {"seed", "0"}, {"deterministic", "True"}, {"single_cls", "False"}, {"rect", "False"},
      {"cos_lr", "False"}, {"close_mosaic", "10"}, {"resume", "False"}, {"amp", "True"},
      {"fraction", "1.0"}, {"profile", "False"}, {"freeze", ""}, {"multi_scale", "0.0"},
      {"compile", "False"}, {"overlap_mask", "True"}, {"mask_ratio", "4"}, {"dropout", "0.0"},
      {"val", "True"}, {"split", "val"}, {"save_json", "False"}, {"conf", ""},
      {"iou", "0.7"}, {"max_det", "300"}, {"half", "False"}, {"dnn", "False"},
      {"plots", "True"}, {"end2end", ""}, {"source", ""}, {"vid_stride", "1"},
      {"stream_buffer", "False"}, {"visualize", "False"}, {"augment", "False"}, {"agnostic_nms", "False"},
      {"classes", ""}, {"retina_masks", "False"}, {"embed", ""}, {"show", "False"},
      {"save_frames", "False"}, {"save_txt", "False"}, {"save_conf", "False"}, {"save_crop", "False"},
      {"show_labels", "True"}, {"show_conf", "True"}, {"show_boxes", "True"}, {"line_width", ""},
      {"format", "torchscript"}, {"keras", "False"}, {"optimize", "False"}, {"int8", "False"},
      {"dynamic", "False"}, {"simplify", "True"}, {"opset", ""}, {"workspace", ""},
      {"nms", "False"}, {"lr0", "0.01"}, {"lrf", "0.01"}, {"momentum", "0.937"},
      {"weight_decay", "0.0005"}, {"warmup_epochs", "3.0"}, {"warmup_momentum", "0.8"}, {"warmup_bias_lr", "0.1"},
      {"box", "7.5"}, {"cls", "0.5"}, {"cls_pw", "0.0"}, {"dfl", "1.5"},
      {"pose", "12.0"}, {"kobj", "1.0"}, {"rle", "1.0"}, {"angle", "1.0"},
      {"nbs", "64"}, {"hsv_h", "0.015"}, {"hsv_s", "0.7"}, {"hsv_v", "0.4"},
      {"degrees", "0.0"}, {"translate", "0.1"}, {"scale", "0.5"}, {"shear", "0.0"},
      {"perspective", "0.0"}, {"flipud", "0.0"}, {"fliplr", "0.5"}, {"bgr", "0.0"},
      {"mosaic", "1.0"}, {"mixup", "0.0"}, {"cutmix", "0.0"}, {"copy_paste", "0.0"},
      {"copy_paste_mode", "flip"}, {"auto_augment", "randaugment"}, {"erasing", "0.4"}, {"cfg", ""},
      {"tracker", "botsort.yaml"}};
  const auto it = kDefaults.find(key);
  return it == kDefaults.end() ? std::string() : it->second;
}

namespace {

// Python's None as a saved run writes it (None, null).
bool is_none(const nlohmann::json& v) {
  if (v.is_null()) return true;
  if (!v.is_string()) return false;
  const std::string s = ascii_lower(v.get<std::string>());
  return s == "none" || s == "null";
}

// False, 0, 0.0, None and '': a setting switched off.
bool is_off(const nlohmann::json& v) {
  return is_none(v) || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0.0) ||
         (v.is_string() && v.get<std::string>().empty());
}

// The same value as Ultralytics' default: equal numbers (0.40 = 0.4), text in any case.
bool is_default(const std::string& key, const nlohmann::json& v) {
  const std::string text = ultralytics_default(key);
  if (text.empty()) return false;
  const nlohmann::json d = parse_word_value(text);
  if (d.is_number() && v.is_number()) return d.get<double>() == v.get<double>();
  if (d.is_string() && v.is_string()) return ascii_lower(d.get<std::string>()) == ascii_lower(v.get<std::string>());
  return d == v;
}

}  // namespace

bool is_ultralytics_none(const std::string& value) { return is_none(parse_word_value(value)); }

bool ultralytics_word_asks_nothing(const std::string& key, const std::string& value, const std::string& verb) {
  const UltralyticsArgument* a = find_ultralytics_argument(key);
  if (a == nullptr) return false;
  const nlohmann::json v = parse_word_value(value);
  if (is_off(v) || is_default(key, v)) return true;
  // Settings of another command or task: Ultralytics ignores them there as well.
  for (const char* other : {kTrainOnly, kPredictOnly, kExportOnly, kClassify, kPose}) {
    if (a->reason == other) return true;
  }
  // What changes no result here: how much is printed (--log-level here), the track mode's
  // tracker, the reader threads of the commands that train nothing, predict's batch and data
  // (the names come from the weights), the device of export and info (they run on the CPU).
  if (key == "verbose" || key == "tracker" || key == "workers") return true;
  if (verb == "predict" && (key == "data" || key == "batch")) return true;
  return (verb == "export" || verb == "info") && key == "device";
}

std::string ultralytics_ignored_note(const std::string& verb, const std::string& words) {
  return "Ultralytics' words that ask nothing of yoloflow " + verb +
         " (defaults, off, or settings of another command or task), ignored: " + words;
}

std::string ultralytics_refusal(const std::string& key, const std::string& verb) {
  const UltralyticsArgument* a = find_ultralytics_argument(key);
  if (a == nullptr || std::find(a->verbs.begin(), a->verbs.end(), verb) != a->verbs.end()) return "";
  std::string line = "Ultralytics' `" + key + "` is not supported by `yoloflow " + verb + "`: " + a->reason;
  if (!a->verbs.empty()) {
    std::string list;
    for (const auto& v : a->verbs) list += (list.empty() ? "" : ", ") + v;
    line += " (yoloflow takes it on: " + list + ")";
  }
  return line;
}

}  // namespace yoloflow::core
