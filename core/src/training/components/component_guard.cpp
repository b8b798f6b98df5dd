#include "training/components/component_guard.h"

#include <exception>
#include <new>
#include <string>

#include <c10/util/Exception.h>

#include "training/device/oom_guard.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

void rethrow_naming_component(const ComponentOrigin& origin, const char* call) {
  const std::string head = origin.text() + " failed in " + call + ": ";
  try {
    throw;
  } catch (const ComponentOutOfMemory&) {
    throw;  // already names the component it happened in
  } catch (const InvalidInput& e) {
    throw InvalidInput(head + e.what());
  } catch (const Error& e) {
    throw Error(head + e.what(), e.exit_code());
  } catch (const std::exception& e) {
    // LibTorch's errors carry a C++ backtrace after the message: the message is what to act on.
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    const std::string message = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
    // Still an allocation failure to the out-of-memory recovery, and without the words
    // "std::bad_alloc" for the user.
    if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) throw ComponentOutOfMemory(head + "out of memory");
    if (is_out_of_memory(e)) throw ComponentOutOfMemory(head + message);
    throw Error(head + message);
  } catch (...) {
    throw Error(head + "unknown exception");
  }
}

}  // namespace yoloflow::core
