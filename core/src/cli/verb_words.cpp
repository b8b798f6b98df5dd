#include "cli/verb_words.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "runtime/pipeline/device_word.h"
#include "runtime/pipeline/json_text.h"
#include "runtime/words/cfg_words.h"
#include "runtime/words/run_folder_words.h"
#include "runtime/words/ultralytics_arguments.h"
#include "runtime/words/word_values.h"
#include "training/model/model_yaml.h"
#include "training/trainer/model_word.h"
#include "yoloflow/error.h"
#include "yoloflow/params.h"

namespace yoloflow::cli {
namespace {

using Options = std::vector<std::string>;
// A word's value -> the options it stands for. Throws InvalidInput when the value does not fit.
using Rule = std::function<Options(const std::string& key, const std::string& value)>;

// The options of these commands that take no value (every other option is followed by one).
const char* const kFlags[] = {"--rect", "--square", "--save-json", "--no-images", "--dynamic", "--half", "--nms",
                              "--save-txt", "--save-conf", "--save-crop", "--retina-masks",
                              "--hide-labels", "--hide-conf", "--hide-boxes", "--single-cls", "--int8",
                              "--exist-ok", "--print-resolved", "--help", "-h"};

bool is_flag(const std::string& arg) { return std::find(std::begin(kFlags), std::end(kFlags), arg) != std::end(kFlags); }

std::string text_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

Rule value_of(const std::string& option) {
  return [option](const std::string&, const std::string& value) { return Options{option, value}; };
}

Rule number_of(const std::string& option) {
  return [option](const std::string& key, const std::string& value) {
    const nlohmann::json v = core::parse_word_value(value);
    if (!v.is_number()) throw InvalidInput(key + "=" + value + ": expected a number");
    if (std::string where; !core::all_numbers_finite(v, key, where)) {
      throw InvalidInput(key + "=" + value + ": " + value + " " + core::kNonFiniteNumber);
    }
    return Options{option, text_of(v)};
  };
}

bool bool_value(const std::string& key, const std::string& value) {
  bool b = false;
  if (!core::parse_word_bool(value, b)) throw InvalidInput(key + "=" + value + ": expected True or False");
  return b;
}

// True -> `on` (nothing when empty), False -> `off`.
Rule bool_of(const std::string& on, const std::string& off) {
  return [on, off](const std::string& key, const std::string& value) {
    const std::string& option = bool_value(key, value) ? on : off;
    return option.empty() ? Options{} : Options{option};
  };
}

// Ultralytics' device=0 is cuda:0, -1 an idle GPU (CUDA when there is one, else the CPU); cpu,
// cuda and cuda:N pass as they are (runtime/pipeline/device_word.h reads them all).
Options device_options(const std::string& key, const std::string& value) {
  if (core::parse_word_value(value).is_array()) {
    throw InvalidInput(key + "=" + value + ": one device (cpu, 0, cuda:1, -1); several GPUs train through torchrun "
                       "(docs/distributed.md)");
  }
  std::string device;
  if (!core::read_device_word(value, device)) throw InvalidInput(core::device_refusal(key + "=", value));
  return {"--device", device};
}

// One square size; Ultralytics' val and predict take the largest of [h, w], with a warning.
Options square_imgsz(const std::string& key, const std::string& value) {
  const nlohmann::json v = core::parse_word_value(value);
  if (v.is_number_integer()) return {"--imgsz", v.dump()};
  if (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number_integer(); })) {
    long long side = 0;
    for (const auto& e : v) side = std::max(side, e.get<long long>());
    std::cerr << "warning: " << key << "=" << value << ": this command letterboxes to one size; using imgsz=" << side
              << std::endl;
    return {"--imgsz", std::to_string(side)};
  }
  throw InvalidInput(key + "=" + value + ": expected a size in pixels, e.g. imgsz=640");
}

// export: one size or [h, w].
Options export_imgsz(const std::string& key, const std::string& value) {
  const nlohmann::json v = core::parse_word_value(value);
  if (v.is_number_integer()) return {"--imgsz", v.dump()};
  if (v.is_array() && (v.size() == 1 || v.size() == 2) &&
      std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_number_integer(); })) {
    Options o{"--imgsz"};
    for (const auto& e : v) o.push_back(e.dump());
    return o;
  }
  throw InvalidInput(key + "=" + value + ": expected a size or [height, width] in pixels, e.g. imgsz=640 or imgsz=[480,640]");
}

