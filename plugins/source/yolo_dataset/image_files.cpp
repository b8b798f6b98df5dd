#include "image_files.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "reduced_decode.h"
#include "yoloflow/directory_walk.h"
#include "yoloflow/error.h"
#include "yoloflow/image_header.h"
#include "yoloflow/stop_request.h"
#include "yoloflow/user_file.h"

namespace fs = std::filesystem;

namespace yoloflow::plugins::yolo {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// A folder's images, recursively, through the one folder walker: a folder reached twice (a link
// back to a parent) is listed once, and what could not be listed is a data issue.
void add_folder_images(const std::string& folder, const std::string& name, SplitListing& out) {
  const WalkResult walk = walk_folder(folder, WalkLimits{}, name, [](const std::string& p) { return has_image_extension(p); });
  for (const auto& f : walk.files) out.images.push_back(fs::path(f).lexically_normal().string());
  for (const auto& skip : walk.skipped) out.issues.push_back({skip.path, "not listed: " + skip.why, "skipped"});
}

}  // namespace

bool has_image_extension(const std::string& path) {
  static const std::set<std::string> kExtensions = {".bmp", ".jpeg", ".jpg", ".png",
                                                    ".tif", ".tiff", ".webp"};
  return kExtensions.count(lower(fs::path(path).extension().string())) > 0;
}

bool has_jpeg_extension(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  return ext == ".jpg" || ext == ".jpeg";
}

std::string label_path_for(const std::string& image_path) {
  std::string p = image_path;
  const auto pos = p.rfind("/images/");
  if (pos != std::string::npos) p.replace(pos, 8, "/labels/");
  return fs::path(p).replace_extension(".txt").string();
}

SplitListing list_split(const std::vector<std::string>& entries, const std::string& split,
                        const std::string& yaml_file) {
  SplitListing out;
  std::set<std::string> label_dirs;
  std::error_code ec;
  const std::string where = "data.yaml '" + yaml_file + "': split '" + split + "': ";
  for (const auto& entry : entries) {
    const fs::path p(entry);
    const std::string name = where + "'" + entry + "'";
    if (const std::string why = unreachable_path(entry); !why.empty()) throw InvalidInput(name + " " + why);
    if (fs::is_directory(p, ec)) {
      add_folder_images(entry, name, out);
      // The mirrored labels folder, when there is one, is searched for orphan label files.
      const std::string mirrored = fs::path(label_path_for(entry + "/x.jpg")).parent_path().string();
      if (mirrored != entry && fs::is_directory(mirrored, ec)) {
        const WalkResult labels = walk_folder(mirrored, WalkLimits{}, where + "labels folder '" + mirrored + "'",
                                              [](const std::string&) { return false; });
        for (const auto& dir : labels.folders) label_dirs.insert(fs::path(dir).lexically_normal().string());
      }
    } else if (fs::is_regular_file(p, ec) && lower(p.extension().string()) == ".txt") {
      // Read a line at a time: a list is never held whole, and a file of no lines (a huge file
      // without a newline) is refused at its first overlong line.
      const fs::path list_dir = p.parent_path();
      for_each_line(entry, kImageListBudget, where + "image list '" + entry + "'",
                    [&](const std::string& line, std::size_t number) {
                      if (number % 4096 == 0) throw_if_stop_requested("reading " + name);
                      if (line.empty() || line[0] == '#') return true;
                      fs::path img(line);
                      if (img.is_relative()) img = list_dir / img;
                      const std::string path = img.lexically_normal().string();
                      if (const std::string why = unreachable_path(path); why == "does not exist") {
                        out.issues.push_back({path, "image missing (listed in " + entry + ")", "skipped"});
                      } else if (!why.empty()) {
                        out.issues.push_back({path, "unreadable file (it " + why + "; listed in " + entry + ")", "skipped"});
                      } else if (!has_image_extension(path)) {
                        out.issues.push_back({path, "not an image file type (listed in " + entry + ")", "skipped"});
                      } else {
                        out.images.push_back(path);
                      }
                      return true;
                    });
    } else if (fs::is_regular_file(p, ec) && has_image_extension(entry)) {
      out.images.push_back(p.lexically_normal().string());
    } else {
      throw InvalidInput(name + " is not a folder, a .txt image list or an image file");
    }
  }
  std::sort(out.images.begin(), out.images.end());
  std::vector<std::string> unique;
  for (const auto& img : out.images) {
    if (!unique.empty() && unique.back() == img) {
      ++out.repeats.back();
    } else {
      unique.push_back(img);
      out.repeats.push_back(1);
    }
  }
  out.images = std::move(unique);
  for (const auto& img : out.images) {
    const auto dir = fs::path(label_path_for(img)).parent_path().string();
    if (fs::is_directory(dir, ec)) label_dirs.insert(fs::path(dir).lexically_normal().string());
  }
  out.label_dirs.assign(label_dirs.begin(), label_dirs.end());
  return out;
}

namespace {

// Files above this are read one at a time: the scan's threads together then hold at most one
// large image (up to kImageFileBudget) besides their small ones, whatever the folder holds.
constexpr std::uint64_t kLargeImageBytes = std::uint64_t{64} << 20;
std::mutex g_large_read;

}  // namespace

ImageCheck check_image_file(const std::string& path) {
  ImageCheck out;
  // The header first, read alone: a file over the byte budget or an image over the pixel limit
  // is refused before its bytes are read or a decoder allocates it.
  ImageHeader header;
  if (std::string refusal = image_file_refusal(path, &header); !refusal.empty()) {
    out.problem = std::move(refusal);
    return out;
  }
  std::string bytes, why;
  {
    std::unique_lock<std::mutex> large(g_large_read, std::defer_lock);
    if (!file_refusal(path, FileBudget{kLargeImageBytes, "a small image"}).empty()) large.lock();
    if (!try_read_user_file(path, kImageFileBudget, bytes, why)) {
      out.problem = "unreadable file (it " + why + ")";
      return out;
    }
  }
  // Trailing zero padding after the end marker is common and harmless.
  std::size_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == 0) --end;
  auto ends_with = [&](const char* sig, std::size_t n) {
    return end >= n && std::memcmp(bytes.data() + end - n, sig, n) == 0;
  };
  // A JPEG or PNG cut short still decodes (grey where data is missing), with wrong pixels under
  // its labels: it must end with its end marker.
  if (header.format == "JPEG" && !ends_with("\xFF\xD9", 2)) {
    out.problem = "truncated image (JPEG without end-of-image marker)";
    return out;
  }
  if (header.format == "PNG" && !ends_with("IEND\xAE\x42\x60\x82", 8)) {
    out.problem = "truncated image (PNG without IEND chunk)";
    return out;
  }
  // A cheap decode proves the stream decodes (at 1/8 inside libjpeg for a large JPEG).
  cv::Mat decoded;
  try {
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data());
    decoded = cv::imdecode(buffer, check_decode_flag(static_cast<int>(header.width), static_cast<int>(header.height)));
  } catch (const cv::Exception&) {
    decoded.release();
  }
  if (decoded.empty()) {
    out.problem = "corrupt image (cannot be decoded)";
    return out;
  }
  out.width = static_cast<int>(header.width);
  out.height = static_cast<int>(header.height);
  return out;
}

}  // namespace yoloflow::plugins::yolo
