#include "training/trainer/param_groups.h"

#include <algorithm>
#include <cmath>

namespace yoloflow::core {

std::vector<ParamGroup> recipe_param_groups(torch::nn::Module& module) {
  std::vector<ParamGroup> groups(3);
  groups[0].name = "weights";
  groups[1].name = "norm";
  groups[2].name = "bias";
  for (auto& np : module.named_parameters()) {
    if (!np.value().requires_grad()) continue;
    const auto& name = np.key();
    if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
      groups[2].params.push_back(np.value());
    } else if (np.value().dim() == 1) {
      groups[1].params.push_back(np.value());
    } else {
      groups[0].params.push_back(np.value());
    }
  }
  return groups;
}

double scaled_weight_decay(double base, std::int64_t images_per_step, std::int64_t nbs) {
  return base * static_cast<double>(images_per_step) / static_cast<double>(nbs);
}

void finish_recipe_groups(std::vector<ParamGroup>& groups, double weight_decay) {
  for (std::size_t i = 0; i < groups.size(); ++i) {
    groups[i].weight_decay = i == 0 ? weight_decay : 0.0;
    if (groups[i].initial_lr == 0.0) groups[i].initial_lr = groups[i].lr;
  }
}

std::int64_t planned_iterations(std::int64_t images_per_epoch, std::int64_t batch, std::int64_t world,
                                std::int64_t nbs, int epochs) {
  const double per_epoch = static_cast<double>(std::max(images_per_epoch * world, batch * world)) /
                           static_cast<double>(std::max(batch * world, nbs));
  return static_cast<std::int64_t>(std::ceil(per_epoch)) * epochs;
}

}  // namespace yoloflow::core
