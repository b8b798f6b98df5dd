#pragma once
// Calls into plugin code that name the plugin when they fail. A component the train, validate
// and predict sinks use (model, loss, optimizer, precision, scheduler) is called from many places
// of the host; an exception from it would otherwise surface as the host's own failure ("stage
// 'train' (sink 'train', <built-in>) failed on batch 0: vector::_M_range_check"). guarded_call
// turns it into a yoloflow::Error naming the component's JSON path, kind, plugin and library,
// and the call that failed.
//
// Free when nothing throws: a try block costs nothing until an exception unwinds through it, and
// the message is only built then. An out-of-memory error becomes a ComponentOutOfMemory, which
// the train sink's recovery (oom_guard.h) recognises as one.
#include <utility>

#include "runtime/pipeline/component_origin.h"

namespace yoloflow::core {

// Rethrows the exception being handled (call it only inside a catch block) as a yoloflow::Error
// "<origin> failed in <call>: <message>"; a yoloflow::Error keeps its exit code (an InvalidInput
// stays one), an out-of-memory error becomes a ComponentOutOfMemory.
[[noreturn]] void rethrow_naming_component(const ComponentOrigin& origin, const char* call);

template <class F>
decltype(auto) guarded_call(const ComponentOrigin& origin, const char* call, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (...) {
    rethrow_naming_component(origin, call);
  }
}

}  // namespace yoloflow::core
