#pragma once
// Downloads one URL into a `.part` file with libcurl, resuming a part left by a cut transfer
// (HTTP Range from its size). Only the transfer: where the file goes, how it is checked and
// when it is renamed into place is the caller's (runtime/fetch/named_assets.h).
#include <cstdint>
#include <string>

namespace yoloflow::core {

struct FetchOptions {
  // Seconds to wait for a connection: an offline machine answers within these.
  long connect_timeout_s = 10;
  // A transfer slower than low_speed_bytes per second for low_speed_time_s seconds is abandoned
  // (the part is kept). $YOLOFLOW_FETCH_STALL_SECONDS overrides the time (fetch_options()).
  long low_speed_bytes = 1024;
  long low_speed_time_s = 30;
  long max_redirects = 5;
  // A progress bar on stderr when it is a terminal; a few plain lines otherwise.
  bool progress = true;
};

// The defaults with the environment's overrides applied.
FetchOptions fetch_options();

struct FetchOutcome {
  bool ok = false;
  // Why not, in a few words ("HTTP 404", "connection refused", "received 10 of 20 bytes",
  // "no data for 30 s"); "" when ok.
  std::string error;
  std::uint64_t bytes = 0;  // the part's size at the end
};

// Whether this build can fetch (it was built with libcurl).
bool fetch_available();

// Fetches `url` into `part_path` (created when missing, its folder too). A part of N bytes is
// resumed from byte N; a server that ignores the range restarts it from 0. The outcome says
// whether the whole file arrived: received bytes are compared with the size the server
// declared, so a short or overlong body is an error. Never throws for the network; a part
// that could not be written is an error too.
FetchOutcome fetch_url(const std::string& url, const std::string& part_path, const std::string& label,
                       const FetchOptions& options);

}  // namespace yoloflow::core
