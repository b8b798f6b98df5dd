#include "runtime/run/run_folder.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "runtime/run/earlier_run.h"
#include "runtime/util/path_words.h"
#include "runtime/util/remove_tree.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/printable.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

std::string errno_text(int e) {
  switch (e) {
    case EROFS: return "the file system is read-only";
    case EACCES:
    case EPERM: return "permission denied";
    case ENOSPC: return "no space left on the device";
    case ENOTDIR: return "a part of the path is a file, not a folder";
    default: return std::strerror(e);
  }
}

// ".results.csv.tmp.1234.0.csv": what the atomic writer (yoloflow/atomic_file.h) names a file
// before renaming it: ".NAME.tmp.PID.N" and the name's extension, if it has one.
bool is_atomic_temporary(const std::string& name) {
  if (name.size() < 2 || name[0] != '.') return false;
  const auto at = name.find(".tmp.");
  if (at == std::string::npos || at == 0) return false;
  const std::string original = name.substr(1, at - 1);
  std::string tail = name.substr(at + 5);  // PID.N, then the extension
  const auto ext_at = original.rfind('.');
  if (ext_at != std::string::npos && ext_at > 0) {
    const std::string ext = original.substr(ext_at);
    if (tail.size() > ext.size() && tail.compare(tail.size() - ext.size(), ext.size(), ext) == 0) {
      tail.resize(tail.size() - ext.size());
    }
  }
  const auto dot = tail.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= tail.size()) return false;
  auto digits = [](const std::string& s) { return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); };
  return digits(tail.substr(0, dot)) && digits(tail.substr(dot + 1));
}

// What a kill while the kept files were being kept or dropped left (earlier_run.cpp makes and
// drops them under these names).
void drop_earlier_run_leftovers(const std::string& dir) {
  remove_tree((fs::path(dir) / (std::string(kKeptFolder) + ".dropped")).string());
  remove_tree((fs::path(dir) / (std::string(kKeptFolder) + ".partial")).string());
}

// The folder is locked by the caller.
void put_back_kept_files(const std::string& dir) {
  std::error_code ec;
  if (fs::is_directory(fs::path(dir) / kKeptFolder, ec) && restore_earlier_run(dir)) {
    YF_LOG_WARN("put back the earlier run in " << printable(dir) << ": a start into it was stopped before its first step");
  }
  drop_earlier_run_leftovers(dir);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "the run folder runs/train holds other runs (runs/train/1, runs/train/2) ...": the refusal of
// a folder that is the parent of runs, with the next numbered subfolder to give instead.
std::string parent_of_runs(const std::string& dir, const std::vector<std::string>& runs) {
  int next = 1;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (all_digits(n)) next = std::max(next, std::stoi(n) + 1);
  }
  std::string listed;
  const std::size_t shown = std::min<std::size_t>(runs.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) listed += (i == 0 ? "" : ", ") + (fs::path(dir) / runs[i]).string();
  if (runs.size() > shown) listed += ", ... " + std::to_string(runs.size()) + " in all";
  return "the run folder " + dir + " is not a run but holds other runs (" + listed +
         "): this run's files would be written among them. Give it a folder of its own, e.g. " +
         (fs::path(dir) / std::to_string(next)).string() + ", or leave the folder out for the next numbered one";
}

}  // namespace

RunFolder::RunFolder(std::string path, bool made) : path_(std::move(path)), made_(made) {}

RunFolder::~RunFolder() { release(); }

RunFolder::RunFolder(RunFolder&& other) noexcept
    : path_(std::move(other.path_)), made_(other.made_), kept_(other.kept_), fd_(other.fd_) {
  other.path_.clear();
  other.made_ = false;
  other.kept_ = false;
  other.fd_ = -1;
}

RunFolder& RunFolder::operator=(RunFolder&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    made_ = other.made_;
    kept_ = other.kept_;
    fd_ = other.fd_;
    other.path_.clear();
    other.made_ = false;
    other.kept_ = false;
    other.fd_ = -1;
  }
  return *this;
}

void RunFolder::release() {
  // Still locked while the earlier run is put back: no other process sees it half restored.
  if (kept_) restore_earlier_run();
  if (fd_ >= 0) {
    ::close(fd_);  // drops the flock
    fd_ = -1;
  }
  if (made_ && !path_.empty()) {
    try {
      remove_tree(path_);  // a refused start leaves nothing behind
    } catch (...) {
    }
  }
  made_ = false;
}

