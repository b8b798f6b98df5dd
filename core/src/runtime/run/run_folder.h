#pragma once
// The folder a command writes its outputs to (runs/<name>/<N>, or --run-dir), held for the
// life of the command:
//
// - one process at a time: an exclusive flock(2) on the folder itself, which the kernel drops
//   when the process ends however it ends, so a killed run leaves no lock behind and a lock
//   file never needs cleaning up;
// - a refused start leaves it as it was: checks that only read come first, and a folder this
//   command created is removed again unless the run was committed (commit());
// - leftovers of a killed writer (".NAME.tmp.PID.N.EXT", see yoloflow/atomic_file.h) are removed once
//   the folder is held (remove_stale_temporaries()).
#include <string>
#include <vector>

namespace yoloflow::core {

class RunFolder {
 public:
  // runs/<name>/<N> under the working folder, N one more than the largest number there;
  // created with create_directory, which fails when another process took that number first,
  // so concurrent commands get distinct folders. Locked. Throws yoloflow::Error (exit 2) when
  // the folder cannot be created (read-only, not a folder), naming it.
  static RunFolder claim_numbered(const std::string& name);
  // A folder given by the user (--run-dir, a resumed run): created when it does not exist
  // (removed again unless committed), locked, and checked writable. Throws InvalidInput naming
  // the folder when it is a file, cannot be created or written, or another process holds it,
  // and when it is no run itself but holds runs in its subfolders (runs/train, the parent of
  // numbered runs: this run's files would land among them), naming a free subfolder instead.
  static RunFolder open(const std::string& path);
  // A start into `path` killed before its first step left the earlier run's files kept aside
  // (keep_earlier_run): puts them back, unless another process holds the folder (a start in
  // progress). For commands that read the folder (a resume reads its pipeline.json) before
  // they open it; open() does the same.
  static void put_back_interrupted_start(const std::string& path);
  // The checks of open() that only read (a file in the way, a folder holding runs), for a
  // command to make before work whose results would then have nowhere to go.
  static void check(const std::string& path);

  RunFolder() = default;
  ~RunFolder();  // removes a folder this command made and never committed; unlocks
  RunFolder(RunFolder&& other) noexcept;
  RunFolder& operator=(RunFolder&& other) noexcept;
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::string& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // The run started: the folder stays whatever happens next.
  void commit() { made_ = false; }
  // A run starting in a folder that holds an earlier one (--exist-ok, a resume): the earlier
  // run's files are kept as they are (runtime/run/earlier_run.h) until first_step_taken();
  // released before that (the start failed or was stopped), the folder is put back as it was.
  void keep_earlier_run();
  // The new run took its first optimizer step: what it writes from now on replaces the
  // earlier run's files for good.
  void first_step_taken();
  // Puts the earlier run back now (false when nothing was kept); the folder keeps nothing more.
  bool restore_earlier_run();
  // Deletes ".NAME.tmp.PID.N.EXT" files in the folder and its weights/ folder: only a writer
  // killed between writing and renaming leaves them, and none can be writing now (the folder
  // is locked). Returns how many were removed.
  int remove_stale_temporaries() const;

  // What makes a folder hold an earlier run (empty when it holds none): the outputs a run
  // writes.
  static std::string holds_a_run(const std::string& dir);
  // The subfolders of `dir` that hold a run (holds_a_run), sorted by name.
  static std::vector<std::string> runs_inside(const std::string& dir);

 private:
  RunFolder(std::string path, bool made);
  void lock();
  void release();

  std::string path_;
  bool made_ = false;  // created by this command and not yet committed
  bool kept_ = false;  // the earlier run's files are kept until the first step
  int fd_ = -1;        // the folder, open for flock
};

}  // namespace yoloflow::core
