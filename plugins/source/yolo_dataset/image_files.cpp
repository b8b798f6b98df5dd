#include "image_files.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include <opencv2/imgcodecs.hpp>

#include "yoloflow/error.h"

namespace fs = std::filesystem;

namespace yoloflow::plugins::yolo {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool starts_with(const std::vector<unsigned char>& b, std::initializer_list<int> sig) {
  if (b.size() < sig.size()) return false;
  std::size_t i = 0;
  for (int v : sig) {
    if (v >= 0 && b[i] != static_cast<unsigned char>(v)) return false;
    ++i;
  }
  return true;
}

bool ends_with(const std::vector<unsigned char>& b, std::size_t end,
               std::initializer_list<int> sig) {
  if (end < sig.size()) return false;
  std::size_t i = end - sig.size();
  for (int v : sig) {
    if (b[i++] != static_cast<unsigned char>(v)) return false;
  }
  return true;
}

void add_folder_images(const fs::path& folder, std::vector<std::string>& out) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec) && has_image_extension(it->path().string())) {
      out.push_back(it->path().lexically_normal().string());
    }
  }
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
  for (const auto& entry : entries) {
    const fs::path p(entry);
    if (fs::is_directory(p, ec)) {
      add_folder_images(p, out.images);
      // The mirrored labels folder, when there is one, is searched for orphan label files.
      const std::string mirrored = fs::path(label_path_for(entry + "/x.jpg")).parent_path().string();
      if (mirrored != entry && fs::is_directory(mirrored, ec)) {
        label_dirs.insert(fs::path(mirrored).lexically_normal().string());
        for (fs::recursive_directory_iterator it(mirrored, ec), end; !ec && it != end; it.increment(ec)) {
          if (it->is_directory(ec)) label_dirs.insert(it->path().lexically_normal().string());
        }
      }
    } else if (fs::is_regular_file(p, ec) && lower(p.extension().string()) == ".txt") {
      std::ifstream list(p);
      if (!list) throw InvalidInput("data.yaml '" + yaml_file + "': split '" + split +
                                    "': cannot read image list '" + entry + "'");
      std::string line;
      while (std::getline(list, line)) {
        while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
        std::size_t start = 0;
        while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
        line = line.substr(start);
        if (line.empty() || line[0] == '#') continue;
        fs::path img(line);
        if (img.is_relative()) img = p.parent_path() / img;
        const std::string path = img.lexically_normal().string();
        if (!fs::exists(img, ec)) {
          out.issues.push_back({path, "image missing (listed in " + entry + ")", "skipped"});
        } else if (!has_image_extension(path)) {
          out.issues.push_back({path, "not an image file type (listed in " + entry + ")", "skipped"});
        } else {
          out.images.push_back(path);
        }
      }
    } else if (fs::is_regular_file(p, ec) && has_image_extension(entry)) {
      out.images.push_back(p.lexically_normal().string());
    } else {
      throw InvalidInput("data.yaml '" + yaml_file + "': split '" + split + "': '" + entry +
                         "' is not a folder, a .txt image list or an image file");
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

int be16(const std::vector<unsigned char>& b, std::size_t i) { return (b[i] << 8) | b[i + 1]; }

// Width and height from a JPEG SOF segment or a PNG IHDR chunk; false for other formats.
bool header_size(const std::vector<unsigned char>& b, int& w, int& h) {
  if (b.size() > 24 && b[0] == 0x89 && b[1] == 'P') {
    w = (b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19];
    h = (b[20] << 24) | (b[21] << 16) | (b[22] << 8) | b[23];
    return w > 0 && h > 0;
  }
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return false;
  std::size_t i = 2;
  while (i + 9 < b.size()) {
    if (b[i] != 0xFF) return false;
    const int marker = b[i + 1];
    if (marker == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      h = be16(b, i + 5);
      w = be16(b, i + 7);
      return w > 0 && h > 0;
    }
    if (marker == 0xD8 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
      i += 2;  // markers without a length
      continue;
    }
    i += 2 + static_cast<std::size_t>(be16(b, i + 2));
  }
  return false;
}

}  // namespace

ImageCheck check_image_file(const std::string& path) {
  ImageCheck out;
  auto fail = [&](const char* problem) {
    out.problem = problem;
    return out;
  };
  // Read no more than the file says it holds (and no file of a size no image has).
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return fail("unreadable file");
  if (size > (std::uintmax_t{2} << 30)) return fail("not an image (over 2 GiB)");
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("unreadable file");
  std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<std::size_t>(f.gcount()));
  if (bytes.empty()) return fail("empty file");
  // Trailing zero padding after the end marker is common and harmless.
  std::size_t end = bytes.size();
  while (end > 0 && bytes[end - 1] == 0) --end;
  if (starts_with(bytes, {0xFF, 0xD8, 0xFF})) {
    // A JPEG cut short still decodes (grey where data is missing), with wrong pixels under
    // its labels: it must end with the EOI marker.
    if (!ends_with(bytes, end, {0xFF, 0xD9})) return fail("truncated image (JPEG without end-of-image marker)");
  } else if (starts_with(bytes, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A})) {
    if (!ends_with(bytes, end, {'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}))
      return fail("truncated image (PNG without IEND chunk)");
  } else if (!starts_with(bytes, {'B', 'M'}) && !starts_with(bytes, {'I', 'I', 0x2A, 0x00}) &&
             !starts_with(bytes, {'M', 'M', 0x00, 0x2A}) &&
             !starts_with(bytes, {'R', 'I', 'F', 'F', -1, -1, -1, -1, 'W', 'E', 'B', 'P'})) {
    return fail("not an image (unrecognised file header)");
  }
  // Decoding costs 3 bytes a pixel before any resize: an image far larger than any photo
  // would take gigabytes in every worker that loads it. Refused above PIL's decompression-bomb
  // limit, which Ultralytics' image checks apply.
  constexpr double kMaxPixels = 178956970.0;
  if (int w = 0, h = 0; header_size(bytes, w, h) && static_cast<double>(w) * h > kMaxPixels) {
    out.problem = "image too large: " + std::to_string(w) + "x" + std::to_string(h) + " pixels (" +
                  std::to_string(static_cast<long long>(static_cast<double>(w) * h / 1e6)) +
                  " megapixels), over the 179-megapixel limit for decoding";
    return out;
  }
  // A reduced decode (1/8 scale for JPEG) proves the stream decodes at a fraction of the cost.
  cv::Mat reduced;
  try {
    reduced = cv::imdecode(bytes, cv::IMREAD_REDUCED_GRAYSCALE_8);
  } catch (const cv::Exception&) {
    reduced.release();
  }
  if (reduced.empty()) return fail("corrupt image (cannot be decoded)");
  // The exact size from the header when it is cheap to read (for the RAM cache's estimate);
  // otherwise from a full decode.
  if (!header_size(bytes, out.width, out.height)) {
    cv::Mat full;
    try {
      full = cv::imdecode(bytes, cv::IMREAD_COLOR);
    } catch (const cv::Exception&) {
      full.release();
    }
    if (full.empty()) return fail("corrupt image (cannot be decoded)");
    out.width = full.cols;
    out.height = full.rows;
  }
  return out;
}

}  // namespace yoloflow::plugins::yolo