void RunFolder::lock() {
  // O_CLOEXEC: child processes (a sweep's runs) do not inherit the lock.
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw InvalidInput("cannot open the run folder " + path_ + ": " + errno_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(fd_);
    fd_ = -1;
    if (e == EWOULDBLOCK) {
      throw InvalidInput("the run folder " + path_ + " is in use by another yoloflow process (it holds the folder's "
                         "lock); wait for it to finish or stop it, or choose another folder");
    }
    throw InvalidInput("cannot lock the run folder " + path_ + ": " + errno_text(e));
  }
}

RunFolder RunFolder::claim_numbered(const std::string& name) {
  // The pipeline's "name" becomes runs/<name>: it must name a folder inside runs/.
  if (!name.empty()) check_name_word("the pipeline's \"name\"", name);
  const fs::path base = fs::path("runs") / (name.empty() ? std::string("pipeline") : name);
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec || !fs::is_directory(base, ec)) {
    throw InvalidInput("cannot create the run folder " + base.string() + ": " +
                       (ec ? errno_text(ec.value()) : std::string("a file of that name is in the way")));
  }
  int next = 1;
  for (auto it = fs::directory_iterator(base, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (all_digits(n)) next = std::max(next, std::stoi(n) + 1);
  }
  for (;; ++next) {
    const fs::path dir = base / std::to_string(next);
    if (fs::create_directory(dir, ec)) {
      RunFolder folder(dir.string(), /*made=*/true);
      folder.lock();
      return folder;
    }
    if (ec) throw InvalidInput("cannot create the run folder " + dir.string() + ": " + errno_text(ec.value()));
  }
}

void RunFolder::check(const std::string& path) {
  check_path_word("the run folder", path);
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) return;
  if (!fs::is_directory(status)) throw InvalidInput("the run folder " + path + " is a file, not a folder");
  if (holds_a_run(path).empty()) {
    if (const auto runs = runs_inside(path); !runs.empty()) throw InvalidInput(parent_of_runs(path, runs));
  }
}

RunFolder RunFolder::open(const std::string& path) {
  // Before anything is made or locked: a refused folder is left as it was.
  check(path);
  std::error_code ec;
  bool made = false;
  if (!fs::exists(path, ec)) {
    // Made here, with the parents it needs; removed again (the folder only) unless committed.
    fs::create_directories(path, ec);
    if (ec) throw InvalidInput("cannot create the run folder " + path + ": " + errno_text(ec.value()));
    made = true;
  }
  RunFolder folder(path, made);
  folder.lock();
  // A start into this folder killed before its first step kept the earlier run aside: put it
  // back before anything else looks at the folder.
  put_back_kept_files(path);
  // Writable now, before anything runs: a run must not train for an hour and then fail to
  // save. Checked for the folder and for weights/ where it exists.
  for (const fs::path dir : {fs::path(path), fs::path(path) / "weights"}) {
    if (!fs::is_directory(dir, ec)) continue;
    if (::access(dir.c_str(), W_OK) != 0) {
      throw InvalidInput("cannot write into the run folder " + dir.string() + ": " + errno_text(errno));
    }
  }
  return folder;
}

void RunFolder::put_back_interrupted_start(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::is_directory(fs::path(path) / kKeptFolder, ec)) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  // Held by another process: its start is in progress, and the kept files are its own.
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) put_back_kept_files(path);
  ::close(fd);
}

void RunFolder::keep_earlier_run() {
  if (path_.empty() || kept_ || holds_a_run(path_).empty()) return;
  core::keep_earlier_run(path_);
  kept_ = true;
}

void RunFolder::first_step_taken() {
  if (!kept_) return;
  kept_ = false;
  drop_earlier_run(path_);
}

bool RunFolder::restore_earlier_run() {
  if (!kept_) return false;
  kept_ = false;
  return core::restore_earlier_run(path_);
}

int RunFolder::remove_stale_temporaries() const {
  int removed = 0;
  for (const fs::path dir : {fs::path(path_), fs::path(path_) / "weights"}) {
    std::error_code ec;
    std::vector<fs::path> stale;
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      if (is_atomic_temporary(it->path().filename().string()) && it->is_regular_file(ec)) stale.push_back(it->path());
    }
    for (const auto& p : stale) {
      if (fs::remove(p, ec)) ++removed;
    }
  }
  return removed;
}

std::vector<std::string> RunFolder::runs_inside(const std::string& dir) {
  std::vector<std::string> runs;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec) && !holds_a_run(it->path().string()).empty()) runs.push_back(it->path().filename().string());
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::string RunFolder::holds_a_run(const std::string& dir) {
  std::error_code ec;
  for (const char* f : {"pipeline.json", "results.csv", "weights", "metrics.json", "predictions.json"}) {
    if (fs::exists(fs::path(dir) / f, ec)) return std::string("it has ") + f;
  }
  return "";
}

}  // namespace yoloflow::core
