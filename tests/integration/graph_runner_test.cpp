// The flow-graph runner on the synthetic test plugin: every sample delivered, bounded
// in-flight samples under a slow sink, reproducible ordered runs, skipped loads, and
// failures that end the run with the stage's name instead of hanging.
#include <doctest/doctest.h>

#include <atomic>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <regex>
#include <thread>

#include <oneapi/tbb/info.h>

#include "runtime/graph/graph_runner.h"
#include "runtime/pipeline/pipeline.h"
#include "runtime/words/pipeline_loading.h"
#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "support/synthetic_pipeline.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using yoloflow::test::synthetic_pipeline;
using yoloflow::test::synthetic_plugins;

namespace {

core::Pipeline make(const std::string& text) {
  auto r = core::parse_pipeline(text, "/p", {}, synthetic_plugins().registry());
  INFO(core::format_diagnostics(r.diagnostics, ""));
  REQUIRE(r.ok());
  return *r.pipeline;
}

// Runs `fn` on its own thread; a hang fails the test loudly instead of blocking the suite.
void within(int seconds, const std::function<void()>& fn) {
  auto task = std::make_shared<std::packaged_task<void()>>(fn);
  auto done = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (done.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "graph test hung for %d s: aborting the test binary\n", seconds);
    std::_Exit(99);
  }
  done.get();  // rethrows the test's exception
}

long summary_value(const std::string& summary, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(summary, m, std::regex(key + "=([0-9a-f]+)"))) return -1;
  return std::stol(m[1].str());
}
std::string summary_text(const std::string& summary, const std::string& key) {
  std::smatch m;
  return std::regex_search(summary, m, std::regex(key + "=([0-9a-f]+)")) ? m[1].str() : "";
}

}  // namespace

TEST_CASE("every sample reaches the sink in batches, the last one partial, over epochs") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"epochs\": 2, \"workers\": 2", "\"count\": 22", "\"batch\": 4"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    CHECK(runner.workers() == 2);
    for (int e = 0; e < 2; ++e) {
      auto s = runner.run_epoch(e);
      CHECK(s.samples == 22);
      CHECK(s.batches == 6);  // 5 full batches of 4 and the partial one of 2
      CHECK(s.skipped.empty());
      CHECK_FALSE(s.interrupted);
      CHECK(s.max_in_flight == 3 * 4 + 2 * 2);  // automatic: 3*batch + 2*workers
      CHECK(s.peak_in_flight <= s.max_in_flight);
    }
    const auto summary = runner.sink().summary();
    CHECK(summary_value(summary, "samples") == 44);
    CHECK(summary_value(summary, "batches") == 12);
    CHECK(summary_value(summary, "epochs_begun") == 2);
    CHECK(summary_value(summary, "epochs_ended") == 2);
  });
}

TEST_CASE("the sink consumes every batch on the thread that runs the epoch, not on a worker") {
  // A sink that keeps per-thread state (CUDA streams, cuBLAS workspaces, captured graphs) sees
  // one thread; the workers never wait for a step. The sink is slow enough that, were it a
  // node on the workers, other threads would take some of its batches.
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 4", "\"count\": 48", "\"batch\": 2", "\"delay_ms\": 2"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    CHECK(runner.run_epoch(0).batches == 24);
    std::vector<core::PlannedBatch> plan{{{5, 1}, {}}, {{7}, {}}, {{2, 3}, {}}};
    CHECK(runner.run_planned(1, plan).batches == 3);
    const auto summary = runner.sink().summary();
    CHECK(summary_value(summary, "batches") == 27);
    CHECK(summary_value(summary, "other_thread_batches") == 0);
  });
}

TEST_CASE("a slow sink keeps the samples alive bounded by max_in_flight") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2, \"max_in_flight\": 6", "\"count\": 40",
                                     "\"batch\": 2", "\"delay_ms\": 15"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    auto s = runner.run_epoch(0);
    CHECK(s.samples == 40);
    CHECK(s.max_in_flight == 6);
    const long peak_alive = summary_value(runner.sink().summary(), "peak_alive");
    // The fast source would load all 40 at once without backpressure; the limit holds it at 6.
    CHECK(peak_alive >= 2);
    CHECK(peak_alive <= 6);
    CHECK(s.peak_in_flight <= 6);
  });
}

