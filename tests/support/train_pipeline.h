#pragma once
// The small training pipeline the CLI tests run on a coco128 subset (data.yaml in the run's
// folder): yolo_dataset -> [flip ->] letterbox -> collate -> train. What each test tunes is
// spliced in as JSON text, so a test reads as the values it cares about.
#include <string>

namespace yoloflow::test {

struct TrainPipeline {
  std::string name = "tiny";
  int epochs = 1;
  int imgsz = 64;
  int seed = 0;
  std::string batch = "2";  // JSON: a number or a schedule
  bool flip = false;        // a flip stage before letterbox
  std::string top;          // more top-level members, e.g. R"("ordered": true, "device": "cpu")"
  std::string scheduler = R"({"plugin": "linear"})";  // the train sink's scheduler
  std::string train;        // the train sink's params after "data" and "scheduler", e.g. R"("nominal_batch": 4)"

  std::string json() const {
    const std::string before_letterbox = flip ? "flip" : "source";
    return std::string("{\n") + "  \"name\": \"" + name + "\", \"epochs\": " + std::to_string(epochs) +
           ", \"imgsz\": " + std::to_string(imgsz) + ", \"seed\": " + std::to_string(seed) +
           (top.empty() ? "" : ",\n  " + top) +
           ",\n"
           "  \"stages\": {\n"
           "    \"source\": {\"plugin\": \"yolo_dataset\", \"params\": {\"data\": \"data.yaml\", \"split\": \"train\"}},\n" +
           (flip ? "    \"flip\": {\"plugin\": \"flip\", \"input\": \"source\"},\n" : "") +
           "    \"letterbox\": {\"plugin\": \"letterbox\", \"input\": \"" + before_letterbox + "\"},\n"
           "    \"batch\": {\"plugin\": \"collate\", \"input\": \"letterbox\", \"params\": {\"batch\": " + batch + "}},\n"
           "    \"train\": {\"plugin\": \"train\", \"input\": \"batch\", \"params\": {\"data\": \"data.yaml\", \"scheduler\": " +
           scheduler +
           (train.empty() ? "" : ", " + train) +
           "}}\n"
           "  }\n"
           "}\n";
  }
};

}  // namespace yoloflow::test
