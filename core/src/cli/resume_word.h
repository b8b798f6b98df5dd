#pragma once
// Ultralytics' `resume=` on `yoloflow train`: resume=RUN/weights/last.pt (or the run folder) is
// --resume; resume=False is the default; resume=True, which makes Ultralytics guess the run, is
// refused with what to write instead.
#include <string>
#include <vector>

namespace yoloflow::cli {

// Takes resume= out of the command's words (`first`, the positional a pipeline file would be
// in, and `words`) into `resume_dir`. Throws InvalidInput when resume= names no run or
// --resume is given too.
void take_resume_word(std::string& first, std::vector<std::string>& words, std::string& resume_dir);

}  // namespace yoloflow::cli
