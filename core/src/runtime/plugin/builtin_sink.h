#pragma once
// Sinks compiled into the host (train, validate, predict) register like a plugin's
// components, under the file "<built-in>" and the host's version.
#include <string>
#include <utility>

#include "runtime/plugin/host_registry.h"
#include "yoloflow/sink.h"
#include "yoloflow/version.h"

namespace yoloflow::core {

// `traits`: what else the host knows of it (registry.h, BuiltinTraits).
template <class SinkType>
void add_builtin_sink(Registry& registry, std::string name, std::string summary, BuiltinTraits traits = {}) {
  ComponentInfo info;
  info.kind = Kind::Sink;
  info.name = std::move(name);
  info.summary = std::move(summary);
  info.schema = SinkType::schema();
  info.factory = []() -> Component* { return static_cast<Sink*>(new SinkType()); };
  registry.add(std::move(info), kBuiltinFile, "yoloflow", YOLOFLOW_VERSION_STRING, traits);
}

}  // namespace yoloflow::core
