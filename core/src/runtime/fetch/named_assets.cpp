#include "runtime/fetch/named_assets.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "runtime/fetch/folder_lock.h"
#include "runtime/fetch/http_fetch.h"
#include "runtime/fetch/sha256.h"
#include "runtime/util/string_affixes.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string();
}

std::string cache_root() {
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/yoloflow";
  if (const std::string home = env("HOME"); !home.empty()) return home + "/.cache/yoloflow";
  // No home (a bare container): beside the working folder, as nothing better is known.
  return (fs::current_path() / ".yoloflow-cache").string();
}

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

std::string weights_folder() {
  const std::string v = env("YOLOFLOW_WEIGHTS_DIR");
  return v.empty() ? cache_root() + "/weights" : v;
}

std::string datasets_folder() {
  const std::string v = env("YOLOFLOW_DATASETS_DIR");
  return v.empty() ? cache_root() + "/datasets" : v;
}

std::string sources_folder() {
  const std::string v = env("YOLOFLOW_SOURCES_DIR");
  return v.empty() ? cache_root() + "/sources" : v;
}

std::string assets_base_url() {
  std::string v = env("YOLOFLOW_ASSETS_URL");
  if (v.empty()) v = "https://github.com/ultralytics/assets/releases/download";
  while (!v.empty() && v.back() == '/') v.pop_back();
  return v;
}

bool is_released_weights_name(const std::string& name) {
  for (const char* scale : {"n", "s", "m", "l", "x"}) {
    const std::string stem = std::string("yolo11") + scale;
    if (name == stem + ".pt" || name == stem + "-seg.pt") return true;
  }
  return false;
}

std::string released_weights_url(const std::string& name) { return assets_base_url() + "/v8.3.0/" + name; }

void fetch_file(const std::string& url, const std::string& dest, const FileCheck& check, const std::string& hint) {
  const std::string name = fs::path(dest).filename().string();
  const std::string folder = fs::path(dest).parent_path().string();
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw InvalidInput("cannot create " + folder + " to fetch " + name + " into: " + ec.message());
  FolderLock lock(folder);
  if (fs::is_regular_file(dest, ec)) return;  // another process fetched it while this one waited
  const std::string part = dest + ".part";
  const auto resumed = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
  if (ec) fs::remove(part, ec);
  if (!fetch_available()) {
    throw InvalidInput("cannot fetch " + url + ": this build of yoloflow cannot fetch files (built without libcurl); " +
                       hint);
  }
  if (resumed > 0) {
    YF_LOG_INFO("fetching " << url << " into " << dest << ", resuming after the " << resumed << " bytes of " << part);
  } else {
    YF_LOG_INFO("fetching " << url << " into " << dest);
  }
  const FetchOutcome got = fetch_url(url, part, name, fetch_options());
  if (!got.ok) {
    const auto kept = fs::is_regular_file(part, ec) ? fs::file_size(part, ec) : 0;
    std::string tail;
    if (kept > 0 && !ec) {
      tail = " (the " + std::to_string(kept) + " bytes received are kept in " + part + "; running again resumes)";
    } else {
      fs::remove(part, ec);
    }
    throw InvalidInput("cannot fetch " + url + ": " + got.error + tail + "; " + hint);
  }
  try {
    check(part);
  } catch (const Error& e) {
    fs::remove(part, ec);
    throw InvalidInput("fetched " + url + " but it is not usable, so it was removed: " + e.what());
  }
  const std::string sha = sha256_of_file(part);
  fs::rename(part, dest, ec);
  if (ec) throw InvalidInput("cannot rename " + part + " to " + dest + ": " + ec.message());
  sync_folder(folder);
  YF_LOG_INFO("fetched " << name << ": " << got.bytes << " bytes, SHA-256 " << sha << ", kept as " << dest);
}

std::string locate_source_url(const std::string& url, const FileCheck& check) {
  // The last path segment, without a query or a fragment, is the file's name.
  std::string path = url.substr(url.find("://") + 3);
  path = path.substr(0, path.find_first_of("?#"));
  const auto slash = path.find('/');
  const std::string name = slash == std::string::npos ? std::string() : path.substr(path.rfind('/') + 1);
  if (name.empty() || name == "." || name == "..") {
    throw InvalidInput(url + ": names no file (predict fetches a URL that ends in a file name, e.g. "
                             "https://ultralytics.com/images/bus.jpg)");
  }
  Sha256 digest;
  digest.update(url.data(), url.size());
  const std::string folder = sources_folder() + "/" + digest.hex().substr(0, 16);
  const std::string kept = folder + "/" + name;
  std::error_code ec;
  if (fs::is_regular_file(kept, ec)) return kept;
  fetch_file(url, kept, check, "download it by hand and give its path as the source");
  return kept;
}

std::string locate_weights(const std::string& value, const FileCheck& check) {
  std::error_code ec;
  if (fs::exists(value, ec)) return value;
  // Only a bare name is looked up and fetched: a path with a folder names that file.
  if (value.find('/') != std::string::npos || !is_released_weights_name(value)) return value;
  const std::string folder = weights_folder();
  const std::string kept = folder + "/" + value;
  if (fs::is_regular_file(kept, ec)) return kept;
  const std::string url = released_weights_url(value);
  fetch_file(url, kept, check,
             "download it by hand and put it in " + folder + " (or give its path: model=PATH)");
  return kept;
}

}  // namespace yoloflow::core