// classes=0, classes=[0,2] or classes=0,2 as --classes; `names` also takes classes=[person,dog]
// (predict looks names up in the weights; val reads labels, which are ids).
Rule classes_of(bool names) {
  return [names](const std::string& key, const std::string& value) -> Options {
    const std::string expected = names ? "class ids or names" : "class ids";
    nlohmann::json v = core::parse_word_value(value);
    if (!v.is_array()) v = nlohmann::json::array({v});
    std::string list;
    for (const auto& e : v) {
      const bool id = e.is_number_integer() && e.get<long long>() >= 0;
      const bool name = names && e.is_string() && !e.get<std::string>().empty();
      if (!id && !name) throw InvalidInput(key + "=" + value + ": expected " + expected + ", e.g. classes=0 or classes=[0,2]");
      list += (list.empty() ? "" : ",") + text_of(e);
    }
    if (list.empty()) throw InvalidInput(key + "=" + value + ": expected " + expected + ", e.g. classes=0 or classes=[0,2]");
    return {"--classes", list};
  };
}

// model=: the weights file (a checkpoint, Ultralytics' yolo11n.pt).
Options weights_options(const std::string&, const std::string& value) { return {"--weights", value}; }

// info's model= is a weights file, or an architecture (yolo11s, yolo11s.yaml).
Options info_model_options(const std::string&, const std::string& value) {
  std::error_code ec;
  const std::string ext = std::filesystem::path(value).extension().string();
  if (ext == ".yaml" || ext == ".yml") {
    // A model yaml, read as train reads it (core::expand_model_words): its architecture, and
    // the yaml's nc for a file of the user's, as Ultralytics' info counts it.
    const auto words = core::expand_model_words({"model=" + value});
    if (std::filesystem::is_regular_file(value, ec)) {
      const long nc = core::read_model_yaml(value, "model=" + value).nc;
      if (nc > 0) return {"--model", words.front().substr(6), "--nc", std::to_string(nc)};
    }
    return {"--model", words.front().substr(6)};
  }
  if (ext == ".pt" || ext == ".pth" || std::filesystem::is_regular_file(value, ec)) return {"--weights", value};
  return {"--model", value};
}

Options nothing(const std::string&, const std::string&) { return {}; }

// Options that would turn off what is written only when asked for: a command line giving them
// is told which option asks for it, rather than having them ignored.
struct RetiredOption {
  const char* verb;
  const char* option;
  const char* reason;
};
const RetiredOption kRetired[] = {
    {"predict", "--no-labels",
     "label files are written only when asked for, with --save-txt (save_txt=True), as in Ultralytics; leave "
     "--no-labels out"},
    {"predict", "--no-label-conf",
     "the confidence column of the label files is written only when asked for, with --save-conf (save_conf=True), "
     "as in Ultralytics; leave --no-label-conf out"}};

struct Verb {
  std::map<std::string, Rule> rules;
  bool run_folder = false;  // takes project=, name=, exist_ok= as its --out
};

std::map<std::string, Verb> make_verbs() {
  std::map<std::string, Verb> verbs;
  Verb& val = verbs["val"];
  val.run_folder = true;
  val.rules = {{"model", weights_options},           {"data", value_of("--data")},
               {"imgsz", square_imgsz},              {"batch", number_of("--batch")},
               {"conf", number_of("--conf")},        {"iou", number_of("--iou")},
               {"max_det", number_of("--max-det")},  {"split", value_of("--split")},
               {"device", device_options},           {"rect", bool_of("--rect", "--square")},
               {"save_json", bool_of("--save-json", "")},
               {"single_cls", bool_of("--single-cls", "")},     {"classes", classes_of(false)},
               {"plots", bool_of("", "--no-plots")}};
  Verb& predict = verbs["predict"];
  predict.run_folder = true;
  predict.rules = {{"model", weights_options},
                   {"source", value_of("--source")},
                   {"imgsz", square_imgsz},
                   {"conf", number_of("--conf")},
                   {"iou", number_of("--iou")},
                   {"max_det", number_of("--max-det")},
                   {"device", device_options},
                   {"classes", classes_of(true)},
                   {"save", bool_of("", "--no-images")},
                   {"save_txt", bool_of("--save-txt", "")},
                   {"save_conf", bool_of("--save-conf", "")},
                   {"save_crop", bool_of("--save-crop", "")},
                   {"show_labels", bool_of("", "--hide-labels")},
                   {"show_conf", bool_of("", "--hide-conf")},
                   {"show_boxes", bool_of("", "--hide-boxes")},
                   {"line_width", number_of("--line-width")},
                   {"retina_masks", bool_of("--retina-masks", "")},
                   {"vid_stride", number_of("--vid-stride")}};
  Verb& exporting = verbs["export"];
  exporting.rules = {{"model", weights_options},      {"format", value_of("--format")},
               {"imgsz", export_imgsz},         {"batch", number_of("--batch")},
               {"dynamic", bool_of("--dynamic", "")}, {"half", bool_of("--half", "")},
               {"opset", number_of("--opset")}, {"nms", bool_of("--nms", "")},
               {"conf", number_of("--conf")},   {"iou", number_of("--iou")},
               {"max_det", number_of("--max-det")},
               // INT8: calibrated on `fraction` of data='s images.
               {"int8", bool_of("--int8", "")}, {"data", value_of("--data")},
               {"fraction", number_of("--fraction")},
               // The graph is written without the redundant nodes an exporter's trace leaves.
               {"simplify", nothing}};
  Verb& info = verbs["info"];
  info.rules = {{"model", info_model_options}, {"imgsz", number_of("--imgsz")}};
  return verbs;
}

