#include "runtime/fetch/http_fetch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#ifdef YOLOFLOW_WITH_CURL
#include <curl/curl.h>
#endif

#include "runtime/util/ascii_lower.h"

namespace yoloflow::core {

FetchOptions fetch_options() {
  FetchOptions o;
  // For slow links (raise it) and for tests of a stalled server (lower it).
  if (const char* v = std::getenv("YOLOFLOW_FETCH_STALL_SECONDS"); v && *v) {
    char* end = nullptr;
    const long s = std::strtol(v, &end, 10);
    if (end && *end == '\0' && s > 0) o.low_speed_time_s = s;
  }
  return o;
}

#ifndef YOLOFLOW_WITH_CURL

bool fetch_available() { return false; }

FetchOutcome fetch_url(const std::string&, const std::string&, const std::string&, const FetchOptions&) {
  FetchOutcome out;
  out.error = "this build of yoloflow cannot fetch files (it was built without libcurl)";
  return out;
}

#else

namespace {

std::string human_bytes(double n) {
  char buf[32];
  if (n >= 1e9) {
    std::snprintf(buf, sizeof buf, "%.2f GB", n / 1e9);
  } else if (n >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.1f MB", n / 1e6);
  } else if (n >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.0f kB", n / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", n);
  }
  return buf;
}

// One transfer's state, shared by libcurl's callbacks.
struct Transfer {
  int fd = -1;
  std::uint64_t offset = 0;   // bytes the part held when this request was sent
  std::uint64_t written = 0;  // bytes this request added
  bool body_started = false;
  long status = 0;
  std::int64_t content_length = -1;
  std::int64_t range_start = -1, range_total = -1;
  std::string write_error;
  // Progress
  std::string label;
  bool progress = false, tty = false;
  int last_quarter = -1;
  std::chrono::steady_clock::time_point started, last_draw;
  bool drew = false, drew_full = false;
};

// Each response's headers (a redirect's, then the file's): only the last response's count.
std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const std::string line(data, size * n);
  const std::string lower = ascii_lower(line);
  if (lower.rfind("http/", 0) == 0) {
    t.content_length = -1;
    t.range_start = t.range_total = -1;
    const auto space = line.find(' ');
    if (space != std::string::npos) t.status = std::strtol(line.c_str() + space + 1, nullptr, 10);
  } else if (lower.rfind("content-length:", 0) == 0) {
    t.content_length = std::strtoll(line.c_str() + 15, nullptr, 10);
  } else if (lower.rfind("content-range:", 0) == 0) {
    // "Content-Range: bytes START-END/TOTAL"
    long long start = -1, end = -1, total = -1;
    if (std::sscanf(lower.c_str() + 14, " bytes %lld-%lld/%lld", &start, &end, &total) >= 2) {
      t.range_start = start;
      t.range_total = total;
    }
  }
  return size * n;
}

bool write_all(int fd, const char* p, std::size_t n, std::string& error) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      error = std::strerror(errno);
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// A server that ignores the range sends the whole file (200): the part starts over.
bool restart_part(Transfer& t) {
  if (::ftruncate(t.fd, 0) != 0 || ::lseek(t.fd, 0, SEEK_SET) != 0) {
    t.write_error = std::strerror(errno);
    return false;
  }
  t.offset = 0;
  return true;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.body_started) {
    t.body_started = true;
    if (t.status == 200 && t.offset > 0 && !restart_part(t)) return 0;
    if (t.status == 206 && t.range_start >= 0 && static_cast<std::uint64_t>(t.range_start) != t.offset) {
      t.write_error = "the server answered the range request from byte " + std::to_string(t.range_start) +
                      " instead of " + std::to_string(t.offset);
      return 0;
    }
  }
  if (!write_all(t.fd, data, size * n, t.write_error)) return 0;
  t.written += size * n;
  return size * n;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  if (!t.progress || now <= 0) return 0;
  const double done = static_cast<double>(t.offset + static_cast<std::uint64_t>(now));
  const double all = total > 0 ? static_cast<double>(t.offset + static_cast<std::uint64_t>(total)) : 0.0;
  const auto clock = std::chrono::steady_clock::now();
  if (t.tty) {
    // Redrawn in place ten times a second at most, and once at 100%.
    const bool full = all > 0 && done >= all;
    if (full && t.drew_full) return 0;
    if (t.drew && !full && clock - t.last_draw < std::chrono::milliseconds(100)) return 0;
    t.drew_full = full;
    t.last_draw = clock;
    t.drew = true;
    const double seconds = std::chrono::duration<double>(clock - t.started).count();
    const double rate = seconds > 0 ? static_cast<double>(now) / seconds : 0.0;
    if (all > 0) {
      const int width = 30;
      const int filled = static_cast<int>(width * done / all);
      std::string bar(static_cast<std::size_t>(filled), '#');
      bar.resize(width, '.');
      std::fprintf(stderr, "\r%s [%s] %3.0f%% %s/%s %s/s   ", t.label.c_str(), bar.c_str(), 100.0 * done / all,
                   human_bytes(done).c_str(), human_bytes(all).c_str(), human_bytes(rate).c_str());
    } else {
      std::fprintf(stderr, "\r%s %s %s/s   ", t.label.c_str(), human_bytes(done).c_str(), human_bytes(rate).c_str());
    }
  } else if (all > 0) {
    // A log or a pipe: a line at each quarter, no carriage returns.
    const int quarter = static_cast<int>(4 * done / all);
    if (quarter > t.last_quarter && quarter > 0) {
      t.last_quarter = quarter;
      std::fprintf(stderr, "%s: %d%% (%s of %s)\n", t.label.c_str(), 25 * quarter, human_bytes(done).c_str(),
                   human_bytes(all).c_str());
    }
  }
  return 0;
}

