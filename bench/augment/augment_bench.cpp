// Images/s of the default YOLO11 training chain on coco128:
//   yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate (batch 32)
// with 1 thread and with N threads (a oneTBB arena), each with cache 'none' and 'ram', plus
// where the time goes per stage. The real plugins are loaded from the build's plugin folder.
//
//   yoloflow_bench_augment [--data PATH/data.yaml] [--imgsz 640] [--batch 32]
//                          [--samples 128] [--threads N]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <opencv2/core/utility.hpp>
#include <tbb/task_arena.h>

#include "plugin/plugin_manager.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;
using Clock = std::chrono::steady_clock;

namespace {

const char* const kStages[] = {"decode+resize (source)", "decode+resize (mosaic's 3 extra)",
                               "mosaic (own work)", "random_perspective", "hsv", "flip",
                               "collate"};
constexpr int kNumStages = 7;

struct StageTimes {
  std::atomic<std::int64_t> ns[kNumStages] = {};
  void add(int stage, Clock::duration d) {
    ns[stage] += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  }
};

thread_local std::int64_t t_nested_load_ns = 0;

// Mosaic's view of the source; times its loads so mosaic's own work can be told apart.
class TimedLoader final : public SampleLoader {
 public:
  TimedLoader(DataSource& src, StageTimes& times) : src_(src), times_(times) {}
  std::size_t size() const override { return src_.size(); }
  Sample load(std::size_t i) override {
    const auto t0 = Clock::now();
    Sample s = src_.load(i);
    const auto d = Clock::now() - t0;
    times_.add(1, d);
    t_nested_load_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    return s;
  }