// task= and mode=, as every command takes them.
void check_task_and_mode(const std::string& verb, const std::string& key, const std::string& value) {
  // The weights say their task; the word names one yoloflow does (detect, segment).
  if (key == "task" && value != "detect" && value != "segment") {
    throw InvalidInput("task=" + value + ": yoloflow does the tasks detect and segment (the weights say which)");
  }
  if (key == "mode" && value != verb) {
    throw InvalidInput("mode=" + value + " on `yoloflow " + verb + "`: the command is the mode; run `yoloflow " + value +
                       " ...`");
  }
}

const std::map<std::string, Verb>& verbs_with_words() {
  static const std::map<std::string, Verb> verbs = make_verbs();
  return verbs;
}

}  // namespace

void describe_words(CLI::App& app) {
  for (const auto& [name, verb] : verbs_with_words()) {
    CLI::App* cmd = app.get_subcommand(name);
    std::string list = "task, mode";
    for (const auto& [key, rule] : verb.rules) list += ", " + key;
    if (verb.run_folder) list += ", project, name, exist_ok";
    cmd->footer("Ultralytics' words KEY=VALUE stand for these options (model= is --weights): " + list +
                "; docs/ultralytics-arguments.md says what each of Ultralytics' arguments does here");
  }
}

std::vector<std::string> words_as_options(const std::vector<std::string>& args_in) {
  const auto& verbs = verbs_with_words();
  std::vector<std::string> args = args_in;
  // The verb: the first argument that is neither an option nor an option's value.
  std::size_t at = 0;
  for (; at < args.size(); ++at) {
    if (args[at] == "--plugin-path" || args[at] == "--log-level") {
      ++at;
      continue;
    }
    if (!args[at].empty() && args[at][0] == '-') continue;
    break;
  }
  if (at >= args.size()) return args;
  // `yolo detect val ...`: the task before the mode.
  // `yolo segment train ...` trains the task: task=segment after the mode (val, predict and export
  // read the task from the weights).
  if (args[at] == "detect" || args[at] == "segment") {
    const std::string task = args[at];
    args.erase(args.begin() + static_cast<long>(at));
    if (at >= args.size()) return args;
    const bool task_given = std::any_of(args.begin(), args.end(), [](const std::string& a) { return a.rfind("task=", 0) == 0; });
    if (task == "segment" && !task_given && (args[at] == "train" || args[at] == "validate" || args[at] == "run")) {
      args.push_back("task=segment");  // last: a pipeline file stays the first argument
    }
  } else if (args[at] == "classify" || args[at] == "pose" || args[at] == "obb" || args[at] == "semantic") {
    throw InvalidInput("`" + args[at] + "`: yoloflow does the tasks detect and segment (yoloflow segment train ..., "
                       "or no task: the model's name says it)");
  }
  const std::string verb = args[at];
  // cfg=FILE.yaml: the file's words first, in its place; the command line's own words win.
  core::expand_cfg_words(args, at + 1);
  // Whether args[i], after the verb, is the value of the option before it (`--data D.yaml`).
  auto option_value = [&](std::size_t i) {
    const std::string& before = args[i - 1];
    return i > at + 1 && !before.empty() && before[0] == '-' && !is_flag(before) && before.find('=') == std::string::npos;
  };
  // Ultralytics' switches written alone (`cos_lr`, `save_txt`) are KEY=True, on every command
  // that takes words; a file of that name stays the file.
  if (verb == "train" || verb == "validate" || verb == "run" || verb == "sweep" || verbs.count(verb) > 0) {
    for (std::size_t i = at + 1; i < args.size(); ++i) {
      const std::string& a = args[i];
      std::error_code ec;
      if (!option_value(i) && a != "resume" && core::is_ultralytics_switch(a) && !std::filesystem::exists(a, ec)) {
        args[i] = a + "=True";
      }
    }
  }
  const auto vit = verbs.find(verb);
  if (vit == verbs.end()) return args;
  const Verb& v = vit->second;

  std::vector<std::string> out(args.begin(), args.begin() + static_cast<long>(at) + 1);
  std::vector<std::string> folder_words;
  std::map<std::string, std::string> given;  // each word's key -> the word
  std::string ignored;                        // Ultralytics' words that ask nothing of this command
  bool out_given = false;
  for (std::size_t i = at + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool value_of_option = option_value(i);
    const auto eq = a.find('=');
    for (const auto& r : kRetired) {
      if (!value_of_option && verb == r.verb && a == r.option) throw InvalidInput(a + ": " + r.reason);
    }
    if (a == "--out") out_given = true;
    if (value_of_option || a.empty() || a[0] == '-' || eq == std::string::npos || eq == 0) {
      out.push_back(a);
      continue;
    }
    const std::string key = a.substr(0, eq), value = a.substr(eq + 1);
    // A word given twice: which was meant is not for yoloflow to guess (as in a pipeline file).
    if (const auto earlier = given.find(key); earlier != given.end()) {
      throw InvalidInput("'" + key + "' is given twice on the command line: " + earlier->second + ", then " + a +
                         "; give it once");
    }
    given.emplace(key, a);
    // A device is read by the one device reader on every command, also on those that run on the
    // CPU only: `device=mps` is refused for what it is.
    if (key == "device" && v.rules.count(key) == 0) {
      std::string device;
      if (!core::read_device_word(value, device)) throw InvalidInput(core::device_refusal(key + "=", value));
    }
    if (core::find_ultralytics_argument(key) != nullptr && core::is_ultralytics_none(value) && key != "model") {
      ignored += (ignored.empty() ? "" : " ") + a;  // Python's None, as a saved run writes it: not set
      continue;
    }
    if (key == "task" || key == "mode") {
      check_task_and_mode(verb, key, value);
      continue;
    }
    if (v.run_folder && (key == "project" || key == "name" || key == "exist_ok")) {
      folder_words.push_back(a);
      continue;
    }
    if (const auto rule = v.rules.find(key); rule != v.rules.end()) {
      for (auto& o : rule->second(key, value)) out.push_back(std::move(o));
      continue;
    }
    if (const std::string refusal = core::ultralytics_refusal(key, verb); !refusal.empty()) {
      // A saved run's arguments replayed: what asks for nothing is taken, and named once below.
      if (!core::ultralytics_word_asks_nothing(key, value, verb)) throw InvalidInput(refusal);
      ignored += (ignored.empty() ? "" : " ") + a;
      continue;
    }
    std::vector<std::string> names{"task", "mode"};
    for (const auto& [name, rule] : v.rules) names.push_back(name);
    if (v.run_folder) names.insert(names.end(), {"project", "name", "exist_ok"});
    const std::string guess = closest_name(key, names);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InvalidInput(a + ": `yoloflow " + verb + "` takes no word '" + key + "'" +
                       (guess.empty() ? "" : "; did you mean '" + guess + "'?") + " (its words: " + list + ")");
  }
  if (!ignored.empty()) {
    std::cerr << "note: " << core::ultralytics_ignored_note(verb, ignored) << std::endl;
  }
  if (!folder_words.empty()) {
    if (out_given) throw InvalidInput("--out and project=/name= both name the output folder; give one");
    const core::RunFolderWords words = core::take_run_folder_words(folder_words);
    const std::string dir = core::ultralytics_run_dir(words, verb);
    if (!dir.empty()) out.insert(out.end(), {"--out", dir});
  }
  return out;
}

}  // namespace yoloflow::cli
