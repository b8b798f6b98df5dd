#include "training/compose/pixel_composer.h"

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "training/compose/composed_pixel.h"
#include "training/compose/hsv_tables.h"
#include "yoloflow/error.h"

#ifdef YOLOFLOW_COMPOSE_KERNELS
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>

#include "training/compose/composed_pixel_kernel.h"
#endif

namespace yoloflow::core {

// The kernel's recursion (composed_pixel.h, which nvcc compiles without the SDK's headers) goes as
// deep as plan_batch lets mixes nest.
static_assert(kComposeMixDepth == kMaxMixDepth, "the composer must compose every mix plan_batch accepts");

namespace {

// The plan's tiles and images as the kernel reads them; `where(k)` gives source k's first pixel
// and row step (host or device memory).
struct Layout {
  std::vector<ComposeTile> tiles;
  std::vector<ComposeImage> images;  // the batch's, then the images mixed in
  std::vector<ComposeMix> mixes;
  std::vector<std::uint8_t> tables;  // 768 bytes per image
  bool hsv = false;                  // some image changes its colours
};

struct SourcePixels {
  const std::uint8_t* data = nullptr;
  std::int64_t stride = 0;
};

// The inverse of an affine matrix as cv::warpAffine computes it (in this order, in double).
void invert_as_opencv(const cv::Matx23d& a, double* m) {
  m[0] = a(0, 0), m[1] = a(0, 1), m[2] = a(0, 2), m[3] = a(1, 0), m[4] = a(1, 1), m[5] = a(1, 2);
  double d = m[0] * m[4] - m[1] * m[3];
  d = d != 0 ? 1. / d : 0;
  const double a11 = m[4] * d, a22 = m[0] * d;
  m[0] = a11;
  m[1] *= -d;
  m[3] *= -d;
  m[4] = a22;
  const double b1 = -m[0] * m[2] - m[1] * m[5];
  const double b2 = -m[3] * m[2] - m[4] * m[5];
  m[2] = b1;
  m[5] = b2;
}

template <class Where>
Layout layout_of(const PlannedPixels& p, std::int64_t n, Where&& where) {
  if (static_cast<std::int64_t>(p.images.size()) < n) {
    throw Error("a planned batch of " + std::to_string(n) + " images has " + std::to_string(p.images.size()) +
                " plans");
  }
  Layout l;
  l.tiles.reserve(p.tiles.size());
  for (const auto& t : p.tiles) {
    const SourcePixels s = where(static_cast<std::size_t>(t.source));
    ComposeTile c;
    c.data = s.data + static_cast<std::int64_t>(t.from.y) * s.stride + static_cast<std::int64_t>(t.from.x) * 3;
    c.stride = s.stride;
    c.from_w = t.from.width;
    c.from_h = t.from.height;
    c.to_x = t.to.x;
    c.to_y = t.to.y;
    c.to_w = t.to.width;
    c.to_h = t.to.height;
    l.tiles.push_back(c);
  }
  l.mixes.reserve(p.mixes.size());
  for (const auto& m : p.mixes) {
    ComposeMix c;
    c.image = m.image;
    c.paste = m.paste ? 1 : 0;
    c.alpha = static_cast<float>(m.ratio);
    c.beta = static_cast<float>(1.0 - m.ratio);
    c.x0 = m.rect.x, c.y0 = m.rect.y, c.x1 = m.rect.x + m.rect.width, c.y1 = m.rect.y + m.rect.height;
    l.mixes.push_back(c);
  }
  l.images.reserve(p.images.size());
  l.tables.resize(static_cast<std::size_t>(n) * 768);
  for (std::size_t i = 0; i < p.images.size(); ++i) {
    const auto& im = p.images[i];
    ComposeImage c;
    c.first_mix = im.first_mix;
    c.mixes = im.mixes;
    c.first_tile = im.first_tile;
    c.tiles = im.tiles;
    c.fill = im.fill;
    c.hsv = im.hsv ? 1 : 0;
    c.flip_lr = im.flip_lr ? 1 : 0;
    c.flip_ud = im.flip_ud ? 1 : 0;
    if (im.warped) {
      c.warp = 1;
      c.canvas_w = im.warp.canvas_width;
      c.canvas_h = im.warp.canvas_height;
      c.border = im.warp.border;
      invert_as_opencv(im.warp.matrix, c.inverse);
    }
    l.images.push_back(c);
    if (static_cast<std::int64_t>(i) >= n) continue;  // an image mixed in: no colours of its own
    l.hsv = l.hsv || im.hsv;
    std::copy(im.hsv_tables.begin(), im.hsv_tables.end(), l.tables.begin() + static_cast<std::ptrdiff_t>(i * 768));
  }
  return l;
}

}  // namespace

void compose_on_host(const PlannedPixels& planned, std::int64_t n, int height, int width, std::uint8_t* out) {
  const Layout l = layout_of(planned, n, [&](std::size_t k) {
    const cv::Mat& m = planned.sources.at(k);
    return SourcePixels{m.ptr<std::uint8_t>(), static_cast<std::int64_t>(m.step[0])};
  });
  const std::uint8_t* b2h = l.hsv ? hsv_tables().bgr_to_hsv.data() : nullptr;
  const std::uint8_t* h2b = l.hsv ? hsv_tables().hsv_to_bgr.data() : nullptr;
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n * height), [&](const auto& r) {
    for (std::int64_t row = r.begin(); row != r.end(); ++row) {
      const std::int64_t b = row / height;
      const int y = static_cast<int>(row % height);
      std::uint8_t* o = out + row * width * 3;
      const std::uint8_t* tables = l.tables.data() + b * 768;
      for (int x = 0; x < width; ++x) {
        composed_pixel(l.tiles.data(), l.images.data(), l.mixes.data(), static_cast<int>(b), tables, b2h, h2b, width,
                       height, x, y, o + x * 3);
      }
    }
  });
}