 private:
  DataSource& src_;
  StageTimes& times_;
};

template <class T>
std::unique_ptr<T> make(core::PluginManager& pm, Kind kind, const std::string& name, const json& params,
                        int imgsz) {
  const auto* rc = pm.registry().find(kind, name);
  if (!rc) throw Error("plugin component '" + name + "' not found; is the build's plugin folder there?");
  Diagnostics diags;
  rc->info.schema.validate(params, "params", diags);
  if (!diags.empty()) throw InvalidInput(diags[0].message);
  auto c = pm.registry().create_as<T>(kind, name, "bench");
  StageContext ctx;
  ctx.node = name;
  ctx.imgsz = imgsz;
  c->configure(Params(rc->info.schema.resolve(params), "bench." + name), ctx);
  return c;
}

struct Options {
  std::string data = std::string(YOLOFLOW_SHARED_DIR) + "/datasets/coco128/data.yaml";
  int imgsz = 640, batch = 32;
  std::size_t samples = 128;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

struct Result {
  std::string name;
  double seconds = 0, images_per_s = 0;
  std::int64_t batches = 0, boxes = 0;
  std::vector<double> stage_s;
};

Result run(core::PluginManager& pm, const Options& o, int threads, const std::string& cache) {
  json src_params = {{"data", o.data}, {"shrink_interpolation", "linear"}, {"cache", cache}};
  auto source = make<DataSource>(pm, Kind::Source, "yolo_dataset", src_params, o.imgsz);
  std::vector<std::unique_ptr<Augmentation>> chain;
  for (const char* n : {"mosaic", "random_perspective", "hsv", "flip"})
    chain.push_back(make<Augmentation>(pm, Kind::Augmentation, n, json::object(), o.imgsz));
  auto collate = make<Batcher>(pm, Kind::Batcher, "collate", {{"batch", o.batch}}, o.imgsz);
  StageTimes times;
  TimedLoader loader(*source, times);
  // As in the graph runner: the arena's threads are the parallelism, OpenCV's pool is off.
  cv::setNumThreads(0);
  tbb::task_arena arena(threads);
  Result r;
  r.name = std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + ", cache " + cache;

  auto epoch = [&](int ep, bool timed) {
    const std::size_t n = o.samples;
    for (std::size_t start = 0; start < n; start += static_cast<std::size_t>(o.batch)) {
      const std::size_t end = std::min(n, start + static_cast<std::size_t>(o.batch));
      std::vector<Sample> out(end - start);
      arena.execute([&] {
        tbb::parallel_for(tbb::blocked_range<std::size_t>(start, end, 1), [&](const auto& range) {
          for (std::size_t k = range.begin(); k != range.end(); ++k) {
            const std::size_t index = k % source->size();
            Rng rng(Rng::mix(Rng::mix(7, static_cast<std::uint64_t>(ep)), k));
            AugmentContext ctx{rng, loader, o.imgsz, ep};
            auto t0 = Clock::now();
            Sample s = source->load(index);
            auto t1 = Clock::now();
            if (timed) times.add(0, t1 - t0);
            for (int a = 0; a < 4; ++a) {
              t_nested_load_ns = 0;
              t0 = Clock::now();
              chain[a]->apply(s, ctx);
              t1 = Clock::now();
              if (timed) times.add(2 + a, (t1 - t0) - std::chrono::nanoseconds(t_nested_load_ns));
            }
            out[k - start] = std::move(s);
          }
        });
      });
      const auto t0 = Clock::now();
      for (auto& s : out) {
        if (auto b = collate->add(std::move(s))) {
          if (timed) {
            ++r.batches;
            r.boxes += b->num_boxes();
          }
        }
      }
      if (auto b = collate->flush()) {
        if (timed) {
          ++r.batches;
          r.boxes += b->num_boxes();
        }
      }
      if (timed) times.add(6, Clock::now() - t0);
    }
  };

  if (cache == "ram") epoch(0, false);  // fill the cache: the timed epoch is a later one
  for (auto& ns : times.ns) ns = 0;
  const auto t0 = Clock::now();
  epoch(1, true);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.images_per_s = static_cast<double>(o.samples) / r.seconds;
  for (auto& ns : times.ns) r.stage_s.push_back(static_cast<double>(ns.load()) / 1e9);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") o.data = next();
    else if (a == "--imgsz") o.imgsz = std::stoi(next());
    else if (a == "--batch") o.batch = std::stoi(next());
    else if (a == "--samples") o.samples = std::stoul(next());
    else if (a == "--threads") o.threads = std::stoi(next());
    else {
      std::cerr << "usage: yoloflow_bench_augment [--data data.yaml] [--imgsz 640] [--batch 32] "
                   "[--samples 128] [--threads N]\n";
      return 2;
    }
  }
  try {
    core::PluginManager pm;
    pm.load_all();
    std::printf("chain: yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate(batch %d)\n",
                o.batch);
    std::printf("data: %s, imgsz %d, %zu samples per timed epoch, %u hardware threads\n\n", o.data.c_str(),
                o.imgsz, o.samples, std::thread::hardware_concurrency());
    std::vector<Result> results;
    std::vector<int> thread_counts = {1};
    if (o.threads > 1) thread_counts.push_back(o.threads);
    for (int threads : thread_counts) {
      for (const char* cache : {"none", "ram"}) results.push_back(run(pm, o, threads, cache));
    }
    const double base = results[0].images_per_s;
    std::printf("%-26s %10s %9s %8s %8s\n", "configuration", "images/s", "seconds", "vs base", "boxes");
    for (const auto& r : results) {
      std::printf("%-26s %10.1f %9.2f %7.2fx %8lld\n", r.name.c_str(), r.images_per_s, r.seconds,
                  r.images_per_s / base, static_cast<long long>(r.boxes));
    }
    std::printf("\nwhere the time goes (thread-seconds per stage, share of the stage total):\n");
    std::printf("%-34s", "stage");
    for (const auto& r : results) std::printf(" %22s", r.name.c_str());
    std::printf("\n");
    for (int st = 0; st < kNumStages; ++st) {
      std::printf("%-34s", kStages[st]);
      for (const auto& r : results) {
        double total = 0;
        for (double v : r.stage_s) total += v;
        std::printf("   %8.3f s (%5.1f %%)", r.stage_s[st], total > 0 ? 100.0 * r.stage_s[st] / total : 0.0);
      }
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yoloflow_bench_augment: %s\n", e.what());
    return 1;
  }
  return 0;
}
