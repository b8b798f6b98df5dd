#pragma once
// Files that are never seen half-written. Every file yoloflow and its plugins write goes
// through here: the bytes go to a temporary file in the target's folder, which is flushed,
// fsynced and renamed over the target only when everything was written, so a kill, a full
// disk or an I/O error at any instant leaves either the old complete file or the new
// complete one, never a part of either.
//
// A target that exists and is not a regular file (a folder, a device such as /dev/full, a
// FIFO, a socket) is refused before anything is written: renaming over it would replace the
// device node or the folder entry, and writing into it is not writing a file.
#include <cstddef>
#include <string>
#include <string_view>

#include "yoloflow/export.h"

namespace yoloflow {

// Writes `bytes` as the whole content of `path` (its folder is created when missing).
// Throws InvalidInput when the target exists and is not a regular file, Error naming the
// path and the reason (e.g. "No space left on device") on any I/O failure; the target is
// untouched then and no temporary file remains.
YOLOFLOW_SDK_API void write_file_atomic(const std::string& path, std::string_view bytes);

// The streamed form, for writers that produce a file piece by piece (zip archives, caches):
//
//   AtomicFileWriter out(path);             // refuses a target that is not a regular file
//   out.write(data, n); ...                 // never throws; false once a write failed
//   out.commit();                           // throws the first failure; else renames
//
// A writer destroyed without commit() removes its temporary file and leaves the target as
// it was. Its write() never throws, so it can be called from a callback that must not
// throw (a library's writer function, a destructor's path).
class YOLOFLOW_SDK_API AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends n bytes; false (and nothing more is written) after the first failure.
  bool write(const void* data, std::size_t n) noexcept;
  bool ok() const noexcept { return failure_.empty(); }
  // Why the first write failed ("" while none did).
  const std::string& failure() const noexcept { return failure_; }

  // fsync, rename over the target, fsync the folder. Throws Error naming the target and the
  // first failure; the temporary file is removed and the target untouched then.
  void commit();

  // The temporary file's name, for a writer that must open the file itself (a video
  // encoder): it keeps the target's extension. Such a writer writes there, closes it, and
  // calls commit().
  const std::string& temp_path() const noexcept { return temp_; }
  const std::string& path() const noexcept { return path_; }

 private:
  void fail(const std::string& why) noexcept;

  std::string path_;
  std::string temp_;
  std::string failure_;
  int fd_ = -1;
  bool committed_ = false;
};

// Throws InvalidInput when `path` exists and is not a regular file (a folder, a device, a
// FIFO...): the check every writer above makes first, for writers that must decide before
// producing anything.
YOLOFLOW_SDK_API void check_writable_target(const std::string& path);

}  // namespace yoloflow
