#pragma once
// Ultralytics' `resume` on `yoloflow train`: resume=RUN/weights/last.pt (or the run folder) is
// --resume, and so is `resume model=RUN/weights/last.pt` (the bare word or resume=True with the
// checkpoint as model=, as Ultralytics' docs write it); resume=False is the default; resume alone,
// which makes Ultralytics guess the latest run, is refused with what to write instead.
#include <string>
#include <vector>

namespace yoloflow::core {

// Takes resume= out of the command's words (`first`, the positional a pipeline file would be
// in, and `words`) into `resume_dir`. Throws InvalidInput when resume= names no run or
// --resume is given too.
void take_resume_word(std::string& first, std::vector<std::string>& words, std::string& resume_dir);

}  // namespace yoloflow::core
