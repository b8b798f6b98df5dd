#pragma once
// args.yaml in a training run's folder, as Ultralytics writes one beside its weights: the run's
// arguments under Ultralytics' keys, in its order, so that `yoloflow train cfg=RUN/args.yaml`
// (or Ultralytics' own `yolo train cfg=...`) asks for the same run.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace yoloflow::core {

// The text of args.yaml: task, mode, model, data, epochs, imgsz, batch, device, seed and
// deterministic as the resolved `pipeline` has them, every other Ultralytics word of `words`
// (the command line's, cfg= files read) as it was given, and save_dir. Keys the run has no
// value for are left out rather than written with a default the pipeline may not use.
std::string run_args_yaml(const nlohmann::json& pipeline, const std::string& sink, const std::vector<std::string>& words,
                          const std::string& run_dir);

}  // namespace yoloflow::core
