// Images/s of the default YOLO11 training chain on coco128:
//   yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate (batch 32)
// with 1 thread and with N threads, each with cache 'none' and 'ram', plus where the time goes
// per stage. The real plugins are loaded from the build's plugin folder.
// --fused instead times the default chain against the fused one,
//   yolo_dataset -> mosaic_perspective -> hsv -> flip -> collate,
// in the same run (1 thread and N threads, RAM cache): images/s, per core, against
// Ultralytics 8.4.56's loader measured on the same H200 machine, the targets (>= 240 img/s on
// one core, >= 2,500 on 16), and fused / default.
// --recent-vs-any times, without a cache, both chains with the mosaic's other images drawn
// among the recent samples (its default, Ultralytics' buffer: their decoded images are kept)
// against drawn among all (each decoded again), 1 thread and N threads, and recent / any.
// --planned times the instrumented pass of the fused chain with its pixels made (the CPU path)
// and planned (AugmentContext::plan_pixels: the CPU decodes, draws and moves the boxes; collate
// packs the parts of the images the plans read; the training device composes them, not timed
// here), cache none and ram, 1 thread and N threads: the data path's CPU cost per image with
// augment_on device, and planned / made.
// --decode-reduced times, without a cache, the fused chain with yolo_dataset's decode_reduced
// off and on (large JPEGs decoded at 1/2, 1/4 or 1/8 inside libjpeg), and reduced / full: use a
// dataset of photos larger than twice imgsz.
//
// Images/s come from the graph runner itself, as `yoloflow run`/`train` executes the data path
// (workers = threads, collate on its serial node overlapping the workers, ordered batches, the
// `throughput` sink consuming them), over whole epochs of coco128 (--samples is rounded up to
// whole epochs). The stage table comes from a separate, instrumented pass (each batch's
// samples in parallel, then collate) with a clock around every stage of every sample.
//
//   yoloflow_bench_augment [--data PATH/data.yaml] [--imgsz 640] [--batch 32]
//                          [--samples 128] [--threads N] [--fused | --recent-vs-any | --decode-reduced | --planned]
//                          [--repeat 1]
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

#include <opencv2/core/utility.hpp>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "bench_components.h"
#include "runtime/graph/graph_runner.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "training/builtin_components.h"
#include "runtime/plugin/plugin_manager.h"
#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/error.h"
#include "yoloflow/source.h"

using namespace yoloflow;
using Clock = std::chrono::steady_clock;
using bench::make;

