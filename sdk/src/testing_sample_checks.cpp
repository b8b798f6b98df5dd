// The checks of single samples that the source and augmentation contracts share.
#include "testing_sample_checks.h"

#include <cmath>
#include <sstream>

#include <opencv2/core.hpp>

namespace yoloflow::testing::detail {

void check_sample(const Sample& s, const std::string& what, std::vector<std::string>& out) {
  if (s.image.empty() || s.image.type() != CV_8UC3) out.push_back(what + ": the image is not 8-bit with 3 channels");
  if (!s.image.isContinuous()) out.push_back(what + ": the image is not continuous");
  const float w = static_cast<float>(s.image.cols), h = static_cast<float>(s.image.rows);
  constexpr float kSlack = 1e-3f;  // float rounding at the edges
  for (std::size_t i = 0; i < s.boxes.size(); ++i) {
    const Box& b = s.boxes[i];
    std::ostringstream os;
    os << what << ": box " << i << " (" << b.x1 << ", " << b.y1 << ", " << b.x2 << ", " << b.y2 << ") ";
    if (!(std::isfinite(b.x1) && std::isfinite(b.y1) && std::isfinite(b.x2) && std::isfinite(b.y2))) {
      out.push_back(os.str() + "is not finite");
    } else if (b.x1 > b.x2 || b.y1 > b.y2) {
      out.push_back(os.str() + "has x1 > x2 or y1 > y2");
    } else if (b.x1 < -kSlack || b.y1 < -kSlack || b.x2 > w + kSlack || b.y2 > h + kSlack) {
      os << "leaves the " << s.image.cols << "x" << s.image.rows << " image";
      out.push_back(os.str());
    }
  }
}

bool same_sample(const Sample& a, const Sample& b) {
  if (a.image.size() != b.image.size() || a.image.type() != b.image.type() || a.boxes.size() != b.boxes.size()) return false;
  if (!a.image.empty() && cv::norm(a.image, b.image, cv::NORM_INF) != 0) return false;
  for (std::size_t i = 0; i < a.boxes.size(); ++i) {
    const Box &p = a.boxes[i], &q = b.boxes[i];
    if (p.x1 != q.x1 || p.y1 != q.y1 || p.x2 != q.x2 || p.y2 != q.y2 || p.cls != q.cls) return false;
  }
  if (a.polygons != b.polygons || a.keypoints.size() != b.keypoints.size() || a.masks.size() != b.masks.size() ||
      a.image_class != b.image_class) {
    return false;
  }
  for (std::size_t i = 0; i < a.keypoints.size(); ++i) {
    if (a.keypoints[i].size() != b.keypoints[i].size()) return false;
    for (std::size_t j = 0; j < a.keypoints[i].size(); ++j) {
      const Keypoint &p = a.keypoints[i][j], &q = b.keypoints[i][j];
      if (p.x != q.x || p.y != q.y || p.visible != q.visible) return false;
    }
  }
  for (std::size_t i = 0; i < a.masks.size(); ++i) {
    if (a.masks[i].size() != b.masks[i].size()) return false;
    if (!a.masks[i].empty() && cv::norm(a.masks[i], b.masks[i], cv::NORM_INF) != 0) return false;
  }
  return true;
}

}  // namespace yoloflow::testing::detail
