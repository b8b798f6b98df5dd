// Libraries whose descriptor is broken in one way each (the variant it is built as): the host must
// refuse them with one line naming what is wrong, before reading through a bad pointer or calling
// one, and never crash. Apart from the broken part each is a well-formed plugin.
#include <cstdint>
#include <cstring>

#include "yoloflow/augmentation.h"
#include "yoloflow/plugin.h"

namespace {

class Nop final : public yoloflow::Augmentation {
 public:
  void apply(yoloflow::Sample&, yoloflow::AugmentContext&) override {}
};

void register_it(yoloflow::Registrar& r) { r.add_augmentation<Nop>("test_bad_descriptor_nop", {}, "Does nothing."); }

// A descriptor as YOLOFLOW_PLUGIN writes it, with the given strings and register function.
constexpr yoloflow_plugin_descriptor_t descriptor_of(const char* name, const char* version, const char* torch,
                                                     void (*reg)(yoloflow::Registrar&)) {
  return {YOLOFLOW_SDK_ABI_VERSION,
          static_cast<std::uint32_t>(sizeof(yoloflow_plugin_descriptor_t)),
          name,
          version,
          YOLOFLOW_VERSION_STRING,
          torch,
          YOLOFLOW_PLUGIN_CXX11_ABI,
          YOLOFLOW_PLUGIN_COMPILER,
          reg};
}

[[maybe_unused]] const yoloflow_plugin_descriptor_t kWellFormed =
    descriptor_of("test_bad_descriptor", "1.0.0", YOLOFLOW_PLUGIN_TORCH_VERSION, &register_it);

// Data, not code: what a register function pointer into the data segment points at.
[[maybe_unused]] unsigned char data_not_code[64] = {1};

// Hides a pointer's origin from the compiler (a stack address returned on purpose).
const void* volatile laundered = nullptr;

[[maybe_unused]] __attribute__((noinline)) const yoloflow_plugin_descriptor_t* on_the_stack() {
  yoloflow_plugin_descriptor_t local = kWellFormed;
  laundered = &local;
  return static_cast<const yoloflow_plugin_descriptor_t*>(laundered);
}

}  // namespace

#if defined(YOLOFLOW_TEST_VARIANT_DATA_SYMBOL)
// The descriptor itself exported under the function's name: calling it would jump into data.
extern "C" YOLOFLOW_EXPORT yoloflow_plugin_descriptor_t yoloflow_plugin_descriptor =
    descriptor_of("test_bad_descriptor", "1.0.0", YOLOFLOW_PLUGIN_TORCH_VERSION, &register_it);
#else
extern "C" YOLOFLOW_EXPORT const yoloflow_plugin_descriptor_t* yoloflow_plugin_descriptor() {
#if defined(YOLOFLOW_TEST_VARIANT_TINY_POINTER)
  return reinterpret_cast<const yoloflow_plugin_descriptor_t*>(std::uintptr_t{0x10});
#elif defined(YOLOFLOW_TEST_VARIANT_HEAP_POINTER)
  // Well-formed contents, but on the heap, where the host cannot check what it points at.
  return new yoloflow_plugin_descriptor_t(kWellFormed);
#elif defined(YOLOFLOW_TEST_VARIANT_STACK_POINTER)
  return on_the_stack();
#elif defined(YOLOFLOW_TEST_VARIANT_PAST_END)
  return reinterpret_cast<const yoloflow_plugin_descriptor_t*>(reinterpret_cast<std::uintptr_t>(&kWellFormed) +
                                                               (std::uintptr_t{1} << 30));
#elif defined(YOLOFLOW_TEST_VARIANT_NULL_TORCH)
  static const yoloflow_plugin_descriptor_t d = descriptor_of("test_bad_descriptor", "1.0.0", nullptr, &register_it);
  return &d;
#elif defined(YOLOFLOW_TEST_VARIANT_NULL_NAME)
  static const yoloflow_plugin_descriptor_t d =
      descriptor_of(nullptr, "1.0.0", YOLOFLOW_PLUGIN_TORCH_VERSION, &register_it);
  return &d;
#elif defined(YOLOFLOW_TEST_VARIANT_NULL_VERSION)
  static const yoloflow_plugin_descriptor_t d =
      descriptor_of("test_bad_descriptor", nullptr, YOLOFLOW_PLUGIN_TORCH_VERSION, &register_it);
  return &d;
#elif defined(YOLOFLOW_TEST_VARIANT_FOREIGN_NAME)
  // The name in heap memory: a string the host cannot tell from garbage.
  static const yoloflow_plugin_descriptor_t d =
      descriptor_of(strdup("test_bad_descriptor"), "1.0.0", YOLOFLOW_PLUGIN_TORCH_VERSION, &register_it);
  return &d;
#elif defined(YOLOFLOW_TEST_VARIANT_REGISTER_OUTSIDE_CODE)
  static const yoloflow_plugin_descriptor_t d =
      descriptor_of("test_bad_descriptor", "1.0.0", YOLOFLOW_PLUGIN_TORCH_VERSION,
                    reinterpret_cast<void (*)(yoloflow::Registrar&)>(reinterpret_cast<std::uintptr_t>(data_not_code)));
  return &d;
#else
#error "bad_descriptor is built once per variant (variants.cmake)"
#endif
}
#endif