namespace {

// The augmentations of each chain, between the source and collate.
const std::vector<std::string> kDefaultChain = {"mosaic", "random_perspective", "hsv", "flip"};
const std::vector<std::string> kFusedChain = {"mosaic_perspective", "hsv", "flip"};

// Stage rows: source, extra loads, one per augmentation (own work), collate.
std::vector<std::string> stage_names(const std::vector<std::string>& chain) {
  std::vector<std::string> names = {"decode+resize (source)", "decode+resize (" + chain[0] + "'s 3 extra)"};
  for (const auto& a : chain) names.push_back(a + (a == chain[0] ? " (own work)" : ""));
  names.push_back("collate (wall: a batch's copies run in parallel)");
  return names;
}
constexpr int kNumStages = 8;  // the longest chain's rows

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

struct Options {
  std::string data = std::string(YOLOFLOW_SHARED_DIR) + "/datasets/coco128/data.yaml";
  int imgsz = 640, batch = 32;
  std::size_t samples = 128;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool fused = false;
  bool recent_vs_any = false;
  bool decode_reduced = false;  // --decode-reduced: JPEG decodes at reduced scale against full ones
  bool planned = false;         // --planned: the fused chain's pixels made against planned
  int repeat = 1;  // timed epochs per configuration (--fused): the best is kept
};

struct Result {
  std::string name;
  std::vector<std::string> chain;
  double seconds = 0, images_per_s = 0;
  std::int64_t batches = 0, boxes = 0;
  std::vector<double> stage_s;
};

Result run(core::PluginManager& pm, const Options& o, int threads, const std::string& cache,
           const std::vector<std::string>& augs = kDefaultChain, int repeat = 1, bool planned = false) {
  json src_params = {{"data", o.data}, {"shrink_interpolation", "linear"}, {"cache", cache}};
  auto source = make<DataSource>(pm, Kind::Source, "yolo_dataset", src_params, o.imgsz);
  source->share_pixels(planned);  // as the graph runner sets it while the chain plans
  std::vector<std::unique_ptr<Augmentation>> chain;
  for (const auto& n : augs) chain.push_back(make<Augmentation>(pm, Kind::Augmentation, n, json::object(), o.imgsz));
  const int collate_row = static_cast<int>(augs.size()) + 2;
  auto collate = make<Batcher>(pm, Kind::Batcher, "collate", {{"batch", o.batch}}, o.imgsz);
  StageTimes times;
  TimedLoader loader(*source, times);
  // As in the graph runner: the arena's threads are the parallelism, OpenCV's pool is off.
  cv::setNumThreads(0);
  tbb::task_arena arena(threads);
  Result r;
  r.name = std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + ", cache " + cache +
           (planned ? ", planned" : "");
  r.chain = augs;

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
            ctx.plan_pixels = planned;
            auto t0 = Clock::now();
            Sample s = source->load(index);
            auto t1 = Clock::now();
            if (timed) times.add(0, t1 - t0);
            for (std::size_t a = 0; a < chain.size(); ++a) {
              t_nested_load_ns = 0;
              t0 = Clock::now();
              chain[a]->apply(s, ctx);
              t1 = Clock::now();
              if (timed) times.add(2 + static_cast<int>(a), (t1 - t0) - std::chrono::nanoseconds(t_nested_load_ns));
            }
            out[k - start] = std::move(s);
          }
        });
      });
      // In the arena: collate copies a complete batch's images with this configuration's threads.
      const auto t0 = Clock::now();
      arena.execute([&] {
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
      });
      if (timed) times.add(collate_row, Clock::now() - t0);
    }
  };

  if (cache == "ram") epoch(0, false);  // fill the cache: the timed epoch is a later one
  // With repeat > 1, the fastest of `repeat` timed epochs (the same epoch each time, so the
  // same work): the least disturbed by other processes.
  Result best = r;
  for (int rep = 0; rep < std::max(1, repeat); ++rep) {
    for (auto& ns : times.ns) ns = 0;
    r.batches = r.boxes = 0;
    const auto t0 = Clock::now();
    epoch(1, true);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.images_per_s = static_cast<double>(o.samples) / r.seconds;
    r.stage_s.clear();
    for (int st = 0; st <= collate_row; ++st) r.stage_s.push_back(static_cast<double>(times.ns[st].load()) / 1e9);
    if (rep == 0 || r.seconds < best.seconds) best = r;
  }
  return best;
}

// The pipeline `yoloflow run` would execute: the source, `augs`, collate and the throughput
// sink, `threads` graph workers, ordered batches as the shipped training pipelines have.
// `others`: the mosaic's "others" parameter ("" leaves its default).
std::string pipeline_text(const Options& o, int threads, const std::string& cache,
                          const std::vector<std::string>& augs, const std::string& others, bool decode_reduced) {
  json stages = json::object();
  stages["source"] = {{"plugin", "yolo_dataset"},
                      {"params", {{"data", o.data}, {"shrink_interpolation", "linear"}, {"cache", cache},
                                  {"decode_reduced", decode_reduced}}}};
  std::string input = "source";
  for (const auto& a : augs) {
    stages[a] = {{"plugin", a}, {"input", input}};
    if (!others.empty() && a == augs.front()) stages[a]["params"] = {{"others", others}};
    input = a;
  }
  stages["batch"] = {{"plugin", "collate"}, {"input", input}, {"params", {{"batch", o.batch}}}};
  stages["count"] = {{"plugin", "throughput"}, {"input", "batch"}};
  const json p = {{"name", "augment-bench"}, {"epochs", 1000}, {"imgsz", o.imgsz}, {"seed", 0},
                  {"workers", threads}, {"ordered", true}, {"stages", stages}};
  return p.dump();
}

