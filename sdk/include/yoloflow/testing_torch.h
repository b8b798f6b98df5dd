#pragma once
// The contracts of the kinds that exchange tensors with the host: model, loss, optimizer,
// precision, and a callback's tensor hooks. Header-only, so the SDK library stays LibTorch-free
// and these compile with the test's own LibTorch. Components come from
// yoloflow::testing::PluginLibrary (yoloflow/testing.h) as for every kind:
//
//   yoloflow::testing::PluginLibrary lib("build/yoloflow_my_optimizer.so");
//   auto a = lib.make<yoloflow::Optimizer>("lion"), b = lib.make<yoloflow::Optimizer>("lion");
//   auto problems = yoloflow::testing::optimizer_contract(*a, *b);
//
// Each check returns one line per problem found (empty: none), never asserts, so that any test
// framework can report it.
//
// Including this header gives every tensor contract. Each group has its own header as well:
// testing_torch_model.h (model, loss, evaluator), testing_torch_training.h (optimizer,
// precision, a callback's tensor hooks) and testing_torch_fixtures.h (the inputs they feed).
#include "yoloflow/testing.h"
#include "yoloflow/testing_torch_fixtures.h"
#include "yoloflow/testing_torch_model.h"
#include "yoloflow/testing_torch_training.h"
