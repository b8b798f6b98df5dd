#pragma once
// The plugin boundary.
//
// A plugin library exports exactly one C symbol, `yoloflow_plugin_descriptor`, a function
// returning a pointer to a static descriptor. The host reads the descriptor before it runs
// any plugin code beyond static initialisation, refuses the library when the SDK ABI
// version, the LibTorch version or the C++ standard-library ABI differ from its own (saying
// both), and only then calls `register_components`, which adds the plugin's components to
// the host's registries explicitly (no static registration, which linkers drop).
//
// Write it with the macro at the end of one source file of the plugin:
//
//   static void register_my_plugin(yoloflow::Registrar& r) {
//     r.add_augmentation<MyAug>("my_aug", MyAug::schema(), "What it does.");
//   }
//   YOLOFLOW_PLUGIN("my_plugin", "1.0.0", register_my_plugin)
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "yoloflow/component.h"
#include "yoloflow/export.h"
#include "yoloflow/fields.h"
#include "yoloflow/params.h"
#include "yoloflow/version.h"

// The LibTorch version a plugin was compiled against is part of its ABI: Model, Optimizer,
// Precision and Loss components exchange torch::Tensor with the host. torch/version.h holds
// only macros and is cheap to include.
#if __has_include(<torch/version.h>)
#include <torch/version.h>
#endif

namespace yoloflow {

class Augmentation;
class Batcher;
class Callback;
class DataSource;
class Evaluator;
class Loss;
class Model;
class Monitor;
class Optimizer;
class PrecisionStrategy;
class Scheduler;
class Sink;

using ComponentFactory = Component* (*)();

struct ComponentInfo {
  Kind kind;
  std::string name;
  std::string summary;  // one or two sentences for `plugins`, `describe` and the docs
  Schema schema;
  ComponentFactory factory = nullptr;
  // The annotation fields it gives, keeps and needs (yoloflow/fields.h); undeclared, the
  // kind's default (a detection component's).
  AnnotationContract contract;
};

// The host's side of registration. Components are created by the host through the
// factory; the kind-typed add_* helpers guarantee the object implements that kind's
// interface, so the host needs no RTTI across library boundaries.
class YOLOFLOW_SDK_API Registrar {
 public:
  virtual ~Registrar();
  virtual void add(ComponentInfo info) = 0;

  template <class T>
  void add_source(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, DataSource>(Kind::Source, std::move(name), std::move(schema), std::move(summary),
                             std::move(contract));
  }
  template <class T>
  void add_augmentation(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, Augmentation>(Kind::Augmentation, std::move(name), std::move(schema),
                               std::move(summary), std::move(contract));
  }
  template <class T>
  void add_batcher(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, Batcher>(Kind::Batcher, std::move(name), std::move(schema), std::move(summary),
                             std::move(contract));
  }
  template <class T>
  void add_sink(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, Sink>(Kind::Sink, std::move(name), std::move(schema), std::move(summary),
                             std::move(contract));
  }
  template <class T>
  void add_model(std::string name, Schema schema, std::string summary) {
    add_typed<T, Model>(Kind::Model, std::move(name), std::move(schema), std::move(summary));
  }
  template <class T>
  void add_optimizer(std::string name, Schema schema, std::string summary) {
    add_typed<T, Optimizer>(Kind::Optimizer, std::move(name), std::move(schema),
                            std::move(summary));
  }
  template <class T>
  void add_precision(std::string name, Schema schema, std::string summary) {
    add_typed<T, PrecisionStrategy>(Kind::Precision, std::move(name), std::move(schema),
                                    std::move(summary));
  }
  template <class T>
  void add_monitor(std::string name, Schema schema, std::string summary) {
    add_typed<T, Monitor>(Kind::Monitor, std::move(name), std::move(schema), std::move(summary));
  }
  template <class T>
  void add_scheduler(std::string name, Schema schema, std::string summary) {
    add_typed<T, Scheduler>(Kind::Scheduler, std::move(name), std::move(schema),
                            std::move(summary));
  }
  template <class T>
  void add_callback(std::string name, Schema schema, std::string summary) {
    add_typed<T, Callback>(Kind::Callback, std::move(name), std::move(schema), std::move(summary));
  }
  template <class T>
  void add_evaluator(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, Evaluator>(Kind::Evaluator, std::move(name), std::move(schema), std::move(summary),
                            std::move(contract));
  }
  template <class T>
  void add_loss(std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    add_typed<T, Loss>(Kind::Loss, std::move(name), std::move(schema), std::move(summary),
                             std::move(contract));
  }