struct PixelComposer::Impl {
  torch::Device device;
  explicit Impl(const torch::Device& d) : device(d) {}
#ifdef YOLOFLOW_COMPOSE_KERNELS
  torch::Tensor bgr_to_hsv, hsv_to_bgr;  // on the device, made at the first batch with colours
  // Decoded images on the device, each uploaded once and kept, least recently read first out,
  // while later batches' mosaics read them. An entry holds its host image: while it is kept, no
  // other image can have its pixels' address, which is the key.
  using Key = DecodedImageKey;
  struct Kept {
    cv::Mat host;
    std::shared_ptr<torch::Tensor> block;  // the upload it came with (several images)
    SourcePixels pixels;
    std::size_t bytes = 0;
    std::list<Key>::iterator lru;
  };
  std::map<Key, Kept> kept;
  std::list<Key> lru;  // most recently read first
  std::size_t kept_bytes = 0;
  std::size_t budget = std::size_t{1} << 30;

#endif
};

PixelComposer::PixelComposer(const torch::Device& device) : impl_(std::make_unique<Impl>(device)) {}
PixelComposer::~PixelComposer() = default;

bool PixelComposer::composes_on(const torch::Device& device) {
#ifdef YOLOFLOW_COMPOSE_KERNELS
  return device.is_cuda();
#else
  (void)device;
  return false;
#endif
}

