#pragma once
// One output pixel of a planned image (yoloflow/pixel_plan.h), the same arithmetic on the host
// and in the CUDA kernel (composed_pixel_kernel.cu): every operation in integers, or in
// floating point rounded as OpenCV rounds it, so both give OpenCV's bytes.
//
// A tile is cv::resize(INTER_LINEAR) of an 8-bit image: for each axis the source position
// (d + 0.5) * n / m - 0.5, its fraction as a float, weights (1 - f) and f each rounded to 11 bits
// (they may sum to 2047 or 2049, as OpenCV's do). Horizontally the fraction is clamped at the
// edges (the edge pixel alone), vertically only the rows are (OpenCV keeps the fraction there).
// The vertical pass is OpenCV's vector one, which every element of an 8-bit row takes on x86:
// ((h0 >> 4) * b0 >> 16) + ((h1 >> 4) * b1 >> 16), rounded by 2 bits and saturated
// (tests/unit/composed_pixel_test.cpp checks it against cv::resize over random sizes).
// A warp is cv::warpAffine(INTER_LINEAR, BORDER_CONSTANT) of the canvas the tiles make: the
// inverse matrix as OpenCV inverts it, each output pixel's source position in 1/32 pixel
// (cvRound of (m * x) * 1024 per column and (m * y + m) * 1024 per row, plus 16, shifted by 5),
// weights (32 - f) * (32 - g) * 32 ... summing to 2^15, rounded by 15 bits; the canvas is the
// tiles over `fill`, the border outside it (checked against cv::warpAffine in the same test).
// A blend is cv::addWeighted(this, r, other, 1 - r, 0) of 8-bit images: r and 1 - r as floats,
// fma(this, r, other * (1 - r)) rounded to nearest (OpenCV's vector code, checked against
// cv::addWeighted in the same test); a paste takes the other image's pixel inside its rectangle.
// Colours go through two tables made by cv::cvtColor itself (hsv_tables.h).
#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define YF_HOST_DEVICE __host__ __device__
#else
#define YF_HOST_DEVICE
#endif

