#pragma once
// The host's name for the SDK's atomic writer (yoloflow/atomic_file.h), the one way every
// file yoloflow writes reaches the disk: a kill at any instant leaves either the old complete
// file or the new complete one, and a target that is not a regular file is refused.
#include <string>
#include <string_view>

#include "yoloflow/atomic_file.h"

namespace yoloflow::core {

using yoloflow::AtomicFileWriter;
using yoloflow::check_writable_target;
using yoloflow::write_file_atomic;

}  // namespace yoloflow::core
