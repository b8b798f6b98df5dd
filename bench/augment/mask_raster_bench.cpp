// The mask targets of a segmentation batch, rasterised as collate makes them (masks=true,
// overlap_mask, mask_ratio 4), against the direct rule (each outline filled at the image's size,
// then resized), in the same run: milliseconds per batch on one thread, the ratio, and whether
// both give the same bytes. Then collate itself (masks=true) finishing whole batches on 1 thread
// and on --threads (its samples' pixels copied and masks rasterised in parallel), and the ratio.
// Samples: coco128-seg through yolo_dataset and mosaic_perspective at imgsz (4-image mosaics:
// the crowded batches segmentation trains on).
//
//   yoloflow_bench_mask_raster [--data PATH/coco128-seg/data.yaml] [--imgsz 640] [--batch 32]
//                              [--batches 8] [--ratio 4] [--threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include <opencv2/core/utility.hpp>
#include <tbb/task_arena.h>
#include <thread>

#include "batcher/collate/mask_raster.h"
#include "bench_components.h"
#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"
#include "yoloflow/source.h"

using namespace yoloflow;
using bench::make;
using Clock = std::chrono::steady_clock;

namespace {

// The direct rule for one image's overlap plane: every instance's mask at full size, resized,
// larger ones drawn first.
void reference_overlap(const std::vector<Polygon>& polygons, int height, int width, int ratio, std::vector<float>& out) {
  const int h = height / ratio, w = width / ratio;
  std::vector<cv::Mat> masks;
  std::vector<double> areas;
  for (const auto& p : polygons) {
    masks.push_back(plugins::instance_mask_reference(p, height, width, ratio));
    areas.push_back(cv::sum(masks.back())[0]);
  }
  std::vector<std::size_t> order(polygons.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return areas[a] > areas[b]; });
  cv::Mat plane = cv::Mat::zeros(h, w, CV_32FC1);
  for (std::size_t k : order) plane.setTo(static_cast<float>(k + 1), masks[k]);
  out.insert(out.end(), plane.ptr<float>(), plane.ptr<float>() + static_cast<std::ptrdiff_t>(h) * w);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = std::string(YOLOFLOW_SHARED_DIR) + "/datasets/coco128-seg/data.yaml";
  int imgsz = 640, batch = 32, batches = 8, ratio = 4;
  int threads = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw InvalidInput(a + " needs a value");
      return argv[++i];
    };
    if (a == "--data") data = next();
    else if (a == "--imgsz") imgsz = std::stoi(next());
    else if (a == "--batch") batch = std::stoi(next());
    else if (a == "--batches") batches = std::stoi(next());
    else if (a == "--ratio") ratio = std::stoi(next());
    else if (a == "--threads") threads = std::stoi(next());
    else {
      std::cerr << "usage: yoloflow_bench_mask_raster [--data data.yaml] [--imgsz 640] [--batch 32] [--batches 8] "
                   "[--ratio 4] [--threads N]\n";
      return 2;
    }
  }
  try {
    cv::setNumThreads(1);  // the batcher's one thread
    core::PluginManager pm;
    pm.load_all();
    auto source = make<DataSource>(pm, Kind::Source, "yolo_dataset", {{"data", data}, {"split", "train"}}, imgsz);
    auto mosaic = make<Augmentation>(pm, Kind::Augmentation, "mosaic_perspective", json::object(), imgsz);
    SourceSamples loader(*source);
    std::vector<Sample> samples;
    std::size_t instances = 0;
    for (int i = 0; i < batch * batches; ++i) {
      Sample s = source->load(static_cast<std::size_t>(i) % source->size());
      Rng rng(static_cast<std::uint64_t>(i));
      AugmentContext ac{rng, loader, imgsz, 0};
      mosaic->apply(s, ac);
      instances += s.boxes.size();
      samples.push_back(std::move(s));
    }
    const int height = samples.front().image.rows, width = samples.front().image.cols;
    std::printf("mask targets of %d batches of %d: %dx%d mosaics of %s, %.1f instances an image, mask_ratio %d, "
                "one thread\n",
                batches, batch, width, height, data.c_str(), static_cast<double>(instances) / samples.size(), ratio);
    auto time_batches = [&](auto rasterise, std::vector<float>& out) {
      out.clear();
      const auto t0 = Clock::now();
      for (const auto& s : samples) rasterise(s, out);
      return std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / batches;
    };
    std::vector<float> direct, windowed;
    double ms_direct = 1e30, ms_windowed = 1e30;
    for (int repeat = 0; repeat < 3; ++repeat) {  // the best of three each
      ms_direct = std::min(ms_direct, time_batches([&](const Sample& s, std::vector<float>& out) {
        reference_overlap(s.polygons, height, width, ratio, out);
      }, direct));
      ms_windowed = std::min(ms_windowed, time_batches([&](const Sample& s, std::vector<float>& out) {
        plugins::append_overlap_mask(s.polygons, s.boxes.size(), height, width, ratio, out);
      }, windowed));
    }
    std::printf("direct (filled at full size, resized): %8.2f ms a batch\n", ms_direct);
    std::printf("windowed (collate):                     %8.2f ms a batch\n", ms_windowed);
    std::printf("windowed / direct: %.1fx faster; same bytes: %s\n", ms_direct / ms_windowed,
                direct == windowed ? "yes" : "NO");
    // collate as the batcher node runs it: add() each sample, the batch finished in parallel.
    auto collate_ms = [&](int arena_threads) {
      auto collate = make<Batcher>(pm, Kind::Batcher, "collate",
                                   {{"batch", batch}, {"masks", true}, {"mask_ratio", ratio}}, imgsz);
      double best = 1e30;
      tbb::task_arena arena(arena_threads);
      for (int repeat = 0; repeat < 3; ++repeat) {
        const auto t0 = Clock::now();
        arena.execute([&] {
          for (const auto& s : samples) {
            Sample copy = s;
            (void)collate->add(std::move(copy));
          }
        });
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / batches);
      }
      return best;
    };
    const double one = collate_ms(1), many = collate_ms(threads);
    std::printf("collate with masks, a whole batch: %.2f ms on 1 thread, %.2f ms on %d threads (%.2fx)\n", one, many,
                threads, one / many);
    return direct == windowed ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}
