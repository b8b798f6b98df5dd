#pragma once
// The built-in components each YOLO task trains and validates with (core/resources/
// task-components.json: the host's code names no plugin). A model word that names a task
// (model=yolo11n-seg.yaml, model=yolo11s) makes a pipeline's loss, evaluator and batchers those
// of its task, as `yolo train model=yolo11n-seg.yaml` does in Ultralytics, without a pipeline of
// its own for each task.
#include <string>

namespace yoloflow::core {

struct TaskComponents {
  std::string task;       // Ultralytics' name: "detect", "segment"
  std::string loss;       // the train sink's loss plugin
  std::string evaluator;  // the train sink's evaluator plugin
  bool masks = false;     // batchers rasterise the instances' outlines into mask targets
};

// The task's components; null for a task with none built in.
const TaskComponents* task_components(const std::string& task);

// Whether `plugin` is the loss (`what` "loss") or evaluator ("evaluator") of a built-in task:
// a pipeline's own plugin is never replaced by a model word.
bool is_task_component(const std::string& what, const std::string& plugin);

}  // namespace yoloflow::core
