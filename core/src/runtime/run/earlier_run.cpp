#include "runtime/run/earlier_run.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <cstdint>
#include <filesystem>
#include <set>
#include <vector>

#include "runtime/util/atomic_file.h"
#include "runtime/util/remove_tree.h"
#include "yoloflow/error.h"
#include "yoloflow/log.h"
#include "yoloflow/printable.h"

namespace fs = std::filesystem;

namespace yoloflow::core {
namespace {

// Files up to this size are copied rather than linked: what a writer may change in place
// (a log, a CSV) is small; weights and images, which are only replaced whole, are larger.
constexpr std::uintmax_t kCopyAtMost = 4u << 20;

// The folder's entries below `dir` as relative paths (the kept folder itself left out),
// folders before what they hold. Symbolic links are listed, not followed.
void list_tree(const fs::path& root, const fs::path& rel, std::vector<fs::path>& out) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(root / rel, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const fs::path entry = rel / it->path().filename();
    // The kept folder and its partial or dropped forms are no files of a run.
    if (rel.empty() && it->path().filename().string().rfind(kKeptFolder, 0) == 0) continue;
    out.push_back(entry);
    if (it->is_directory(ec) && !it->is_symlink(ec)) list_tree(root, entry, out);
  }
}

void keep_file(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const auto status = fs::symlink_status(from, ec);
  if (fs::is_symlink(status)) {
    fs::copy_symlink(from, to, ec);
  } else if (fs::is_regular_file(status)) {
    const auto size = fs::file_size(from, ec);
    if (ec || size > kCopyAtMost) {
      if (::link(from.c_str(), to.c_str()) == 0) return;
    }
    ec.clear();
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  } else {
    return;  // sockets, FIFOs: nothing a run wrote
  }
  if (ec) throw Error("cannot keep " + printable(from.string()) + " while the new run starts: " + ec.message());
}

}  // namespace

void keep_earlier_run(const std::string& run_dir) {
  const fs::path root(run_dir);
  // Made under another name and renamed when complete: a kill while keeping leaves no partial
  // copy that would later be put back over the whole files.
  const fs::path kept = root / (std::string(kKeptFolder) + ".partial");
  std::error_code ec;
  remove_tree(kept.string());
  std::vector<fs::path> entries;
  list_tree(root, {}, entries);
  try {
    fs::create_directory(kept, ec);
    if (ec) throw Error("cannot make " + printable(kept.string()) + ": " + ec.message());
    for (const auto& rel : entries) {
      const fs::path from = root / rel;
      if (fs::is_directory(fs::symlink_status(from, ec))) {
        fs::create_directory(kept / rel, ec);
        if (ec) throw Error("cannot make " + printable((kept / rel).string()) + ": " + ec.message());
      } else {
        keep_file(from, kept / rel);
      }
    }
    if (::rename(kept.c_str(), (root / kKeptFolder).c_str()) != 0) {
      throw Error("cannot keep the earlier run's files in " + printable((root / kKeptFolder).string()) + ": " +
                  std::strerror(errno));
    }
  } catch (const Error& e) {
    remove_tree(kept.string());
    throw Error(std::string(e.what()) + "; the earlier run in " + printable(run_dir) + " was left as it was");
  }
}

bool restore_earlier_run(const std::string& run_dir) {
  const fs::path root(run_dir);
  const fs::path kept = root / kKeptFolder;
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(kept, ec))) return true;
  std::vector<fs::path> now, before;
  list_tree(root, {}, now);
  list_tree(kept, {}, before);
  const std::set<fs::path> kept_set(before.begin(), before.end());
  bool ok = true;
  // What the failed start made: gone (deepest first, so folders are empty when reached).
  for (auto it = now.rbegin(); it != now.rend(); ++it) {
    if (kept_set.count(*it) != 0) continue;
    const fs::path p = root / *it;
    if (fs::is_directory(fs::symlink_status(p, ec))) remove_tree(p.string());
    else fs::remove(p, ec);
  }
  // What was there: back in place, each file by one rename.
  for (const auto& rel : before) {
    const fs::path from = kept / rel, to = root / rel;
    if (fs::is_directory(fs::symlink_status(from, ec))) {
      fs::create_directories(to, ec);
      continue;
    }
    if (fs::is_directory(fs::symlink_status(to, ec))) remove_tree(to.string());
    if (::rename(from.c_str(), to.c_str()) != 0) {
      ok = false;
      YF_LOG_ERROR("could not put back " << to.string() << " of the earlier run; its copy is " << from.string());
    }
  }
  if (ok) remove_tree(kept.string());
  return ok;
}

void drop_earlier_run(const std::string& run_dir) {
  // Renamed first, then removed: a kill while removing leaves no half-kept run to restore.
  const fs::path kept = fs::path(run_dir) / kKeptFolder;
  const fs::path dropped = fs::path(run_dir) / (std::string(kKeptFolder) + ".dropped");
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(kept, ec))) return;
  remove_tree(dropped.string());
  if (::rename(kept.c_str(), dropped.c_str()) == 0) {
    remove_tree(dropped.string());
  } else {
    remove_tree(kept.string());
  }
}

}  // namespace yoloflow::core