namespace yoloflow::core {

// How deep images mixed into images are composed (yoloflow::kMaxMixDepth, which plan_batch holds).
inline constexpr int kComposeMixDepth = 3;

struct ComposeTile {
  const std::uint8_t* data = nullptr;  // the resized part's first pixel (BGR), host or device memory
  std::int64_t stride = 0;             // bytes from one of its rows to the next
  int from_w = 0, from_h = 0;
  int to_x = 0, to_y = 0, to_w = 0, to_h = 0;
};

struct ComposeMix {
  int image = 0;  // the image mixed in (in the images array)
  int paste = 0;  // 1: its pixel inside [x0, x1) x [y0, y1); 0: blended
  float alpha = 0.5f, beta = 0.5f;  // blend: weights of this image and the other
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

struct ComposeImage {
  double inverse[6] = {};  // the warp's output -> canvas matrix, as OpenCV inverts it (warp set)
  int first_mix = 0, mixes = 0;
  int first_tile = 0, tiles = 0;
  int fill = 114;
  int hsv = 0, flip_lr = 0, flip_ud = 0;
  int warp = 0, canvas_w = 0, canvas_h = 0, border = 114;
};

// The two source pixels and 11-bit weights of output position d on an axis resized from n
// source pixels to m.
struct ResizeTap {
  int s0 = 0, s1 = 0, w0 = 0, w1 = 0;
};

YF_HOST_DEVICE inline double mul_exact(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);  // never fused with the subtraction below (OpenCV's x86 code is not)
#else
  return a * b;
#endif
}

YF_HOST_DEVICE inline double add_exact(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// cvRound of a double: to nearest, ties to even.
YF_HOST_DEVICE inline int round_int(double v) {
#ifdef __CUDA_ARCH__
  return __double2int_rn(v);
#else
  return static_cast<int>(__builtin_nearbyint(v));
#endif
}

YF_HOST_DEVICE inline float round_even(float v) {
#ifdef __CUDA_ARCH__
  return rintf(v);
#else
  return __builtin_rintf(v);  // the current rounding mode: to nearest, ties to even, as cvRound
#endif
}

YF_HOST_DEVICE inline ResizeTap resize_tap(int d, int n, int m, bool clamp_fraction) {
  const double scale = 1.0 / (static_cast<double>(m) / n);
  float f = static_cast<float>(mul_exact(d + 0.5, scale) - 0.5);
  const float fl = floorf(f);
  int s = static_cast<int>(fl);
  f -= fl;
  ResizeTap t;
  if (clamp_fraction) {
    if (s < 0) {
      f = 0.f;
      s = 0;
    }
    if (s >= n - 1) {
      f = 0.f;
      s = n - 1;
    }
    t.s0 = s;
    t.s1 = s + 1 < n ? s + 1 : n - 1;
  } else {
    t.s0 = s < 0 ? 0 : (s < n ? s : n - 1);
    t.s1 = s + 1 < 0 ? 0 : (s + 1 < n ? s + 1 : n - 1);
  }
  t.w0 = static_cast<int>(round_even((1.f - f) * 2048.f));
  t.w1 = static_cast<int>(round_even(f * 2048.f));
  return t;
}

// Channel c of the tile's pixel (lx, ly) in its output rectangle.
YF_HOST_DEVICE inline int tile_value(const ComposeTile& t, int lx, int ly, int c) {
  // The same size (a mosaic's tile on its canvas): cv::resize copies, and so do the taps below.
  if (t.from_w == t.to_w && t.from_h == t.to_h) return t.data[ly * t.stride + lx * 3 + c];
  const ResizeTap tx = resize_tap(lx, t.from_w, t.to_w, true);
  const ResizeTap ty = resize_tap(ly, t.from_h, t.to_h, false);
  const std::uint8_t* r0 = t.data + ty.s0 * t.stride;
  const std::uint8_t* r1 = t.data + ty.s1 * t.stride;
  // The horizontal pass: where the right neighbour is past the edge, the edge pixel alone (x 2048).
  const bool edge = tx.s0 >= t.from_w - 1;
  const int a0 = edge ? 2048 : tx.w0, a1 = edge ? 0 : tx.w1;
  const int h0 = r0[tx.s0 * 3 + c] * a0 + r0[tx.s1 * 3 + c] * a1;
  const int h1 = r1[tx.s0 * 3 + c] * a0 + r1[tx.s1 * 3 + c] * a1;
  auto mul_hi = [](int a, int b) { return (a * b) >> 16; };
  const int sat0 = (h0 >> 4) > 32767 ? 32767 : (h0 >> 4), sat1 = (h1 >> 4) > 32767 ? 32767 : (h1 >> 4);
  const int v = (mul_hi(sat0, ty.w0) + mul_hi(sat1, ty.w1) + 2) >> 2;
  return v < 0 ? 0 : (v > 255 ? 255 : v);
}

// The BGR pixel (x, y) the tiles make: the last tile holding it, else `fill`.
YF_HOST_DEVICE inline void tiles_pixel(const ComposeTile* tiles, const ComposeImage& im, int x, int y, int* bgr) {
  bgr[0] = bgr[1] = bgr[2] = im.fill;
  for (int k = im.tiles - 1; k >= 0; --k) {  // a later tile lies over an earlier one
    const ComposeTile& t = tiles[im.first_tile + k];
    if (x < t.to_x || y < t.to_y || x >= t.to_x + t.to_w || y >= t.to_y + t.to_h) continue;
    for (int c = 0; c < 3; ++c) bgr[c] = tile_value(t, x - t.to_x, y - t.to_y, c);
    return;
  }
}

// The BGR pixel (x, y) of the warped canvas.
YF_HOST_DEVICE inline void warped_pixel(const ComposeTile* tiles, const ComposeImage& im, int x, int y, int* bgr) {
  const double* m = im.inverse;
  const int x0 = round_int(add_exact(mul_exact(m[1], y), m[2]) * 1024) + 16;
  const int y0 = round_int(add_exact(mul_exact(m[4], y), m[5]) * 1024) + 16;
  const int px = (x0 + round_int(mul_exact(m[0], x) * 1024)) >> 5;
  const int py = (y0 + round_int(mul_exact(m[3], x) * 1024)) >> 5;
  const int sx = px >> 5, sy = py >> 5, fx = px & 31, fy = py & 31;
  const int w[4] = {(32 - fx) * (32 - fy) * 32, fx * (32 - fy) * 32, (32 - fx) * fy * 32, fx * fy * 32};
  int sum[3] = {1 << 14, 1 << 14, 1 << 14};
  for (int k = 0; k < 4; ++k) {
    const int cx = sx + (k & 1), cy = sy + (k >> 1);
    int tap[3] = {im.border, im.border, im.border};
    if (cx >= 0 && cy >= 0 && cx < im.canvas_w && cy < im.canvas_h) tiles_pixel(tiles, im, cx, cy, tap);
    for (int c = 0; c < 3; ++c) sum[c] += tap[c] * w[k];
  }
  for (int c = 0; c < 3; ++c) {
    const int v = sum[c] >> 15;
    bgr[c] = v < 0 ? 0 : (v > 255 ? 255 : v);
  }
}

YF_HOST_DEVICE inline int blended(int a, int b, float alpha, float beta) {
#ifdef __CUDA_ARCH__
  const float v = __fmaf_rn(static_cast<float>(a), alpha, __fmul_rn(static_cast<float>(b), beta));
#else
  const float v = std::fma(static_cast<float>(a), alpha, static_cast<float>(b) * beta);
#endif
  const int i = static_cast<int>(round_even(v));
  return i < 0 ? 0 : (i > 255 ? 255 : i);
}

// The BGR pixel (x, y) of image `at` before its colours and flips: its tiles (or warped canvas),
// then the images mixed in, each made the same way, `Depth` levels deep at most.
template <int Depth>
YF_HOST_DEVICE inline void mixed_pixel(const ComposeTile* tiles, const ComposeImage* images, const ComposeMix* mixes,
                                       int at, int x, int y, int* bgr) {
  const ComposeImage& im = images[at];
  if (im.warp) {
    warped_pixel(tiles, im, x, y, bgr);
  } else {
    tiles_pixel(tiles, im, x, y, bgr);
  }
  if constexpr (Depth > 0) {
    for (int k = 0; k < im.mixes; ++k) {
      const ComposeMix& m = mixes[im.first_mix + k];
      if (m.paste && (x < m.x0 || y < m.y0 || x >= m.x1 || y >= m.y1)) continue;
      int other[3];
      mixed_pixel<Depth - 1>(tiles, images, mixes, m.image, x, y, other);
      for (int c = 0; c < 3; ++c) bgr[c] = m.paste ? other[c] : blended(bgr[c], other[c], m.alpha, m.beta);
    }
  }
}

// Output pixel (x, y) of the batch's image `at`, `width` x `height`, written as RGB into out[0..2].
// `hsv_tables`: the image's 3 x 256 tables; `bgr_to_hsv`: 2^24 x 3 bytes indexed by
// (b << 16 | g << 8 | r); `hsv_to_bgr`: 180 x 256 x 256 x 3 bytes indexed by (h, s, v).
YF_HOST_DEVICE inline void composed_pixel(const ComposeTile* tiles, const ComposeImage* images, const ComposeMix* mixes,
                                          int at, const std::uint8_t* hsv_tables, const std::uint8_t* bgr_to_hsv,
                                          const std::uint8_t* hsv_to_bgr, int width, int height, int x, int y,
                                          std::uint8_t* out) {
  const ComposeImage& im = images[at];
  const int sx = im.flip_lr ? width - 1 - x : x;
  const int sy = im.flip_ud ? height - 1 - y : y;
  int bgr[3];
  mixed_pixel<kComposeMixDepth>(tiles, images, mixes, at, sx, sy, bgr);
  if (im.hsv) {
    const std::int64_t i = (static_cast<std::int64_t>(bgr[0]) << 16 | bgr[1] << 8 | bgr[2]) * 3;
    const int h = hsv_tables[bgr_to_hsv[i]], s = hsv_tables[256 + bgr_to_hsv[i + 1]],
              v = hsv_tables[512 + bgr_to_hsv[i + 2]];
    const std::int64_t j = ((static_cast<std::int64_t>(h) * 256 + s) * 256 + v) * 3;
    for (int c = 0; c < 3; ++c) bgr[c] = hsv_to_bgr[j + c];
  }
  out[0] = static_cast<std::uint8_t>(bgr[2]);
  out[1] = static_cast<std::uint8_t>(bgr[1]);
  out[2] = static_cast<std::uint8_t>(bgr[0]);
}

}  // namespace yoloflow::core