// Images/s of the graph runner over whole epochs (at least o.samples images); with `repeat`,
// the fastest of `repeat` such measurements. With the RAM cache, epoch 0 fills it untimed.
Result run_graph(core::PluginManager& pm, const Options& o, int threads, const std::string& cache,
                 const std::vector<std::string>& augs, int repeat, const std::string& others = "",
                 bool decode_reduced = false) {
  auto loaded = core::parse_pipeline(pipeline_text(o, threads, cache, augs, others, decode_reduced), ".", {}, pm.registry());
  if (!loaded.ok()) throw Error("bench pipeline: " + core::format_diagnostics(loaded.diagnostics, ""));
  const core::Pipeline pipeline = *loaded.pipeline;
  core::GraphRunner runner(pipeline, pm.registry());
  Result r;
  r.name = std::to_string(threads) + " thread" + (threads > 1 ? "s" : "") + ", cache " + cache;
  r.chain = augs;
  int epoch = 0;
  if (cache == "ram") runner.run_epoch(epoch++);
  for (int rep = 0; rep < std::max(1, repeat); ++rep) {
    std::size_t images = 0;
    const auto t0 = Clock::now();
    while (images < o.samples) {
      const auto stats = runner.run_epoch(epoch++);
      if (stats.samples == 0) throw Error("bench pipeline: an epoch delivered no samples");
      images += stats.samples;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    const double rate = static_cast<double>(images) / seconds;
    if (rep == 0 || rate > r.images_per_s) {
      r.seconds = seconds;
      r.images_per_s = rate;
    }
  }
  return r;
}

// Ultralytics 8.4.56's loader alone on the H200 machine (default augmentations, 640, RAM cache,
// batch 32) by worker count, and the targets; 0 where none was given.
double ultralytics_images_per_s(int workers) {
  switch (workers) {
    case 1: return 78;
    case 4: return 275;
    case 8: return 646;
    case 16: return 716;
    default: return 0;
  }
}
double issue5_target(int threads) { return threads == 1 ? 240 : threads == 16 ? 2500 : 0; }

std::string ratio_text(double value, double against) {
  if (against <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", value / against);
  return buf;
}

// Thread-seconds per stage, one column per configuration (all of one chain).
void print_stage_table(const std::vector<Result>& results) {
  const auto names = stage_names(results[0].chain);
  std::printf("\nwhere the time goes, %s chain (instrumented pass; thread-seconds per stage, share of the stage total):\n",
              results[0].chain[0] == "mosaic" ? "default" : results[0].chain[0].c_str());
  std::printf("%-46s", "stage");
  for (const auto& r : results) std::printf(" %22s", r.name.c_str());
  std::printf("\n");
  for (std::size_t st = 0; st < names.size(); ++st) {
    std::printf("%-46s", names[st].c_str());
    for (const auto& r : results) {
      double total = 0;
      for (double v : r.stage_s) total += v;
      std::printf("   %8.3f s (%5.1f %%)", r.stage_s[st], total > 0 ? 100.0 * r.stage_s[st] / total : 0.0);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  yoloflow::core::use_builtin_components();
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
    else if (a == "--fused") o.fused = true;
    else if (a == "--recent-vs-any") o.recent_vs_any = true;
    else if (a == "--decode-reduced") o.decode_reduced = true;
    else if (a == "--planned") o.planned = true;
    else if (a == "--repeat") o.repeat = std::stoi(next());
    else {
      std::cerr << "usage: yoloflow_bench_augment [--data data.yaml] [--imgsz 640] [--batch 32] "
                   "[--samples 128] [--threads N] [--fused | --recent-vs-any | --decode-reduced | --planned] [--repeat 1]\n";
      return 2;
    }
  }
  try {
    core::PluginManager pm;
    pm.load_all();
    std::vector<int> thread_counts = {1};
    if (o.threads > 1) thread_counts.push_back(o.threads);
    std::printf("data: %s, imgsz %d, batch %d, %zu samples per timed epoch, %u hardware threads\n",
                o.data.c_str(), o.imgsz, o.batch, o.samples, std::thread::hardware_concurrency());
    std::vector<Result> results;
    // The rate table is printed as it is measured and again at the very end: the instrumented
    // pass logs each dataset's warnings again, which would push it out of a `tail`.
    std::string rate_table;
    auto rate_line = [&rate_table](const char* format, auto... args) {
      char line[256];
      std::snprintf(line, sizeof line, format, args...);
      std::fputs(line, stdout);
      std::fflush(stdout);
      rate_table += line;
    };
    if (o.decode_reduced) {
      std::printf("fused: yolo_dataset -> mosaic_perspective -> hsv -> flip -> collate, cache none; yolo_dataset's "
                  "decode_reduced off (every JPEG decoded in full) and on (large JPEGs decoded at 1/2, 1/4 or 1/8 "
                  "in libjpeg); images/s: the graph runner, whole epochs, >= %zu images, best of %d\n\n",
                  o.samples, o.repeat);
      rate_line("%-8s %14s %14s %16s %12s\n", "threads", "full img/s", "reduced img/s", "reduced per core",
                "reduced / full");
      for (int threads : thread_counts) {
        const Result full = run_graph(pm, o, threads, "none", kFusedChain, o.repeat, "", false);
        const Result reduced = run_graph(pm, o, threads, "none", kFusedChain, o.repeat, "", true);
        rate_line("%-8d %14.1f %14.1f %16.1f %12s\n", threads, full.images_per_s, reduced.images_per_s,
                  reduced.images_per_s / threads, ratio_text(reduced.images_per_s, full.images_per_s).c_str());
      }
      std::printf("\nimages/s (as above):\n%s", rate_table.c_str());
      return 0;
    }
    if (o.planned) {
      std::printf("fused: yolo_dataset -> mosaic_perspective -> hsv -> flip -> collate, pixels made (the CPU "
                  "path) or planned (augment_on device; composing them is the device's, not timed); the instrumented "
                  "pass (each batch's samples in parallel, then collate; the mosaic's other images decoded again), "
                  "best of %d\n\n",
                  o.repeat);
      rate_line("%-8s %-6s %12s %14s %16s %16s\n", "threads", "cache", "made img/s", "planned img/s",
                "planned per core", "planned / made");
      std::vector<Result> tables;
      for (int threads : thread_counts) {
        for (const char* cache : {"none", "ram"}) {
          const Result made = run(pm, o, threads, cache, kFusedChain, o.repeat, false);
          const Result planned = run(pm, o, threads, cache, kFusedChain, o.repeat, true);
          rate_line("%-8d %-6s %12.1f %14.1f %16.1f %16s\n", threads, cache, made.images_per_s, planned.images_per_s,
                    planned.images_per_s / threads, ratio_text(planned.images_per_s, made.images_per_s).c_str());
          tables.push_back(made);
          tables.push_back(planned);
        }
      }
      print_stage_table(tables);
      std::printf("\nimages/s (as above):\n%s", rate_table.c_str());
      return 0;
    }
    if (o.recent_vs_any) {
      std::printf("default: yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate\n"
                  "fused:   yolo_dataset -> mosaic_perspective -> hsv -> flip -> collate\n"
                  "cache none; the mosaic's other images among the recent samples (kept decoded) or "
                  "among all (decoded again); images/s: the graph runner, whole epochs, >= %zu images, "
                  "best of %d\n\n",
                  o.samples, o.repeat);
      rate_line("%-8s %-8s %12s %12s %16s %14s\n", "chain", "threads", "recent img/s", "any img/s",
                "recent per core", "recent / any");
      for (int threads : thread_counts) {
        for (const auto* chain : {&kDefaultChain, &kFusedChain}) {
          const Result recent = run_graph(pm, o, threads, "none", *chain, o.repeat, "recent");
          const Result any = run_graph(pm, o, threads, "none", *chain, o.repeat, "any");
          rate_line("%-8s %-8d %12.1f %12.1f %16.1f %14s\n", chain == &kDefaultChain ? "default" : "fused", threads,
                    recent.images_per_s, any.images_per_s, recent.images_per_s / threads,
                    ratio_text(recent.images_per_s, any.images_per_s).c_str());
        }
      }
      std::printf("\nimages/s (as above):\n%s", rate_table.c_str());
      return 0;
    }
    if (o.fused) {
      std::printf("default: yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate\n"
                  "fused:   yolo_dataset -> mosaic_perspective -> hsv -> flip -> collate\n"
                  "cache ram; images/s: the graph runner (workers = threads, collate overlapping them), "
                  "whole epochs, >= %zu images, best of %d\n"
                  "Ultralytics: its loader alone, 1/4/8/16 workers = 78/275/646/716 img/s; target: "
                  ">= 240 img/s on 1 core, >= 2,500 on 16\n\n",
                  o.samples, o.repeat);
      rate_line("%-8s %-8s %10s %14s %14s %12s %12s\n", "chain", "threads", "images/s", "img/s per core",
                "vs Ultralytics", "vs target", "vs default");
      for (int threads : thread_counts) {
        const Result d = run_graph(pm, o, threads, "ram", kDefaultChain, o.repeat);
        const Result f = run_graph(pm, o, threads, "ram", kFusedChain, o.repeat);
        for (const Result* r : {&d, &f}) {
          rate_line("%-8s %-8d %10.1f %14.1f %14s %12s %12s\n", r == &d ? "default" : "fused", threads,
                    r->images_per_s, r->images_per_s / threads,
                    ratio_text(r->images_per_s, ultralytics_images_per_s(threads)).c_str(),
                    ratio_text(r->images_per_s, issue5_target(threads)).c_str(),
                    ratio_text(r->images_per_s, d.images_per_s).c_str());
        }
      }
      for (int threads : thread_counts) {
        results.push_back(run(pm, o, threads, "ram", kDefaultChain, o.repeat));
        results.push_back(run(pm, o, threads, "ram", kFusedChain, o.repeat));
      }
    } else {
      std::printf("chain: yolo_dataset -> mosaic -> random_perspective -> hsv -> flip -> collate\n"
                  "images/s: the graph runner (workers = threads, collate overlapping them), whole epochs\n\n");
      std::vector<Result> rates;
      for (int threads : thread_counts) {
        for (const char* cache : {"none", "ram"}) {
          rates.push_back(run_graph(pm, o, threads, cache, kDefaultChain, 1));
          results.push_back(run(pm, o, threads, cache));
        }
      }
      const double base = rates[0].images_per_s;
      rate_line("%-26s %10s %9s %8s %8s\n", "configuration", "images/s", "seconds", "vs base", "boxes");
      for (std::size_t i = 0; i < rates.size(); ++i) {
        rate_line("%-26s %10.1f %9.2f %7.2fx %8lld\n", rates[i].name.c_str(), rates[i].images_per_s, rates[i].seconds,
                  rates[i].images_per_s / base, static_cast<long long>(results[i].boxes));
      }
    }
    for (const auto* chain : {&kDefaultChain, &kFusedChain}) {
      std::vector<Result> of_chain;
      for (const auto& r : results) {
        if (r.chain == *chain) of_chain.push_back(r);
      }
      if (!of_chain.empty()) print_stage_table(of_chain);
    }
    std::printf("\nimages/s (as above):\n%s", rate_table.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "yoloflow_bench_augment: %s\n", e.what());
    return 1;
  }
  return 0;
}
