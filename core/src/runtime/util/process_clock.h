#pragma once
// Seconds since this process started, as the kernel counts them: the time a user waits from the
// command line, loading LibTorch's libraries and static initialisers included, which a clock
// started in main() would miss.
namespace yoloflow::core {

// Seconds since the process started; a negative value where the system does not say (no /proc).
double seconds_since_process_start();

}  // namespace yoloflow::core
