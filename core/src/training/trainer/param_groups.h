#pragma once
// Ultralytics' three parameter groups and what the recipe does with them around the
// optimizer plugin: "weights" (convolution and linear weights, with weight decay), "norm"
// (one-dimensional weights of norm layers, no decay) and "bias" (no decay), in that order
// (results.csv's lr/pg0..2); weight decay scaled to the images per optimizer step; the run's
// planned optimizer steps (the `auto` optimizer chooses by them).
#include <cstdint>
#include <vector>

#include "yoloflow/optimizer.h"

namespace yoloflow::core {

// Every trainable parameter of `module`, in the three groups (lr and decay left for the optimizer).
std::vector<ParamGroup> recipe_param_groups(torch::nn::Module& module);

// Weight decay for `images_per_step` images per optimizer step (batch x ranks x accumulate),
// given the decay meant for the nominal batch `nbs`.
double scaled_weight_decay(double base, std::int64_t images_per_step, std::int64_t nbs);

// After Optimizer::setup(): decay on the weights group only (`weight_decay`, already scaled),
// none on norm weights and biases; a group without an initial lr starts from its lr.
void finish_recipe_groups(std::vector<ParamGroup>& groups, double weight_decay);

// Optimizer steps the run plans: ceil(images per epoch / max(batch x ranks, nbs)) x epochs, as
// Ultralytics counts them for its `auto` optimizer.
std::int64_t planned_iterations(std::int64_t images_per_epoch, std::int64_t batch, std::int64_t world,
                                std::int64_t nbs, int epochs);

}  // namespace yoloflow::core
