#include "yoloflow/directory_walk.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "yoloflow/error.h"
#include "yoloflow/stop_request.h"
#include "yoloflow/user_file.h"

namespace yoloflow {
namespace {

// statfs(2)'s f_type of file systems that show the kernel's state rather than hold files.
const char* pseudo_name(long type) {
  switch (static_cast<unsigned long>(type)) {
    case 0x9fa0: return "proc";
    case 0x62656572: return "sysfs";
    case 0x1cd1: return "devpts";
    case 0x27e0eb: return "cgroup";
    case 0x63677270: return "cgroup2";
    case 0x64626720: return "debugfs";
    case 0x74726163: return "tracefs";
    case 0x73636673: return "securityfs";
    case 0xcafe4a11: return "bpf";
    case 0x6165676c: return "pstore";
    case 0x62656570: return "configfs";
    case 0x65735543: return "fusectl";
    case 0x42494e4d: return "binfmt_misc";
    case 0x19800202: return "mqueue";
    case 0xf97cff8c: return "selinuxfs";
    case 0xde5e81e4: return "efivarfs";
    case 0x50495045: return "pipefs";
    case 0x534f434b: return "sockfs";
    case 0x6e736673: return "nsfs";
    default: return "";
  }
}

std::string errno_reason(int err) {
  switch (err) {
    case ELOOP: return "a loop of symbolic links";
    case ENOENT:
    case ENOTDIR: return "a symbolic link to nothing";
    case EACCES:
    case EPERM: return "cannot be listed (permission denied)";
    default: return std::string("cannot be listed (") + std::strerror(err) + ")";
  }
}

// Closes the folder on every way out.
struct Folder {
  DIR* dir = nullptr;
  ~Folder() {
    if (dir) ::closedir(dir);
  }
};

}  // namespace

std::string pseudo_file_system(const std::string& path) {
  // The path and each folder on its way: /proc/self/cwd is a link out of /proc (to the
  // command's own folder) that statfs follows, but /proc/self, on its way, is proc.
  std::string p = path;
  while (!p.empty()) {
    struct statfs fs {};
    if (::statfs(p.c_str(), &fs) == 0) {
      if (const char* name = pseudo_name(static_cast<long>(fs.f_type)); *name) return name;
    }
    const auto slash = p.find_last_of('/');
    if (slash == std::string::npos || slash == 0) break;
    p.erase(slash);
  }
  return "";
}

WalkResult walk_folder(const std::string& folder, const WalkLimits& limits, const std::string& name,
                       const std::function<bool(const std::string& path)>& keep) {
  WalkResult out;
  struct stat root {};
  if (::stat(folder.c_str(), &root) != 0) throw InvalidInput(name + " " + unreachable_path(folder));
  if (!S_ISDIR(root.st_mode)) throw InvalidInput(name + " is not a folder");
  if (const std::string pseudo = pseudo_file_system(folder); !pseudo.empty()) {
    throw InvalidInput(name + " is on a pseudo file system (" + pseudo + "), which holds no files to read");
  }
  // Each folder by its identity, with the path it was first listed under: a second way to it
  // (a link back to a parent, two links to one folder) is not listed again.
  std::map<std::pair<dev_t, ino_t>, std::string> listed{{{root.st_dev, root.st_ino}, folder}};
  std::vector<std::pair<std::string, int>> pending{{folder, 0}};
  std::size_t entries = 0;
  const std::string doing = "listing " + name;
  while (!pending.empty()) {
    auto [dir_path, depth] = std::move(pending.back());
    pending.pop_back();
    Folder dir;
    dir.dir = ::opendir(dir_path.c_str());
    if (!dir.dir) {
      if (dir_path == folder) throw InvalidInput(name + " " + unreachable_path(folder));
      out.skipped.push_back({dir_path, errno_reason(errno)});
      continue;
    }
    out.folders.push_back(dir_path);
    const std::string prefix = dir_path.empty() || dir_path.back() == '/' ? dir_path : dir_path + "/";
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(dir.dir);
      if (!e) {
        if (errno != 0) out.skipped.push_back({dir_path, errno_reason(errno)});
        break;
      }
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      if (++entries > limits.max_entries) {
        throw InvalidInput(name + " holds more than " + std::to_string(limits.max_entries) +
                           " entries (files and folders, all levels): more than a dataset or a folder of images has");
      }
      if (entries % 1024 == 0) throw_if_stop_requested(doing);
      const std::string path = prefix + e->d_name;
      if (e->d_type == DT_REG) {
        if (!keep || keep(path)) out.files.push_back(path);
        continue;
      }
      if (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;  // pipes, devices...
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) {
        out.skipped.push_back({path, errno_reason(errno)});
        continue;
      }
      if (S_ISREG(st.st_mode)) {
        if (!keep || keep(path)) out.files.push_back(path);
        continue;
      }
      if (!S_ISDIR(st.st_mode) || !limits.recursive) continue;
      if (depth + 1 > limits.max_depth) {
        out.skipped.push_back({path, "deeper than " + std::to_string(limits.max_depth) + " folders"});
        continue;
      }
      const auto [at, first] = listed.emplace(std::make_pair(st.st_dev, st.st_ino), path);
      if (!first) {
        out.skipped.push_back({path, "the folder " + at->second + " again (a folder is listed once)"});
        continue;
      }
      std::string pseudo = pseudo_file_system(path);
      if (pseudo.empty() && e->d_type != DT_DIR) {
        // A link: where it points, as written (a link to /proc/self/cwd leads through /proc).
        char target[4096];
        const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
        if (n > 0) {
          const std::string to(target, static_cast<std::size_t>(n));
          pseudo = pseudo_file_system(to[0] == '/' ? to : prefix + to);
        }
      }
      if (!pseudo.empty()) {
        out.skipped.push_back({path, "on a pseudo file system (" + pseudo + ")"});
        continue;
      }
      pending.emplace_back(path, depth + 1);
    }
  }
  throw_if_stop_requested(doing);
  return out;
}

}  // namespace yoloflow