TEST_CASE("with automatic max_in_flight, a slow sink still bounds the samples alive") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2", "\"count\": 60", "\"batch\": 3",
                                     "\"delay_ms\": 5"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    auto s = runner.run_epoch(0);
    CHECK(s.samples == 60);
    CHECK(s.max_in_flight == 3 * 3 + 2 * 2);  // 3*batch + 2*workers
    CHECK(summary_value(runner.sink().summary(), "peak_alive") <= 13);
  });
}

TEST_CASE("max_in_flight smaller than a batch is refused instead of deadlocking") {
  within(30, [] {
    auto p = make(synthetic_pipeline("\"max_in_flight\": 3", "\"count\": 10", "\"batch\": 4"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    try {
      runner.run_epoch(0);
      FAIL("expected an error");
    } catch (const InvalidInput& e) {
      CHECK(std::string(e.what()).find("max_in_flight (3) is smaller than the batch size (4)") !=
            std::string::npos);
    }
  });
}

TEST_CASE("ordered runs with a seed give identical batches; another seed does not") {
  within(60, [] {
    auto digest = [](int seed) {
      auto p = make(synthetic_pipeline("\"workers\": 2, \"ordered\": true, \"seed\": " +
                                           std::to_string(seed) + ", \"epochs\": 2",
                                       "\"count\": 30, \"delay_us\": 300", "\"batch\": 4"));
      core::GraphRunner runner(p, synthetic_plugins().registry());
      runner.run_epoch(0);
      runner.run_epoch(1);
      return summary_text(runner.sink().summary(), "digest");
    };
    const auto a = digest(7), b = digest(7), c = digest(8);
    CHECK_FALSE(a.empty());
    CHECK(a == b);
    CHECK(a != c);
  });
}

TEST_CASE("a sample whose load fails is skipped, counted and named") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2", "\"count\": 12, \"fail\": [2, 5]", "\"batch\": 4"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    auto s = runner.run_epoch(0);
    CHECK(s.samples == 10);
    REQUIRE(s.skipped.size() == 2);
    CHECK(s.skipped[0].index == 2);
    CHECK(s.skipped[0].reason == "corrupt image synthetic/2.png");
    CHECK(s.skipped[1].index == 5);
    CHECK(runner.source().issues().size() == 2);
  });
}

TEST_CASE("an augmentation's exception ends the run naming stage, plugin, file and sample") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2", "\"count\": 50", "\"batch\": 4", "",
                                     "\"throw_on\": 3"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    try {
      runner.run_epoch(0);
      FAIL("expected an error");
    } catch (const Error& e) {
      const std::string what = e.what();
      CHECK(what == "stage 'mark' (augmentation 'synthetic_mark', " + test::synthetic_plugin() +
                        ") failed on sample 3 (synthetic/3.png): mark failed on purpose");
      CHECK(e.exit_code() == kExitFailure);
    }
  });
}

TEST_CASE("a sink's exception ends the run naming the stage and batch") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2, \"ordered\": true", "\"count\": 50",
                                     "\"batch\": 2", "\"throw_on_batch\": 2"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    try {
      runner.run_epoch(0);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()) == "stage 'sink' (sink 'synthetic_sink', " + test::synthetic_plugin() +
                                         ") failed on batch 2 of epoch 0: sink failed on purpose");
    }
  });
}

TEST_CASE("request_stop drains the running epoch and skips end_epoch") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2", "\"count\": 400", "\"batch\": 2",
                                     "\"delay_ms\": 10"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    std::thread stopper([&runner] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      runner.request_stop();
    });
    auto s = runner.run_epoch(0);
    stopper.join();
    CHECK(s.interrupted);
    CHECK(s.samples > 0);
    CHECK(s.samples < 400);
    const auto summary = runner.sink().summary();
    CHECK(summary_value(summary, "epochs_ended") == 0);
    // Drained: everything loaded reached the sink.
    CHECK(summary_value(summary, "samples") == static_cast<long>(s.samples));
  });
}

