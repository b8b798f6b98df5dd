#pragma once
// What `yoloflow predict --source` names, as Ultralytics' predict reads it: an image or a video
// file, a folder (its images and videos, sorted), a glob ('imgs/*.jpg', quoted so that the
// shell leaves it alone), or a .txt file listing any of those one per line (relative lines are
// tried from the working folder, then from the list's folder). OpenCV reads the files.
#include <string>
#include <vector>

namespace yoloflow::core {

struct PredictSource {
  std::string path;
  bool video = false;  // read frame by frame (has a video extension)
};

// Whether `path` has a video extension (Ultralytics' list: asf, avi, gif, m4v, mkv, mov, mp4,
// mpeg, mpg, ts, wmv, webm).
bool has_video_extension(const std::string& path);

// The files `source` names, in Ultralytics' order. Throws InvalidInput in one line naming
// `source` (as `option`, "--source") when it is missing, names no image or video, or a list or
// glob matches none.
std::vector<PredictSource> list_predict_sources(const std::string& source, const std::string& option = "--source");

}  // namespace yoloflow::core
