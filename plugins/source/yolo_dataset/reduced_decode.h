#pragma once
// Decoding a large JPEG at a fraction of its size inside libjpeg (its scaled inverse DCT:
// OpenCV's IMREAD_REDUCED_COLOR_2/4/8) when the image is shrunk to imgsz anyway. The scaled
// decode skips most of the decoding work and is then resized to the same size a full decode
// would be; its pixels are close to, not equal to, those of a full decode and resize.
#include <optional>

#include <opencv2/core.hpp>

namespace yoloflow::plugins::yolo {

// The largest factor of 8, 4 and 2 at which a decode of a `width` x `height` image (its stored
// size) is still at least `resized` (the size a full decode is resized to) in both sides; 1 when
// none is (a full decode).
int jpeg_reduction(int width, int height, cv::Size resized);

// OpenCV's imread flag for the scan's check that a `width` x `height` image decodes: grey at 1/8
// (inside libjpeg for a JPEG, most of the work skipped), or in full when a side is below 8
// pixels, where the 1/8 decode of a format other than JPEG is resized to nothing.
int check_decode_flag(int width, int height);

// OpenCV's imread flag for a colour decode at 1 / `factor`.
int reduced_color_flag(int factor);

// The size a full decode of a `width` x `height` image has (EXIF may rotate it a quarter turn),
// from its decode at 1 / `factor` (libjpeg rounds each side up): (width, height) or (height,
// width); nothing when neither matches or both do (too close to square to tell), so the caller
// decodes in full instead.
std::optional<cv::Size> full_size_of(cv::Size reduced, int width, int height, int factor);

}  // namespace yoloflow::plugins::yolo