 private:
  template <class T, class Interface>
  void add_typed(Kind kind, std::string name, Schema schema, std::string summary, AnnotationContract contract = {}) {
    static_assert(std::is_base_of<Interface, T>::value,
                  "the component class does not implement this kind's interface");
    ComponentInfo info;
    info.kind = kind;
    info.name = std::move(name);
    info.summary = std::move(summary);
    info.schema = std::move(schema);
    info.contract = std::move(contract);
    // Upcast through the kind's interface so the host may downcast with static_cast.
    info.factory = []() -> Component* { return static_cast<Interface*>(new T()); };
    add(std::move(info));
  }
};

}  // namespace yoloflow

extern "C" {

// Layout is frozen for every ABI version: the host reads `abi_version` first and stops
// there when it differs, so later fields may change in a new ABI version.
struct yoloflow_plugin_descriptor_t {
  std::uint32_t abi_version;      // YOLOFLOW_SDK_ABI_VERSION the plugin was built with
  std::uint32_t descriptor_size;  // sizeof(yoloflow_plugin_descriptor_t)
  const char* name;               // library name, e.g. "yolo11"
  const char* version;            // the plugin's own version, e.g. "1.2.0"
  const char* sdk_version;        // YOLOFLOW_VERSION_STRING it was built with
  const char* torch_version;      // TORCH_VERSION it was built with ("none" without torch)
  int cxx11_abi;                  // _GLIBCXX_USE_CXX11_ABI (libstdc++), -1 if unknown
  const char* compiler;           // for messages only
  void (*register_components)(yoloflow::Registrar& registrar);
};

typedef const yoloflow_plugin_descriptor_t* (*yoloflow_plugin_descriptor_fn)();
}

#define YOLOFLOW_DESCRIPTOR_SYMBOL "yoloflow_plugin_descriptor"

#if defined(TORCH_VERSION)
#define YOLOFLOW_PLUGIN_TORCH_VERSION TORCH_VERSION
#else
#define YOLOFLOW_PLUGIN_TORCH_VERSION "none"
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI)
#define YOLOFLOW_PLUGIN_CXX11_ABI _GLIBCXX_USE_CXX11_ABI
#else
#define YOLOFLOW_PLUGIN_CXX11_ABI -1
#endif
#define YOLOFLOW_PLUGIN_STR2(x) #x
#define YOLOFLOW_PLUGIN_STR(x) YOLOFLOW_PLUGIN_STR2(x)
#if defined(__clang__)
#define YOLOFLOW_PLUGIN_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define YOLOFLOW_PLUGIN_COMPILER \
  "gcc " YOLOFLOW_PLUGIN_STR(__GNUC__) "." YOLOFLOW_PLUGIN_STR(__GNUC_MINOR__)
#else
#define YOLOFLOW_PLUGIN_COMPILER "unknown"
#endif

// Defines the plugin's descriptor. Use once per plugin library.
#define YOLOFLOW_PLUGIN(plugin_name, plugin_version, register_fn)                           \
  extern "C" YOLOFLOW_EXPORT const yoloflow_plugin_descriptor_t* yoloflow_plugin_descriptor() { \
    static const yoloflow_plugin_descriptor_t descriptor = {                                \
        YOLOFLOW_SDK_ABI_VERSION,                                                           \
        static_cast<std::uint32_t>(sizeof(yoloflow_plugin_descriptor_t)),                   \
        plugin_name,                                                                        \
        plugin_version,                                                                     \
        YOLOFLOW_VERSION_STRING,                                                            \
        YOLOFLOW_PLUGIN_TORCH_VERSION,                                                      \
        YOLOFLOW_PLUGIN_CXX11_ABI,                                                          \
        YOLOFLOW_PLUGIN_COMPILER,                                                           \
        &register_fn};                                                                      \
    return &descriptor;                                                                     \
  }
