#pragma once
// Images yoloflow writes (training batch grids, previews, plots): encoded in memory by the
// file's extension, then written through the atomic writer (yoloflow/atomic_file.h), never by
// cv::imwrite, which writes in place: a kill or a full disk would leave a truncated image, and
// a name that is a device or a folder would be written into.
#include <string>

#include <opencv2/core.hpp>

namespace yoloflow::core {

// Throws InvalidInput for a target that is not a regular file, Error naming the file when the
// image cannot be encoded as its extension says or cannot be written.
void write_image_file(const std::string& path, const cv::Mat& image);

}  // namespace yoloflow::core
