#include "training/compose/pixel_composer.h"

#include <algorithm>
#include <cstring>
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
namespace {

// The plan's tiles and images as the kernel reads them.
struct Layout {
  std::vector<ComposeTile> tiles;
  std::vector<ComposeImage> images;
  std::vector<std::uint8_t> tables;  // 768 bytes per image
};

Layout layout_of(const PlannedPixels& p, std::int64_t n) {
  if (static_cast<std::int64_t>(p.images.size()) != n) {
    throw Error("a planned batch of " + std::to_string(n) + " images has " + std::to_string(p.images.size()) +
                " plans");
  }
  Layout l;
  l.tiles.reserve(p.tiles.size());
  for (const auto& t : p.tiles) {
    ComposeTile c;
    c.offset = t.offset;
    c.from_w = t.from_width;
    c.from_h = t.from_height;
    c.to_x = t.to_x;
    c.to_y = t.to_y;
    c.to_w = t.to_width;
    c.to_h = t.to_height;
    l.tiles.push_back(c);
  }
  l.images.reserve(p.images.size());
  l.tables.resize(p.images.size() * 768);
  for (std::size_t i = 0; i < p.images.size(); ++i) {
    const auto& im = p.images[i];
    ComposeImage c;
    c.first_tile = im.first_tile;
    c.tiles = im.tiles;
    c.fill = im.fill;
    c.hsv = im.hsv ? 1 : 0;
    c.flip_lr = im.flip_lr ? 1 : 0;
    c.flip_ud = im.flip_ud ? 1 : 0;
    l.images.push_back(c);
    std::copy(im.hsv_tables.begin(), im.hsv_tables.end(), l.tables.begin() + static_cast<std::ptrdiff_t>(i * 768));
  }
  return l;
}

}  // namespace

void compose_on_host(const PlannedPixels& planned, std::int64_t n, int height, int width, std::uint8_t* out) {
  const Layout l = layout_of(planned, n);
  bool any_hsv = false;
  for (const auto& im : l.images) any_hsv = any_hsv || im.hsv != 0;
  const std::uint8_t* b2h = any_hsv ? hsv_tables().bgr_to_hsv.data() : nullptr;
  const std::uint8_t* h2b = any_hsv ? hsv_tables().hsv_to_bgr.data() : nullptr;
  const std::uint8_t* bytes = planned.bytes.get();
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n * height), [&](const auto& r) {
    for (std::int64_t row = r.begin(); row != r.end(); ++row) {
      const std::int64_t b = row / height;
      const int y = static_cast<int>(row % height);
      std::uint8_t* o = out + row * width * 3;
      const ComposeImage& im = l.images[static_cast<std::size_t>(b)];
      const std::uint8_t* tables = l.tables.data() + b * 768;
      for (int x = 0; x < width; ++x) {
        composed_pixel(bytes, l.tiles.data(), im, tables, b2h, h2b, width, height, x, y, o + x * 3);
      }
    }
  });
}

struct PixelComposer::Impl {
  torch::Device device;
  explicit Impl(const torch::Device& d) : device(d) {}
#ifdef YOLOFLOW_COMPOSE_KERNELS
  torch::Tensor bgr_to_hsv, hsv_to_bgr;  // on the device, made at the first batch with colours
  // Batches whose bytes may still be crossing to the device, oldest first.
  struct Held {
    at::cuda::CUDAEvent copied;
    std::shared_ptr<const PlannedPixels> planned;
  };
  std::deque<Held> held;
#endif
};

PixelComposer::PixelComposer(const torch::Device& device) : impl_(std::make_unique<Impl>(device)) {}
PixelComposer::~PixelComposer() {
#ifdef YOLOFLOW_COMPOSE_KERNELS
  for (auto& h : impl_->held) h.copied.synchronize();
#endif
}

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
  const Layout l = layout_of(p, n);
  bool any_hsv = false;
  for (const auto& im : l.images) any_hsv = any_hsv || im.hsv != 0;
  if (any_hsv && !m.bgr_to_hsv.defined()) {
    const HsvTables& t = hsv_tables();
    auto table = [&](const std::vector<std::uint8_t>& v) {
      return torch::from_blob(const_cast<std::uint8_t*>(v.data()), {static_cast<std::int64_t>(v.size())}, u8)
          .to(m.device);
    };
    m.bgr_to_hsv = table(t.bgr_to_hsv);
    m.hsv_to_bgr = table(t.hsv_to_bgr);
  }
  const auto stream = at::cuda::getCurrentCUDAStream(m.device.index());
  // The tiles, images and their colour tables in one copy (pageable memory: read before it returns).
  const std::size_t tile_bytes = l.tiles.size() * sizeof(ComposeTile);
  const std::size_t image_bytes = l.images.size() * sizeof(ComposeImage);
  std::vector<std::uint8_t> meta(std::max<std::size_t>(tile_bytes + image_bytes + l.tables.size(), 1));
  std::memcpy(meta.data(), l.tiles.data(), tile_bytes);
  std::memcpy(meta.data() + tile_bytes, l.images.data(), image_bytes);
  std::memcpy(meta.data() + tile_bytes + image_bytes, l.tables.data(), l.tables.size());
  torch::Tensor meta_device =
      torch::from_blob(meta.data(), {static_cast<std::int64_t>(meta.size())}, u8).to(m.device, /*non_blocking=*/false);
  // The packed image parts: from the batcher's pinned buffer, asynchronously.
  const auto size = static_cast<std::int64_t>(std::max<std::size_t>(p.size, 1));
  torch::Tensor bytes = torch::empty({size}, on_device);
  bytes.copy_(torch::from_blob(p.bytes.get(), {size}, u8), /*non_blocking=*/true);
  while (!m.held.empty() && m.held.front().copied.query()) m.held.pop_front();
  m.held.emplace_back();
  m.held.back().copied.record(stream);
  m.held.back().planned = batch.planned;

  torch::Tensor out = torch::empty({n, h, w, 3}, on_device);
  const std::uint8_t* md = meta_device.data_ptr<std::uint8_t>();
  const char* failed = launch_composed_pixels(
      bytes.data_ptr<std::uint8_t>(), reinterpret_cast<const ComposeTile*>(md),
      reinterpret_cast<const ComposeImage*>(md + tile_bytes), md + tile_bytes + image_bytes,
      any_hsv ? m.bgr_to_hsv.data_ptr<std::uint8_t>() : nullptr,
      any_hsv ? m.hsv_to_bgr.data_ptr<std::uint8_t>() : nullptr, static_cast<int>(n), h, w,
      out.data_ptr<std::uint8_t>(), stream.stream());
  if (failed != nullptr) throw Error(std::string("composing a planned batch on the GPU failed: ") + failed);
  return out;
#else
  return {};
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