torch::Tensor PixelComposer::compose(const Batch& batch) {
  if (!batch.planned) throw Error("a batch without planned pixels was given to the pixel composer");
  const PlannedPixels& p = *batch.planned;
  const std::int64_t n = batch.size;
  const int h = static_cast<int>(batch.height), w = static_cast<int>(batch.width);
  const auto u8 = torch::TensorOptions().dtype(torch::kUInt8);
  if (!composes_on(impl_->device)) {
    torch::Tensor out = torch::empty({n, h, w, 3}, u8);
    compose_on_host(p, n, h, w, out.data_ptr<std::uint8_t>());
    return impl_->device.is_cpu() ? out : out.to(impl_->device);
  }
#ifdef YOLOFLOW_COMPOSE_KERNELS
  Impl& m = *impl_;
  const auto on_device = u8.device(m.device);
  // The batch's decoded images on the device: those kept from earlier batches, the others
  // uploaded now, in one copy from pinned memory.
  std::vector<SourcePixels> where(p.sources.size());
  std::vector<std::size_t> missing, offsets;  // sources to upload, and their place in the upload
  std::size_t missing_bytes = 0;
  for (std::size_t k = 0; k < p.sources.size(); ++k) {
    const cv::Mat& s = p.sources[k];
    if (store_ != nullptr && store_->holds(s)) {
      where[k] = SourcePixels{s.ptr<std::uint8_t>(), static_cast<std::int64_t>(s.step[0])};
      continue;
    }
    const Impl::Key key = decoded_image_key(s);
    auto it = m.kept.find(key);
    if (it != m.kept.end()) {
      m.lru.splice(m.lru.begin(), m.lru, it->second.lru);
      where[k] = it->second.pixels;
    } else {
      missing.push_back(k);
      offsets.push_back(missing_bytes);
      missing_bytes += static_cast<std::size_t>(s.rows) * s.cols * 3;
    }
  }
  if (!missing.empty()) {
    torch::Tensor staging = torch::empty({static_cast<std::int64_t>(missing_bytes)}, u8.pinned_memory(true));
    std::uint8_t* host = staging.data_ptr<std::uint8_t>();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, missing.size(), 1), [&](const auto& r) {
      for (std::size_t i = r.begin(); i != r.end(); ++i) {
        const cv::Mat& s = p.sources[missing[i]];
        const std::size_t row = static_cast<std::size_t>(s.cols) * 3;
        for (int y = 0; y < s.rows; ++y) std::memcpy(host + offsets[i] + y * row, s.ptr<std::uint8_t>(y), row);
      }
    });
    auto block = std::make_shared<torch::Tensor>(torch::empty({static_cast<std::int64_t>(missing_bytes)}, on_device));
    block->copy_(staging, /*non_blocking=*/true);
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const cv::Mat& s = p.sources[missing[i]];
      const Impl::Key key = decoded_image_key(s);
      m.lru.push_front(key);
      Impl::Kept& e = m.kept[key];
      e.host = s;
      e.block = block;
      e.pixels = SourcePixels{block->data_ptr<std::uint8_t>() + offsets[i], static_cast<std::int64_t>(s.cols) * 3};
      e.bytes = static_cast<std::size_t>(s.rows) * s.cols * 3;
      e.lru = m.lru.begin();
      m.kept_bytes += e.bytes;
      where[missing[i]] = e.pixels;
    }
  }
  // Over budget: the least recently read go (never this batch's own, at the front of the list;
  // the kernel below is queued after their last reader, on the same stream).
  while (m.kept_bytes > m.budget && m.lru.size() > p.sources.size()) {
    auto it = m.kept.find(m.lru.back());
    m.kept_bytes -= it->second.bytes;
    m.kept.erase(it);
    m.lru.pop_back();
  }
  const Layout l = layout_of(p, n, [&](std::size_t k) { return where[k]; });
  if (l.hsv && !m.bgr_to_hsv.defined()) {
    const HsvTables& t = hsv_tables();
    auto table = [&](const std::vector<std::uint8_t>& v) {
      return torch::from_blob(const_cast<std::uint8_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, u8)
          .to(m.device);
    };
    m.bgr_to_hsv = table(t.bgr_to_hsv);
    m.hsv_to_bgr = table(t.hsv_to_bgr);
  }
  const auto stream = at::cuda::getCurrentCUDAStream(m.device.index());
  // The tiles, images and their colour tables in one copy from pinned memory, queued: a copy from
  // pageable memory would wait for the stream, i.e. the previous step, before the host goes on.
  // Each part starts 8-byte aligned (the images hold doubles).
  auto aligned = [](std::size_t b) { return (b + 7) / 8 * 8; };
  const std::size_t tile_bytes = aligned(l.tiles.size() * sizeof(ComposeTile));
  const std::size_t image_bytes = aligned(l.images.size() * sizeof(ComposeImage));
  const std::size_t mix_bytes = aligned(l.mixes.size() * sizeof(ComposeMix));
  const std::size_t meta_bytes = std::max<std::size_t>(tile_bytes + image_bytes + mix_bytes + l.tables.size(), 1);
  torch::Tensor meta = torch::empty({static_cast<std::int64_t>(meta_bytes)}, u8.pinned_memory(true));
  std::uint8_t* mh = meta.data_ptr<std::uint8_t>();
  std::memcpy(mh, l.tiles.data(), l.tiles.size() * sizeof(ComposeTile));
  std::memcpy(mh + tile_bytes, l.images.data(), l.images.size() * sizeof(ComposeImage));
  std::memcpy(mh + tile_bytes + image_bytes, l.mixes.data(), l.mixes.size() * sizeof(ComposeMix));
  std::memcpy(mh + tile_bytes + image_bytes + mix_bytes, l.tables.data(), l.tables.size());
  torch::Tensor meta_device = meta.to(m.device, /*non_blocking=*/true);
  torch::Tensor out = torch::empty({n, h, w, 3}, on_device);
  const std::uint8_t* md = meta_device.data_ptr<std::uint8_t>();
  const char* failed = launch_composed_pixels(
      reinterpret_cast<const ComposeTile*>(md), reinterpret_cast<const ComposeImage*>(md + tile_bytes),
      reinterpret_cast<const ComposeMix*>(md + tile_bytes + image_bytes), md + tile_bytes + image_bytes + mix_bytes,
      l.hsv ? m.bgr_to_hsv.data_ptr<std::uint8_t>() : nullptr,
      l.hsv ? m.hsv_to_bgr.data_ptr<std::uint8_t>() : nullptr, static_cast<int>(n), h, w,
      out.data_ptr<std::uint8_t>(), stream.stream());
  if (failed != nullptr) throw Error(std::string("composing a planned batch on the GPU failed: ") + failed);
  return out;
#else
  return {};
#endif
}

std::size_t PixelComposer::kept_images() const {
#ifdef YOLOFLOW_COMPOSE_KERNELS
  return impl_->kept.size();
#else
  return 0;
#endif
}

torch::Tensor batch_pixels(Batch& batch, PixelComposer* composer, bool host_copy) {
  if (!batch.planned) {
    if (!batch.pixels) throw Error("batch " + std::to_string(batch.index) + " has neither pixels nor pixel plans");
    return torch::from_blob(batch.pixels.get(), {batch.size, batch.height, batch.width, 3}, torch::kUInt8);
  }
  if (composer == nullptr) throw Error("a batch with planned pixels reached a consumer that does not compose them");
  torch::Tensor pixels = composer->compose(batch);
  if (host_copy) {
    auto host = std::make_shared<torch::Tensor>(pixels.to(torch::kCPU).contiguous());
    batch.pixels = std::shared_ptr<std::uint8_t>(host, host->data_ptr<std::uint8_t>());
  }
  return pixels;
}

}  // namespace yoloflow::core