TEST_CASE("end_epoch_early drains the running epoch, ends it with end_epoch, and the next runs whole") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2, \"epochs\": 2", "\"count\": 100", "\"batch\": 2",
                                     "\"delay_ms\": 10"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    std::thread ender([&runner] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      runner.end_epoch_early();
    });
    auto s = runner.run_epoch(0);
    ender.join();
    CHECK_FALSE(s.interrupted);
    CHECK(s.ended_early);
    CHECK(s.samples > 0);
    CHECK(s.samples < 100);
    auto summary = runner.sink().summary();
    CHECK(summary_value(summary, "epochs_ended") == 1);  // a whole epoch, cut short
    CHECK(summary_value(summary, "samples") == static_cast<long>(s.samples));
    CHECK_FALSE(runner.stop_requested());  // the run goes on

    auto next = runner.run_epoch(1);
    CHECK_FALSE(next.ended_early);
    CHECK(next.samples == 100);
    summary = runner.sink().summary();
    CHECK(summary_value(summary, "epochs_ended") == 2);
  });
}

TEST_CASE("the driver's run control is what the runner obeys: its stop with the reason, its planned epochs") {
  within(60, [] {
    auto p = make(synthetic_pipeline("\"workers\": 2, \"epochs\": 3", "\"count\": 400", "\"batch\": 2",
                                     "\"delay_ms\": 10"));
    std::atomic<bool> signal_flag{false};
    core::RunControl control(p.epochs, &signal_flag);
    core::RunnerOptions options;
    options.control = &control;
    core::GraphRunner runner(p, synthetic_plugins().registry(), options);
    CHECK(&runner.control() == &control);
    CHECK(runner.context("sink", 0).epochs == 3);
    control.plan_epochs(5);  // a time budget's new plan reaches every stage's context
    CHECK(runner.context("sink", 0).epochs == 5);

    std::thread stopper([&control] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      control.request_stop("max_steps: 8 batches trained in this process");
    });
    const auto s = runner.run_epoch(0);
    stopper.join();
    CHECK(s.interrupted);
    CHECK(s.samples < 400);
    CHECK(runner.stop_requested());
    CHECK(runner.stop_reason() == "max_steps: 8 batches trained in this process");

    // A signal reaches it through the flag the control reads, without a reason.
    core::RunControl signalled(1, &signal_flag);
    CHECK_FALSE(signalled.stop_requested());
    signal_flag.store(true);
    CHECK(signalled.stop_requested());
    CHECK(signalled.stop_reason().empty());
  });
}

TEST_CASE("a scheduled parameter reconfigures its stage at the epoch boundary") {
  within(60, [] {
    // strength goes 0 -> 1 over the epochs; the mark writes strength*100 into each image,
    // so the two epochs' batches differ only through the reconfiguration.
    auto p = make(synthetic_pipeline("\"ordered\": true, \"epochs\": 2, \"shuffle\": false",
                                     "\"count\": 8", "\"batch\": 4", "",
                                     "\"strength\": {\"steps\": {\"0\": 0.0, \"1\": 1.0}}"));
    CHECK(p.stage_params("mark", 0)["strength"].get<double>() == 0.0);
    CHECK(p.stage_params("mark", 1)["strength"].get<double>() == 1.0);
    auto q = make(synthetic_pipeline("\"ordered\": true, \"epochs\": 2, \"shuffle\": false",
                                     "\"count\": 8", "\"batch\": 4", "", "\"strength\": 0.0"));
    core::GraphRunner a(p, synthetic_plugins().registry()), b(q, synthetic_plugins().registry());
    a.run_epoch(0);
    b.run_epoch(0);
    CHECK(summary_text(a.sink().summary(), "digest") == summary_text(b.sink().summary(), "digest"));
    a.run_epoch(1);
    b.run_epoch(1);
    CHECK(summary_text(a.sink().summary(), "digest") != summary_text(b.sink().summary(), "digest"));
  });
}

