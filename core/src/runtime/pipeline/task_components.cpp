#include "runtime/pipeline/task_components.h"

#include <vector>

#include "pipeline/default_documents_text.h"
#include "runtime/pipeline/json_text.h"

namespace yoloflow::core {
namespace {

// core/resources/task-components.json, read once (built in: only a broken build fails here).
const std::vector<TaskComponents>& table() {
  static const std::vector<TaskComponents> t = [] {
    const json doc = read_json_text(generated::task_components_text(), "core/resources/task-components.json (built in)");
    std::vector<TaskComponents> out;
    for (const auto& [task, c] : doc.items()) {
      if (task.empty() || task[0] == '_' || !c.is_object()) continue;
      out.push_back({task, c.value("loss", std::string()), c.value("evaluator", std::string()), c.value("masks", false)});
    }
    return out;
  }();
  return t;
}

}  // namespace

const TaskComponents* task_components(const std::string& task) {
  for (const auto& t : table()) {
    if (t.task == task) return &t;
  }
  return nullptr;
}

bool is_task_component(const std::string& what, const std::string& plugin) {
  for (const auto& t : table()) {
    if ((what == "loss" ? t.loss : t.evaluator) == plugin) return true;
  }
  return false;
}

}  // namespace yoloflow::core
