#include "runtime/plugin/plugin_folder.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "yoloflow/log.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

// What went wrong, in the words a user looks for (not the library's "filesystem error: ...").
std::string problem_text(const std::error_code& ec) {
  if (ec == std::errc::too_many_symbolic_link_levels) return "a symbolic link loop (too many levels of symbolic links)";
  if (ec == std::errc::permission_denied) return "permission denied";
  if (ec == std::errc::no_such_file_or_directory) return "it does not exist";
  if (ec == std::errc::not_a_directory) return "a part of its path is not a folder";
  return ec.message();
}

}  // namespace

std::vector<std::string> plugin_libraries_in(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  const fs::file_status folder = fs::status(dir, ec);
  if (ec == std::errc::no_such_file_or_directory || (!ec && !fs::exists(folder))) {
    YF_LOG_WARN("plugin folder " << dir << " does not exist; skipped");
    return files;
  }
  if (ec) {
    YF_LOG_WARN("plugin folder " << dir << " cannot be read (" << problem_text(ec) << "); skipped");
    return files;
  }
  if (!fs::is_directory(folder)) {
    YF_LOG_WARN("plugin folder " << dir << " is not a folder; skipped");
    return files;
  }
  fs::directory_iterator it(dir, ec);
  if (ec) {
    YF_LOG_WARN("plugin folder " << dir << " cannot be read (" << problem_text(ec) << "); skipped");
    return files;
  }
  for (const fs::directory_iterator end; it != end; it.increment(ec)) {
    const fs::path& path = it->path();
    // Only the name decides whether an entry is a candidate: nothing else is looked at.
    if (path.extension() != ".so") continue;
    std::error_code entry_ec;
    const fs::file_status target = fs::status(path, entry_ec);  // through symbolic links
    if (entry_ec == std::errc::no_such_file_or_directory) {
      YF_LOG_WARN("plugin folder " << dir << ": skipped " << path.filename().string()
                                   << ": a symbolic link to nothing (its target does not exist)");
      continue;
    }
    if (entry_ec) {
      YF_LOG_WARN("plugin folder " << dir << ": skipped " << path.filename().string() << ": "
                                   << problem_text(entry_ec));
      continue;
    }
    if (fs::is_regular_file(target)) files.push_back(path.string());
  }
  if (ec) {
    YF_LOG_WARN("plugin folder " << dir << " could not be read to its end (" << problem_text(ec)
                                 << "); only the libraries listed before were loaded");
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace yoloflow::core
