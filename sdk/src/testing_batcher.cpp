// The batcher contract: batch sizes, RGB pixels in the batch layout, and target arrays whose
// every row is an instance of its image, normalised by the batch's size.
#include <cmath>
#include <cstdint>

#include "yoloflow/testing.h"

namespace yoloflow::testing {

namespace {

// Whether boxes row `t` ([batch_idx, cls, cx, cy, w, h]) and, when given, keypoints row `kp`
// (K x [x, y, visible]) are instance j of `s` normalised by the batch's width and height.
bool row_is_instance(const float* t, const float* kp, const Sample& s, std::size_t j, float w, float h) {
  constexpr float kTol = 1e-4f;
  auto near = [](float a, float b) { return std::fabs(a - b) <= kTol; };
  const Box& b = s.boxes[j];
  if (t[1] != static_cast<float>(b.cls) || !near(t[2], (b.x1 + b.x2) * 0.5f / w) ||
      !near(t[3], (b.y1 + b.y2) * 0.5f / h) || !near(t[4], b.width() / w) || !near(t[5], b.height() / h)) {
    return false;
  }
  if (kp == nullptr) return true;
  const auto& points = s.keypoints[j];
  for (std::size_t k = 0; k < points.size(); ++k) {
    const float* p = kp + 3 * k;
    if (!near(p[0], points[k].x / w) || !near(p[1], points[k].y / h) || p[2] != points[k].visible) return false;
  }
  return true;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

// Empty when `a` has shape `want` and as many values; else what is wrong.
std::string array_problem(const TargetArray& a, const std::vector<std::int64_t>& want) {
  if (a.shape != want) return "has shape " + shape_text(a.shape) + ", not " + shape_text(want);
  std::int64_t n = 1;
  for (std::int64_t d : want) n *= d;
  if (static_cast<std::int64_t>(a.values.size()) != n) {
    return "has " + std::to_string(a.values.size()) + " values for shape " + shape_text(want);
  }
  return {};
}

}  // namespace

std::vector<std::string> batcher_contract(Batcher& batcher, const std::vector<Sample>& samples) {
  std::vector<std::string> out;
  const std::int64_t size = batcher.batch_size();
  if (size < 1) return {"batch_size() is " + std::to_string(size)};
  std::vector<Batch> batches;
  for (const auto& s : samples) {
    Sample copy = s;
    copy.image = s.image.clone();
    if (auto b = batcher.add(std::move(copy))) batches.push_back(std::move(*b));
  }
  if (auto b = batcher.flush()) batches.push_back(std::move(*b));
  std::size_t seen = 0;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const Batch& b = batches[k];
    const std::string what = "batch " + std::to_string(k);
    const bool last = k + 1 == batches.size();
    if (b.size != size && !(last && b.size < size)) out.push_back(what + ": " + std::to_string(b.size) + " samples");
    if (static_cast<std::int64_t>(b.samples.size()) != b.size) out.push_back(what + ": samples does not match size");
    // The batch's samples, in batch order (image i of the batch is mine[i]).
    std::vector<const Sample*> mine;
    for (std::int64_t i = 0; i < b.size && seen + static_cast<std::size_t>(i) < samples.size(); ++i) {
      mine.push_back(&samples[seen + static_cast<std::size_t>(i)]);
    }
    std::size_t boxes = 0;
    std::int64_t keypoints_per_box = -1;  // K of the batch's first sample with keypoints
    bool image_classes = false;
    bool sizes_match = true;
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const Sample& s = *mine[i];
      boxes += s.boxes.size();
      if (keypoints_per_box < 0 && !s.keypoints.empty()) keypoints_per_box = static_cast<std::int64_t>(s.keypoints[0].size());
      if (s.image_class >= 0) image_classes = true;
      if (b.height != s.image.rows || b.width != s.image.cols) {
        out.push_back(what + ": " + std::to_string(b.width) + "x" + std::to_string(b.height) + " pixels for a " +
                      std::to_string(s.image.cols) + "x" + std::to_string(s.image.rows) + " sample");
        sizes_match = false;
        continue;
      }
      // RGB: the batch's first pixel is the sample's first BGR pixel reversed.
      const cv::Vec3b bgr = s.image.at<cv::Vec3b>(0, 0);
      const std::uint8_t* rgb = b.image_data(static_cast<std::int64_t>(i));
      if (rgb[0] != bgr[2] || rgb[1] != bgr[1] || rgb[2] != bgr[0]) out.push_back(what + ": image " + std::to_string(i) + " is not RGB");
    }
    seen += static_cast<std::size_t>(b.size);
    const auto n = static_cast<std::int64_t>(boxes);
    if (!b.has_target(targets::kBoxes)) {
      out.push_back(what + ": no '" + std::string(targets::kBoxes) + "' target array");
      continue;
    }
    if (const std::string p = array_problem(b.boxes(), {b.num_boxes(), 6}); !p.empty()) {
      out.push_back(what + ": the boxes array " + p);
      continue;
    }
    if (b.num_boxes() != n) {
      out.push_back(what + ": " + std::to_string(b.num_boxes()) + " target rows for " + std::to_string(boxes) + " boxes");
    }
    const float* kp = nullptr;
    if (keypoints_per_box >= 0) {
      if (!b.has_target(targets::kKeypoints)) {
        out.push_back(what + ": its samples carry keypoints but it has no '" + std::string(targets::kKeypoints) +
                      "' target array");
      } else if (const std::string p = array_problem(b.target(targets::kKeypoints), {b.num_boxes(), keypoints_per_box, 3});
                 !p.empty()) {
        out.push_back(what + ": the keypoints array " + p);
      } else {
        kp = b.target(targets::kKeypoints).values.data();
      }
    }
    if (image_classes) {
      if (!b.has_target(targets::kImageClasses)) {
        out.push_back(what + ": its samples carry image classes but it has no '" + std::string(targets::kImageClasses) +
                      "' target array");
      } else if (const std::string p = array_problem(b.target(targets::kImageClasses), {b.size}); !p.empty()) {
        out.push_back(what + ": the image_classes array " + p);
      } else {
        const auto& classes = b.target(targets::kImageClasses).values;
        for (std::size_t i = 0; i < mine.size(); ++i) {
          const float want = mine[i]->image_class >= 0 ? static_cast<float>(mine[i]->image_class) : -1.0f;
          if (classes[i] != want) {
            out.push_back(what + ": image " + std::to_string(i) + " has image class " + std::to_string(classes[i]) +
                          ", its sample " + std::to_string(mine[i]->image_class));
          }
        }
      }
    }
    const float w = static_cast<float>(b.width), h = static_cast<float>(b.height);
    for (std::int64_t r = 0; r < b.num_boxes(); ++r) {
      const float* t = b.boxes().values.data() + 6 * r;
      const std::string row = what + ": target row " + std::to_string(r);
      if (!(t[0] >= 0 && t[0] < static_cast<float>(b.size)) || t[0] != std::floor(t[0])) {
        out.push_back(row + " has image index " + std::to_string(t[0]));
        continue;
      }
      bool in_range = true;
      for (int c = 2; c < 6; ++c) {
        if (!(t[c] >= -1e-4f && t[c] <= 1.0f + 1e-4f)) in_range = false;
      }
      if (!in_range) out.push_back(row + " is not in 0..1");
      const auto i = static_cast<std::size_t>(t[0]);
      if (!sizes_match || i >= mine.size()) continue;
      // Each row is one instance of its image, normalised, with that instance's keypoints.
      const float* row_kp = kp == nullptr ? nullptr : kp + r * keypoints_per_box * 3;
      const Sample& s = *mine[i];
      bool found = false;
      for (std::size_t j = 0; j < s.boxes.size() && !found; ++j) {
        if (row_kp != nullptr && s.keypoints.size() != s.boxes.size()) break;
        found = row_is_instance(t, row_kp, s, j, w, h);
      }
      if (!found) {
        out.push_back(row + (row_kp != nullptr ? " and its keypoints are" : " is") + " not an instance of image " +
                      std::to_string(i) + " normalised by the batch's size");
      }
    }
  }
  if (seen != samples.size()) out.push_back(std::to_string(seen) + " samples came out for " + std::to_string(samples.size()));
  return out;
}

}  // namespace yoloflow::testing
