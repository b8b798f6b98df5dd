#include "training/detect/image_file.h"

#include <filesystem>
#include <string_view>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"
#include "yoloflow/printable.h"

namespace yoloflow::core {

void write_image_file(const std::string& path, const cv::Mat& image) {
  check_writable_target(path);  // before the encoding's work
  const std::string ext = std::filesystem::path(path).extension().string();
  std::vector<unsigned char> encoded;
  bool ok = false;
  try {
    ok = !ext.empty() && cv::imencode(ext, image, encoded);
  } catch (const cv::Exception&) {
    ok = false;  // OpenCV throws for an extension it has no encoder for
  }
  if (!ok) throw Error("cannot encode the image " + printable(path) + " as '" + printable(ext) + "'");
  write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
}

}  // namespace yoloflow::core
