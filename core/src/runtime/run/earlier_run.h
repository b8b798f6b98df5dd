#pragma once
// The files of an earlier run kept as they were while a new run starts in its folder
// (--exist-ok, a resume): a start that fails, or is stopped, before its first optimizer step
// leaves the earlier run byte for byte as it was, resumable.
//
// How: before the new run writes anything, every file of the folder is kept in a hidden
// subfolder (kKeptFolder) of the run folder: small files are copied (logs and CSVs may be
// appended to or truncated in place), large ones hard-linked (weights and images are only ever
// replaced by a rename, yoloflow/atomic_file.h, which leaves the kept link's bytes as they
// were). The new run then writes as usual. Once it has taken its first step the kept files are
// dropped; if it fails first, the folder is put back: files the start made are removed and
// the kept ones renamed into place. A start killed before either leaves the kept folder
// behind, and the next command that holds the folder puts it back first (the kept folder is
// made under another name and renamed when complete, so a kill while keeping leaves none).
#include <string>

namespace yoloflow::core {

inline constexpr const char* kKeptFolder = ".earlier-run";

// Keeps the files of `run_dir` (see above). Throws yoloflow::Error naming the folder when they
// cannot be kept (a full disk): nothing of the new run has been written then.
void keep_earlier_run(const std::string& run_dir);
// Puts the kept files back (a no-op when none are kept). Never throws; returns false when
// something could not be restored (a line was logged naming it).
bool restore_earlier_run(const std::string& run_dir);
// The new run started: the kept files are no longer needed.
void drop_earlier_run(const std::string& run_dir);

}  // namespace yoloflow::core
