#pragma once
// Composes batches whose pixels are planned (Batch::planned, yoloflow/pixel_plan.h) on the
// training device: with the CUDA kernel (composed_pixel_kernel.h) on a CUDA device where it is
// built, else on the host's cores (then copied to the device). Either way the bytes are those of
// the CPU plugins (composed_pixel.h).
//
// On the GPU each decoded image is uploaded once and kept (up to 1 GiB, least recently read out
// first): a mosaic's other images are recent samples, uploaded with their own batch, so a batch
// uploads about its own images (the pixels of one image each) whatever its mosaics read. An
// image the device image cache holds (device_image_store.h) is read where it is: no upload.
#include <cstdint>
#include <memory>

#include <torch/torch.h>

#include "training/compose/device_image_store.h"
#include "yoloflow/pixel_plan.h"
#include "yoloflow/sample.h"

namespace yoloflow::core {

// Composes on the host: `n` images of height x width into `out` (n * height * width * 3 bytes,
// RGB, NHWC), in parallel over rows.
void compose_on_host(const PlannedPixels& planned, std::int64_t n, int height, int width, std::uint8_t* out);

class PixelComposer {
 public:
  explicit PixelComposer(const torch::Device& device);
  ~PixelComposer();
  PixelComposer(const PixelComposer&) = delete;
  PixelComposer& operator=(const PixelComposer&) = delete;

  // Whether this build composes on `device` with its own kernel (not on the host's cores).
  static bool composes_on(const torch::Device& device);

  // The batch's images as a (size, height, width, 3) uint8 RGB tensor on the device, queued on
  // the device's current stream.
  torch::Tensor compose(const Batch& batch);
  // Decoded images kept on the device.
  std::size_t kept_images() const;
  // The training images kept in device memory for the whole run (not owned; null: none): a
  // planned batch's image held there is read where it is, not uploaded.
  void read_kept_images(const DeviceImageStore* store) { store_ = store; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  const DeviceImageStore* store_ = nullptr;
};

// The batch's pixels as a (size, height, width, 3) uint8 RGB tensor: its own bytes on the host,
// or, for a planned batch, composed by `composer` on its device (null: refused), then copied back
// into Batch::pixels as well when `host_copy` (pictures of the first batches).
torch::Tensor batch_pixels(Batch& batch, PixelComposer* composer, bool host_copy);

}  // namespace yoloflow::core
