#include "yoloflow/image_header.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <memory>

#include "yoloflow/user_file.h"

namespace yoloflow {
namespace {

// Bytes of an image file, read where a parser asks: a file in memory, or a file on disk of which
// only the parts asked for are read.
class Bytes {
 public:
  virtual ~Bytes() = default;
  // Up to `n` bytes at `offset`; fewer at the end of the file or when it cannot be read.
  virtual std::string at(std::uint64_t offset, std::size_t n) const = 0;
  virtual std::uint64_t size() const = 0;
};

class MemoryBytes final : public Bytes {
 public:
  MemoryBytes(const void* data, std::size_t size) : data_(static_cast<const char*>(data)), size_(size) {}
  std::string at(std::uint64_t offset, std::size_t n) const override {
    if (offset >= size_) return {};
    return std::string(data_ + offset, static_cast<std::size_t>(std::min<std::uint64_t>(n, size_ - offset)));
  }
  std::uint64_t size() const override { return size_; }

 private:
  const char* data_;
  std::size_t size_;
};

// The first kHead bytes are read once; a part beyond them (a TIFF directory at the end of the
// file, a JPEG's frame header after large metadata) is read on its own.
class FileBytes final : public Bytes {
 public:
  static constexpr std::size_t kHead = 64 * 1024;
  FileBytes(std::string path, std::string head, std::uint64_t size)
      : path_(std::move(path)), head_(std::move(head)), size_(size) {}
  std::string at(std::uint64_t offset, std::size_t n) const override {
    if (offset + n <= head_.size()) return head_.substr(static_cast<std::size_t>(offset), n);
    std::string part, why;
    read_user_file_part(path_, kImageFileBudget, offset, n, part, why);
    return part;
  }
  std::uint64_t size() const override { return size_; }

