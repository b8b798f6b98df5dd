#include "training/predict/predict_sources.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "runtime/fetch/named_assets.h"
#include "runtime/util/ascii_lower.h"
#include "training/predict/prediction_outputs.h"
#include "yoloflow/directory_walk.h"
#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

const char* const kVideoExtensions[] = {".asf", ".avi", ".gif", ".m4v", ".mkv", ".mov",
                                        ".mp4", ".mpeg", ".mpg", ".ts", ".wmv", ".webm"};

bool is_media(const std::string& path) { return has_image_extension(path) || has_video_extension(path); }

void add_file(const std::string& path, std::vector<PredictSource>& out) {
  if (is_media(path)) out.push_back({path, has_video_extension(path)});
}

// A folder's images and videos (not recursive), sorted by name, listed by the one folder walker
// (yoloflow/directory_walk.h). An entry with a media name that cannot be followed (a loop of
// symbolic links) is kept: predicting it says why it is skipped.
std::vector<PredictSource> folder_files(const fs::path& dir, const std::string& what) {
  WalkLimits one_level;
  one_level.recursive = false;
  WalkResult walk = walk_folder(dir.string(), one_level, what, is_media);
  std::vector<std::string> files = std::move(walk.files);
  for (const auto& skip : walk.skipped) {
    if (is_media(skip.path)) files.push_back(skip.path);
  }
  std::sort(files.begin(), files.end());
  std::vector<PredictSource> out;
  for (const auto& f : files) add_file(f, out);
  return out;
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

bool is_glob(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// One entry (of the command line or of a list): its files, appended to `out`.
void add_entry(const std::string& entry, const fs::path& list_dir, std::vector<PredictSource>& out,
               const std::string& what) {
  std::error_code ec;
  if (is_glob(entry) && !fs::exists(entry, ec)) {
    for (const auto& f : glob_files(entry)) {
      if (fs::is_regular_file(f, ec)) add_file(f, out);
    }
    return;
  }
  if (fs::is_directory(entry, ec)) {
    for (auto& s : folder_files(entry, what)) out.push_back(std::move(s));
    return;
  }
  if (fs::is_regular_file(entry, ec)) {
    add_file(entry, out);
    return;
  }
  if (!list_dir.empty() && fs::path(entry).is_relative() && fs::is_regular_file(list_dir / entry, ec)) {
    add_file((list_dir / entry).string(), out);
    return;
  }
  const std::string why = unreachable_path(entry);
  if (!why.empty() && why != "does not exist") throw InvalidInput(what + ": " + entry + " " + why);
  throw InvalidInput(what + ": " + entry + ": no such file or folder");
}

}  // namespace

bool has_video_extension(const std::string& path) {
  const std::string ext = ascii_lower(fs::path(path).extension().string());
  return std::find(std::begin(kVideoExtensions), std::end(kVideoExtensions), ext) != std::end(kVideoExtensions);
}

std::vector<PredictSource> list_predict_sources(const std::string& source, const std::string& option) {
  const std::string what = option + " " + source;
  const char* kKinds = "(images: .jpg, .png, .bmp, .tif, .webp; videos: .mp4, .avi, .mkv, .mov, ...)";
  std::error_code ec;
  std::vector<PredictSource> out;
  if (source.rfind("http://", 0) == 0 || source.rfind("https://", 0) == 0) {
    // A file on the web (Ultralytics' model("https://ultralytics.com/images/bus.jpg")):
    // fetched once into the sources folder, then read as a file.
    if (!is_media(source.substr(0, source.find_first_of("?#")))) {
      throw InvalidInput(what + ": not an image or a video " + std::string(kKinds) +
                         " by its name; predict fetches image and video files by URL");
    }
    const std::string file = locate_source_url(source, [](const std::string&) {});
    return {{file, has_video_extension(file)}};
  }
  if (ascii_lower(fs::path(source).extension().string()) == ".txt" && fs::is_regular_file(source, ec)) {
    const fs::path dir = fs::absolute(source).parent_path();
    // A line at a time, each line and the count bounded: a list is never read whole.
    for_each_line(source, kImageListBudget, what, [&](const std::string& line, std::size_t) {
      if (!line.empty()) add_entry(line, dir, out, what);
      return true;
    });
    if (out.empty()) throw InvalidInput(what + ": the list names no image or video " + kKinds);
    return out;
  }
  if (is_glob(source) && !fs::exists(source, ec)) {
    add_entry(source, {}, out, what);
    if (out.empty()) throw InvalidInput(what + ": the pattern matches no image or video " + kKinds);
    return out;
  }
  if (const std::string why = unreachable_path(source); !why.empty() && why != "does not exist") {
    throw InvalidInput(what + " " + why);
  }
  if (!fs::exists(source, ec)) {
    // Ultralytics' other sources, said as such rather than as a missing file.
    const std::string reads = "; predict reads images, videos, folders, globs, .txt lists and http(s) URLs of files";
    if (!source.empty() && std::all_of(source.begin(), source.end(), ::isdigit)) {
      throw InvalidInput(what + ": camera " + source + " is not supported" + reads);
    }
    if (source.find("://") != std::string::npos) {
      const bool stream = source.rfind("rtsp://", 0) == 0 || source.rfind("rtmp://", 0) == 0 ||
                          source.rfind("tcp://", 0) == 0;
      throw InvalidInput(what + ": " + (stream ? "streams are not supported" : "this kind of URL is not supported (http:// and https:// are)") +
                         reads);
    }
    if (source == "screen") throw InvalidInput(what + ": screenshots are not supported" + reads);
    throw InvalidInput(what + ": no such file or folder");
  }
  if (fs::is_directory(source, ec)) {
    out = folder_files(source, what);
    if (out.empty()) throw InvalidInput(what + ": the folder holds no images or videos " + kKinds);
    return out;
  }
  if (!is_media(source)) throw InvalidInput(what + ": not an image or a video " + kKinds + ", a folder, a glob or a .txt list");
  // A named pipe or a device would block or never end.
  if (!fs::is_regular_file(source, ec)) throw InvalidInput(what + ": not a regular file");
  return {{source, has_video_extension(source)}};
}

}  // namespace yoloflow::core