TEST_CASE("a planned epoch delivers its batches as given, each with its own stage parameters") {
  within(60, [] {
    const std::string top = "\"ordered\": true, \"workers\": 3";
    auto p = make(synthetic_pipeline(top, "\"count\": 10", "\"batch\": 4", "", "\"strength\": 0.0"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    // Three batches of 3, 1 and 4 samples in a chosen order: each reaches the sink as one batch,
    // the short ones too (the batcher is flushed after each).
    std::vector<core::PlannedBatch> plan{{{9, 2, 5}, {}}, {{0}, {}}, {{1, 3, 4, 8}, {}}};
    auto s = runner.run_planned(0, plan);
    CHECK(s.samples == 8);
    CHECK(s.batches == 3);
    CHECK_FALSE(s.interrupted);
    auto summary = runner.sink().summary();
    CHECK(summary_value(summary, "epochs_begun") == 1);
    CHECK(summary_value(summary, "epochs_ended") == 1);
    const std::string plain = summary_text(summary, "digest");

    // The same plan with the mark's strength set for the second batch only: other pixels in
    // that batch, so another digest; the same plan again gives the same digest.
    core::GraphRunner a(p, synthetic_plugins().registry()), b(p, synthetic_plugins().registry());
    std::vector<core::PlannedBatch> marked = plan;
    marked[1].stage_params["mark"] = {{"strength", 1.0}};
    a.run_planned(0, marked);
    b.run_planned(0, plan);
    CHECK(summary_text(a.sink().summary(), "digest") != plain);
    CHECK(summary_text(b.sink().summary(), "digest") == plain);

    // The next ordinary epoch has the pipeline's parameters back: a plan that ends by setting
    // the strength (an empty batch: no pixels) leaves the same bytes as one that does not, and
    // so does the epoch after it.
    core::GraphRunner c(p, synthetic_plugins().registry()), d(p, synthetic_plugins().registry());
    std::vector<core::PlannedBatch> ends_marked = plan;
    ends_marked.push_back({{}, {{"mark", {{"strength", 1.0}}}}});
    c.run_planned(0, ends_marked);
    d.run_planned(0, plan);
    c.run_epoch(1);
    d.run_epoch(1);
    CHECK(summary_text(c.sink().summary(), "digest") == summary_text(d.sink().summary(), "digest"));

    // A batch larger than the batcher's, or a sample the source does not have, is refused.
    CHECK_THROWS_WITH_AS(runner.run_planned(0, {{{0, 1, 2, 3, 4}, {}}}),
                         doctest::Contains("exceeds the batcher's batch of 4"), Error);
    CHECK_THROWS_WITH_AS(runner.run_planned(0, {{{10}, {}}}), doctest::Contains("sample 10 of a source of 10"), Error);
  });
}

TEST_CASE("workers beyond the machine's threads are capped at them, without oneTBB's warning") {
  const int cores = std::max(1, tbb::info::default_concurrency());
  within(60, [&] {
    auto p = make(synthetic_pipeline("\"workers\": 1000", "\"count\": 8", "\"batch\": 2"));
    core::GraphRunner runner(p, synthetic_plugins().registry());
    CHECK(runner.workers() == cores);
    CHECK(runner.run_epoch(0).batches == 4);
  });
  // Through the CLI: one line says so, and oneTBB prints nothing of its own.
  const std::string dir = test::temp_dir("workers-cap");
  const std::string pipeline = test::write_inspect_pipeline(dir, 1, "[]");
  const auto r = test::run_cli("run " + pipeline + " workers=1000");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("workers=1000: this machine runs " + std::to_string(cores) + " threads at once") != std::string::npos);
  CHECK(r.output.find("TBB Warning") == std::string::npos);
  test::remove_tree(dir);
}