std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  const auto end = url.find('/', start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// What went wrong in a user's words; libcurl's own message where there is no better one.
std::string describe(CURLcode code, const Transfer& t, const std::string& url, const FetchOptions& o,
                     const char* detail) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
      return "cannot resolve " + host_of(url) + " (no network?)";
    case CURLE_COULDNT_CONNECT:
      return "cannot connect to " + host_of(url) + " (no network, or nothing answers there)";
    case CURLE_OPERATION_TIMEDOUT:
      if (t.status == 0) return "no answer from " + host_of(url);
      return "the transfer stalled (under " + std::to_string(o.low_speed_bytes) + " bytes/s for " +
             std::to_string(o.low_speed_time_s) + " s) after " + std::to_string(t.offset + t.written) + " bytes";
    case CURLE_TOO_MANY_REDIRECTS:
      return "more than " + std::to_string(o.max_redirects) + " redirects";
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
      if (t.content_length >= 0) {
        return "the connection was cut after " + std::to_string(t.written) + " of " +
               std::to_string(t.content_length) + " bytes";
      }
      return "the connection was cut after " + std::to_string(t.written) + " bytes";
    default:
      return detail && *detail ? std::string(detail) : std::string(curl_easy_strerror(code));
  }
}

}  // namespace

bool fetch_available() { return true; }

FetchOutcome fetch_url(const std::string& url, const std::string& part_path, const std::string& label,
                       const FetchOptions& options) {
  static std::once_flag init;
  std::call_once(init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  FetchOutcome out;
  std::error_code ec;
  const auto folder = std::filesystem::path(part_path).parent_path();
  if (!folder.empty()) std::filesystem::create_directories(folder, ec);
  if (ec) {
    out.error = "cannot create " + folder.string() + ": " + ec.message();
    return out;
  }
  const int fd = ::open(part_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.error = "cannot write " + part_path + (fd < 0 ? std::string(": ") + std::strerror(errno) : ": not a regular file");
    if (fd >= 0) ::close(fd);
    return out;
  }
  // A range the server cannot satisfy (the part is as long as the file, or longer: the file
  // changed) is asked again from byte 0, once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    Transfer t;
    t.fd = fd;
    t.offset = static_cast<std::uint64_t>(::lseek(fd, 0, SEEK_END));
    t.label = label;
    t.progress = options.progress;
    t.tty = ::isatty(2) != 0;
    t.started = std::chrono::steady_clock::now();
    char detail[CURL_ERROR_SIZE] = {0};
    CURL* curl = curl_easy_init();
    if (!curl) {
      out.error = "libcurl could not start a transfer";
      break;
    }
    const std::string range = std::to_string(t.offset) + "-";
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, options.max_redirects);
    // Never another scheme (file://, ftp://), not even through a redirect.
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, options.low_speed_time_s);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "yoloflow");
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
    if (t.offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (t.progress && t.tty && t.drew) std::fputc('\n', stderr);
    if (status != 0) t.status = status;
    // An empty 200 answer to a range request: the file is empty, the part starts over too.
    if (code == CURLE_OK && t.status == 200 && !t.body_started && t.offset > 0 && !restart_part(t)) {
      out.error = "cannot write " + part_path + ": " + t.write_error;
      break;
    }
    out.bytes = t.offset + t.written;
    if (code == CURLE_HTTP_RETURNED_ERROR && t.status == 416 && t.offset > 0 && attempt == 0) {
      if (!restart_part(t)) {
        out.error = "cannot write " + part_path + ": " + t.write_error;
        break;
      }
      continue;
    }
    if (code == CURLE_HTTP_RETURNED_ERROR) {
      out.error = "HTTP " + std::to_string(t.status);
    } else if (code == CURLE_WRITE_ERROR && !t.write_error.empty()) {
      out.error = t.write_error.rfind("the server", 0) == 0 ? t.write_error
                                                            : "cannot write " + part_path + ": " + t.write_error;
    } else if (code != CURLE_OK) {
      out.error = describe(code, t, url, options, detail);
    } else {
      // The size the server declared for the whole file, against what the part holds.
      std::int64_t expected = -1;
      if (t.status == 206) {
        expected = t.range_total >= 0 ? t.range_total
                                      : (t.content_length >= 0 ? static_cast<std::int64_t>(t.offset) + t.content_length : -1);
      } else if (t.content_length >= 0) {
        expected = t.content_length;
      }
      if (expected >= 0 && static_cast<std::uint64_t>(expected) != out.bytes) {
        out.error = "received " + std::to_string(out.bytes) + " bytes where the server declared " +
                    std::to_string(expected);
      } else if (::fdatasync(fd) != 0) {
        out.error = "cannot write " + part_path + ": " + std::strerror(errno);
      } else {
        out.ok = true;
      }
    }
    break;
  }
  ::close(fd);
  return out;
}

#endif

}  // namespace yoloflow::core
