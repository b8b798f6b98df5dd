#pragma once
// An image's size read from its header, for every format OpenCV's imread decodes (JPEG, PNG,
// BMP, TIFF and BigTIFF, WebP, PBM/PGM/PPM/PAM, PFM, Sun raster, Radiance HDR, JPEG 2000,
// OpenEXR), so that an image too large to decode is refused before a decoder allocates it.
// OpenCV's own limit (OPENCV_IO_MAX_IMAGE_PIXELS) is read once, when its library is loaded,
// before any code of ours runs, and is a gigapixel by default: it cannot be the limit here.
#include <cstddef>
#include <cstdint>
#include <string>

#include "yoloflow/export.h"

namespace yoloflow {

// PIL's decompression-bomb limit, which Ultralytics' image checks apply: decoding costs at
// least 3 bytes a pixel before any resize, so a larger image takes gigabytes in every worker.
inline constexpr std::uint64_t kMaxImagePixels = 178956970;

struct ImageHeader {
  std::string format;  // "JPEG", "PNG", ...; empty when the bytes are no image OpenCV reads
  std::uint64_t width = 0, height = 0;  // stored size (before any EXIF rotation); 0 when unknown
};

// The format and size the header of the file at `path` declares: its first bytes are read (and
// for TIFF, JPEG and JPEG 2000 the few places the size is stored), never the whole file.
// Returns the refusal, "" when the image may be decoded:
//   "unreadable file (<why>)"              the path is no readable file (user_file.h's words)
//   "image file too large (<why>)"         larger than kImageFileBudget: never read
//   "empty file"
//   "not an image (unrecognised file header)"
//   "corrupt image (its header declares no size)"
//   "image too large: WxH pixels (N megapixels), over the 179-megapixel limit for decoding"
YOLOFLOW_SDK_API std::string image_file_refusal(const std::string& path, ImageHeader* header = nullptr);

// The same from a file's bytes in memory (`size` bytes at `data`, the whole file).
YOLOFLOW_SDK_API std::string image_bytes_refusal(const void* data, std::size_t size, ImageHeader* header = nullptr);

// "image too large: ..." for a `width` x `height` image over kMaxImagePixels; "" otherwise. For
// sizes known another way (a video's frames).
YOLOFLOW_SDK_API std::string image_size_refusal(std::uint64_t width, std::uint64_t height);

}  // namespace yoloflow