 private:
  std::string path_, head_;
  std::uint64_t size_;
};

std::uint64_t be(const std::string& b, std::size_t i, int n) {
  std::uint64_t v = 0;
  for (int k = 0; k < n; ++k) v = (v << 8) | static_cast<unsigned char>(b[i + static_cast<std::size_t>(k)]);
  return v;
}

std::uint64_t le(const std::string& b, std::size_t i, int n) {
  std::uint64_t v = 0;
  for (int k = n - 1; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(b[i + static_cast<std::size_t>(k)]);
  return v;
}

bool starts_with(const std::string& b, const char* sig, std::size_t n) { return b.size() >= n && std::memcmp(b.data(), sig, n) == 0; }

struct Size {
  std::uint64_t width = 0, height = 0;
};

// JPEG: the frame header (SOFn) among the segments before the scan. Bytes between segments are
// skipped as libjpeg skips them.
Size jpeg_size(const Bytes& bytes) {
  std::uint64_t pos = 2;
  for (int steps = 0; steps < 100000 && pos + 4 <= bytes.size(); ++steps) {
    const std::string m = bytes.at(pos, 4);
    if (m.size() < 4) return {};
    if (static_cast<unsigned char>(m[0]) != 0xFF) {
      const std::string chunk = bytes.at(pos, 4096);
      const auto ff = chunk.find('\xFF');
      pos += ff == std::string::npos ? chunk.size() : ff;
      if (chunk.empty()) return {};
      continue;
    }
    const int marker = static_cast<unsigned char>(m[1]);
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      const std::string sof = bytes.at(pos, 9);
      if (sof.size() < 9) return {};
      return {be(sof, 7, 2), be(sof, 5, 2)};
    }
    if (marker == 0xDA || marker == 0xD9) return {};  // the scan or the end before any frame header
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      pos += 2;  // markers without a length
      continue;
    }
    const std::uint64_t length = be(m, 2, 2);
    if (length < 2) return {};
    pos += 2 + length;
  }
  return {};
}

// TIFF and BigTIFF: ImageWidth (256) and ImageLength (257) of the first directory, the page
// imread decodes.
Size tiff_size(const Bytes& bytes, const std::string& head) {
  const bool little = head[0] == 'I';
  const bool big = (little ? le(head, 2, 2) : be(head, 2, 2)) == 43;
  auto num = [&](const std::string& b, std::size_t i, int n) { return little ? le(b, i, n) : be(b, i, n); };
  const std::uint64_t ifd = big ? (head.size() >= 16 ? num(head, 8, 8) : 0) : num(head, 4, 4);
  const std::string count_bytes = bytes.at(ifd, big ? 8 : 2);
  if (count_bytes.size() < (big ? 8u : 2u)) return {};
  const std::uint64_t count = std::min<std::uint64_t>(num(count_bytes, 0, big ? 8 : 2), 4096);
  const std::size_t entry = big ? 20 : 12;
  const std::string entries = bytes.at(ifd + (big ? 8 : 2), static_cast<std::size_t>(count) * entry);
  Size s;
  for (std::size_t e = 0; e + entry <= entries.size(); e += entry) {
    const auto tag = num(entries, e, 2);
    if (tag != 256 && tag != 257) continue;
    const auto type = num(entries, e + 2, 2);
    const std::size_t value = e + (big ? 12 : 8);
    std::uint64_t v = 0;
    if (type == 3) v = num(entries, value, 2);          // SHORT
    else if (type == 4) v = num(entries, value, 4);     // LONG
    else if (type == 16 && big) v = num(entries, value, 8);  // LONG8
    (tag == 256 ? s.width : s.height) = v;
  }
  return s;
}

// WebP: the lossy (VP8), lossless (VP8L) or extended (VP8X) header.
Size webp_size(const std::string& h) {
  if (h.size() < 30) return {};
  const std::string chunk = h.substr(12, 4);
  if (chunk == "VP8 " && static_cast<unsigned char>(h[23]) == 0x9D && static_cast<unsigned char>(h[24]) == 0x01 &&
      static_cast<unsigned char>(h[25]) == 0x2A) {
    return {le(h, 26, 2) & 0x3FFF, le(h, 28, 2) & 0x3FFF};
  }
  if (chunk == "VP8L" && static_cast<unsigned char>(h[20]) == 0x2F) {
    const auto bits = le(h, 21, 4);
    return {(bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1};
  }
  if (chunk == "VP8X") return {le(h, 24, 3) + 1, le(h, 27, 3) + 1};
  return {};
}

// The next whitespace-separated token of a text header from `pos`, skipping '#' comments.
std::string next_token(const std::string& h, std::size_t& pos) {
  for (;;) {
    while (pos < h.size() && std::isspace(static_cast<unsigned char>(h[pos]))) ++pos;
    if (pos < h.size() && h[pos] == '#') {
      while (pos < h.size() && h[pos] != '\n') ++pos;
      continue;
    }
    break;
  }
  const std::size_t start = pos;
  while (pos < h.size() && !std::isspace(static_cast<unsigned char>(h[pos])) && h[pos] != '#') ++pos;
  return h.substr(start, pos - start);
}

std::uint64_t number(const std::string& token) {
  if (token.empty() || token.size() > 18 || !std::all_of(token.begin(), token.end(), ::isdigit)) return 0;
  return std::stoull(token);
}

// PBM/PGM/PPM (P1-P6) and PFM (PF, Pf): width and height follow the magic.
Size pnm_size(const std::string& h) {
  std::size_t pos = 2;
  const auto w = number(next_token(h, pos));
  const auto height = number(next_token(h, pos));
  return {w, height};
}

// PAM (P7): WIDTH and HEIGHT lines before ENDHDR.
Size pam_size(const std::string& h) {
  Size s;
  std::size_t pos = 2;
  for (int i = 0; i < 64; ++i) {
    const std::string key = next_token(h, pos);
    if (key.empty() || key == "ENDHDR") break;
    if (key == "WIDTH") s.width = number(next_token(h, pos));
    if (key == "HEIGHT") s.height = number(next_token(h, pos));
  }
  return s;
}

// Radiance HDR: header lines up to a blank line, then the resolution line ("-Y 512 +X 768").
Size hdr_size(const std::string& h) {
  const auto blank = h.find("\n\n");
  if (blank == std::string::npos) return {};
  std::size_t pos = blank + 2;
  const std::string a1 = next_token(h, pos);
  const auto n1 = number(next_token(h, pos));
  const std::string a2 = next_token(h, pos);
  const auto n2 = number(next_token(h, pos));
  if (a1.size() != 2 || a2.size() != 2) return {};
  if (a1[1] == 'Y' && a2[1] == 'X') return {n2, n1};
  if (a1[1] == 'X' && a2[1] == 'Y') return {n1, n2};
  return {};
}

// JPEG 2000: the image header box (jp2h/ihdr) of a JP2 file, or the SIZ marker of a codestream.
Size jp2_size(const Bytes& bytes, std::uint64_t begin, std::uint64_t end, int depth) {
  std::uint64_t pos = begin;
  for (int boxes = 0; boxes < 1000 && pos + 8 <= end; ++boxes) {
    const std::string box = bytes.at(pos, 16);
    if (box.size() < 8) return {};
    std::uint64_t length = be(box, 0, 4);
    std::uint64_t header = 8;
    if (length == 1) {
      if (box.size() < 16) return {};
      length = be(box, 8, 8);
      header = 16;
    } else if (length == 0) {
      length = end - pos;
    }
    if (length < header) return {};
    const std::string type = box.substr(4, 4);
    if (type == "ihdr") {
      const std::string ihdr = bytes.at(pos + header, 8);
      if (ihdr.size() < 8) return {};
      return {be(ihdr, 4, 4), be(ihdr, 0, 4)};
    }
    if (type == "jp2h" && depth == 0) return jp2_size(bytes, pos + header, std::min(end, pos + length), 1);
    pos += length;
  }
  return {};
}

Size j2k_size(const std::string& h) {
  if (h.size() < 24) return {};
  const auto x = be(h, 8, 4), y = be(h, 12, 4), x0 = be(h, 16, 4), y0 = be(h, 20, 4);
  if (x < x0 || y < y0) return {};
  return {x - x0, y - y0};
}

// OpenEXR: the dataWindow attribute (box2i: xMin, yMin, xMax, yMax) of the header.
Size exr_size(const std::string& h) {
  std::size_t pos = 8;
  for (int attrs = 0; attrs < 1000 && pos < h.size(); ++attrs) {
    const auto name_end = h.find('\0', pos);
    if (name_end == std::string::npos || name_end == pos) return {};
    const std::string name = h.substr(pos, name_end - pos);
    const auto type_end = h.find('\0', name_end + 1);
    if (type_end == std::string::npos || type_end + 5 > h.size()) return {};
    const std::string type = h.substr(name_end + 1, type_end - name_end - 1);
    const auto size = le(h, type_end + 1, 4);
    const std::size_t value = type_end + 5;
    if (name == "dataWindow" && type == "box2i" && size == 16 && value + 16 <= h.size()) {
      const auto x0 = static_cast<std::int32_t>(le(h, value, 4)), y0 = static_cast<std::int32_t>(le(h, value + 4, 4));
      const auto x1 = static_cast<std::int32_t>(le(h, value + 8, 4)), y1 = static_cast<std::int32_t>(le(h, value + 12, 4));
      if (x1 < x0 || y1 < y0) return {};
      return {static_cast<std::uint64_t>(std::int64_t{x1} - x0 + 1), static_cast<std::uint64_t>(std::int64_t{y1} - y0 + 1)};
    }
    pos = value + static_cast<std::size_t>(size);
  }
  return {};
}

ImageHeader read_header(const Bytes& bytes) {
  ImageHeader out;
  const std::string h = bytes.at(0, 64 * 1024);
  Size s;
  auto is = [&](const char* sig, std::size_t n) { return starts_with(h, sig, n); };
  const bool pnm_space = h.size() > 2 && std::isspace(static_cast<unsigned char>(h[2]));
  if (is("\xFF\xD8\xFF", 3)) {
    out.format = "JPEG";
    s = jpeg_size(bytes);
  } else if (is("\x89PNG\r\n\x1A\n", 8)) {
    out.format = "PNG";
    if (h.size() >= 24) s = {be(h, 16, 4), be(h, 20, 4)};
  } else if (is("BM", 2)) {
    out.format = "BMP";
    if (h.size() >= 26) {
      if (le(h, 14, 4) == 12) {
        s = {le(h, 18, 2), le(h, 20, 2)};
      } else {
        const auto w = static_cast<std::int32_t>(le(h, 18, 4)), height = static_cast<std::int32_t>(le(h, 22, 4));
        s = {static_cast<std::uint64_t>(w < 0 ? -std::int64_t{w} : w),
             static_cast<std::uint64_t>(height < 0 ? -std::int64_t{height} : height)};
      }
    }
  } else if (is("II*\0", 4) || is("MM\0*", 4) || is("II+\0", 4) || is("MM\0+", 4)) {
    out.format = "TIFF";
    if (h.size() >= 8) s = tiff_size(bytes, h);
  } else if (is("RIFF", 4) && h.size() >= 16 && h.compare(8, 4, "WEBP") == 0) {
    out.format = "WebP";
    s = webp_size(h);
  } else if (h.size() > 2 && h[0] == 'P' && h[1] >= '1' && h[1] <= '6' && pnm_space) {
    out.format = "PNM";
    s = pnm_size(h);
  } else if (is("P7", 2) && pnm_space) {
    out.format = "PAM";
    s = pam_size(h);
  } else if ((is("PF", 2) || is("Pf", 2)) && pnm_space) {
    out.format = "PFM";
    s = pnm_size(h);
  } else if (is("\x59\xA6\x6A\x95", 4)) {
    out.format = "Sun raster";
    if (h.size() >= 12) s = {be(h, 4, 4), be(h, 8, 4)};
  } else if (is("#?RGBE", 6) || is("#?RADIANCE", 10)) {
    out.format = "Radiance HDR";
    s = hdr_size(h);
  } else if (is("\0\0\0\x0CjP  \r\n\x87\n", 12)) {
    out.format = "JPEG 2000";
    s = jp2_size(bytes, 0, bytes.size(), 0);
  } else if (is("\xFF\x4F\xFF\x51", 4)) {
    out.format = "JPEG 2000";
    s = j2k_size(h);
  } else if (is("\x76\x2F\x31\x01", 4)) {
    out.format = "OpenEXR";
    s = exr_size(h);
  }
  out.width = s.width;
  out.height = s.height;
  return out;
}

std::string refusal_of(const Bytes& bytes, ImageHeader* header) {
  if (bytes.size() == 0) return "empty file";
  const ImageHeader h = read_header(bytes);
  if (header) *header = h;
  if (h.format.empty()) return "not an image (unrecognised file header)";
  if (h.width == 0 || h.height == 0) return "corrupt image (its " + h.format + " header declares no size)";
  return image_size_refusal(h.width, h.height);
}

}  // namespace

std::string image_size_refusal(std::uint64_t width, std::uint64_t height) {
  // In floating point: a BigTIFF or OpenEXR header may declare sides whose product overflows.
  const double pixels = static_cast<double>(width) * static_cast<double>(height);
  if (pixels <= static_cast<double>(kMaxImagePixels)) return "";
  return "image too large: " + std::to_string(width) + "x" + std::to_string(height) + " pixels (" +
         std::to_string(static_cast<long long>(std::min(pixels / 1e6, 9e15))) +
         " megapixels), over the 179-megapixel limit for decoding";
}

std::string image_bytes_refusal(const void* data, std::size_t size, ImageHeader* header) {
  return refusal_of(MemoryBytes(data, size), header);
}

std::string image_file_refusal(const std::string& path, ImageHeader* header) {
  std::string head, why;
  if (!read_user_file_part(path, kImageFileBudget, 0, FileBytes::kHead, head, why)) {
    const bool too_large = why.rfind("holds ", 0) == 0;
    return (too_large ? "image file too large (it " : "unreadable file (it ") + why + ")";
  }
  // The file's size: a part read at its end returns what is there.
  std::uint64_t size = head.size();
  if (head.size() == FileBytes::kHead) {
    // Larger than the head: its size is only needed to bound reads, so the budget does.
    size = kImageFileBudget.max_bytes;
  }
  return refusal_of(FileBytes(path, std::move(head), size), header);
}

}  // namespace yoloflow
