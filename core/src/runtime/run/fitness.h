#pragma once
// Fitness: the one number that picks best.pt, drives `patience` and ranks sweep runs.
// Ultralytics 8.4 scores a detector by mAP50-95 alone (its Metric.fitness weights P, R and
// mAP50 with 0), and so does yoloflow.

namespace yoloflow::core {

inline double detection_fitness(double /*map50*/, double map50_95) { return map50_95; }

}  // namespace yoloflow::core
