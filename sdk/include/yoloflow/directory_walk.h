#pragma once
// Listing a folder a user names, the one way yoloflow and its plugins list them: a folder
// reached through symbolic links is listed once however many links lead to it (a link back to
// a parent ends there instead of repeating the tree until the path is too long), the depth and
// the number of entries are bounded, a pseudo file system (/proc, /sys, cgroups, debugfs...:
// the kernel's state, not files; /proc/self/cwd leads back into the run's own folder) is not
// listed, nothing throws std::filesystem's errors, and a stop the user asked for
// (stop_request.h) ends the listing.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "yoloflow/export.h"

namespace yoloflow {

struct WalkLimits {
  bool recursive = true;
  int max_depth = 64;                   // folders below the first; deeper ones are skipped with a note
  std::size_t max_entries = 10'000'000;  // entries seen in all folders; more is refused
};

// An entry that was not listed, and why: "a loop of symbolic links", "a symbolic link to
// nothing", "the folder <first path> again (a folder is listed once)", "on a pseudo file system (proc)",
// "deeper than 64 folders", "cannot be listed (permission denied)".
struct WalkSkip {
  std::string path, why;
};

struct WalkResult {
  std::vector<std::string> files;    // regular files (links followed) that `keep` accepted, in listing order
  std::vector<std::string> folders;  // the folders listed, the first included
  std::vector<WalkSkip> skipped;
};

// The files under `folder` (paths start with `folder` as given). Throws InvalidInput
// "<name> <why>" when `folder` itself cannot be listed ("does not exist", "is a loop of symbolic
// links", "is not a folder", "cannot be read (...)", "is on a pseudo file system (proc), which
// holds no files to read") or when it holds more than limits.max_entries entries; throws the
// stop request's Error ("interrupted by SIGTERM while listing <name>") when one arrives.
YOLOFLOW_SDK_API WalkResult walk_folder(const std::string& folder, const WalkLimits& limits, const std::string& name,
                                        const std::function<bool(const std::string& path)>& keep = nullptr);

// The name of the pseudo file system `path` is on, or a folder on its way is on ("proc",
// "sysfs", "cgroup2", ...: /proc/self/cwd leads out of /proc, but through it); "" for a path
// wholly on file systems that hold files (or one that cannot be examined).
YOLOFLOW_SDK_API std::string pseudo_file_system(const std::string& path);

}  // namespace yoloflow
