#include "yoloflow/error.h"

namespace yoloflow {

Error::Error(const std::string& message, int exit_code)
    : std::runtime_error(message), exit_code_(exit_code) {}
Error::~Error() = default;

InvalidInput::InvalidInput(const std::string& message) : Error(message, kExitInvalid) {}
InvalidInput::~InvalidInput() = default;

}  // namespace yoloflow
