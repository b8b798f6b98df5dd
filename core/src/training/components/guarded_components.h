#pragma once
// The model, loss, evaluator, optimizer, precision and scheduler components the train, validate and predict
// sinks use, each held behind a forwarding object of the same interface whose every call goes
// through guarded_call (component_guard.h). However deep in the host a component is called (the
// step engine, a captured CUDA graph, validation, auto batch, checkpoints), its failure names its
// JSON path, kind, plugin and library; the host holds the wrapper where it held the component.
// configure() is forwarded as it is: configure_component (component_factory.h) names the
// component in its own failures.
#include <memory>
#include <string>

#include "runtime/pipeline/component_factory.h"
#include "runtime/pipeline/component_origin.h"
#include "yoloflow/evaluator.h"
#include "yoloflow/loss.h"
#include "yoloflow/model.h"
#include "yoloflow/optimizer.h"
#include "yoloflow/precision.h"
#include "yoloflow/scheduler.h"

namespace yoloflow::core {

std::unique_ptr<Model> guard_component(std::unique_ptr<Model> component, ComponentOrigin origin);
std::unique_ptr<Loss> guard_component(std::unique_ptr<Loss> component, ComponentOrigin origin);
// The evaluator's results are checked too: a value for every column it declares, only those,
// and a finite fitness (the host writes them as they are).
std::unique_ptr<Evaluator> guard_component(std::unique_ptr<Evaluator> component, ComponentOrigin origin);
std::unique_ptr<Optimizer> guard_component(std::unique_ptr<Optimizer> component, ComponentOrigin origin);
std::unique_ptr<PrecisionStrategy> guard_component(std::unique_ptr<PrecisionStrategy> component, ComponentOrigin origin);
std::unique_ptr<Scheduler> guard_component(std::unique_ptr<Scheduler> component, ComponentOrigin origin);

// create_component (component_factory.h), the component guarded with its origin: `path`.
template <class T>
std::unique_ptr<T> create_guarded(const Registry& registry, Kind kind, const json& spec, const std::string& path,
                                  const StageContext& context) {
  auto component = create_component<T>(registry, kind, spec, path, context);
  // Made, so the spec names a registered plugin of that kind.
  const RegisteredComponent& rc = *registry.find(kind, spec.at("plugin").template get<std::string>());
  return guard_component(std::move(component), component_origin(rc, path));
}

}  // namespace yoloflow::core
