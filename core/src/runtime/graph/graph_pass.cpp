#include "runtime/graph/graph_pass.h"

#include <oneapi/tbb/concurrent_queue.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>
#include <opencv2/core/utility.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <utility>

#include "runtime/graph/failure_text.h"
#include "runtime/graph/stage_sample_loaders.h"
#include "yoloflow/error.h"
#include "yoloflow/rng.h"

namespace yoloflow::core {
namespace {

namespace flow = tbb::flow;

// What travels between nodes. Messages are copied by the flow graph: keep them small.
struct Token {
  std::size_t index = 0;      // in the source
  std::uint64_t sequence = 0; // in this epoch's order
  std::uint64_t local = 0;    // in this process's share of it (= sequence for one process)
};
struct Item {
  std::shared_ptr<Sample> sample;  // null when skipped or abandoned
  std::uint64_t sequence = 0;
  std::uint64_t local = 0;
  std::size_t index = 0;
};
struct BatchMessage {
  std::shared_ptr<Batch> batch;
  long long samples = 0;  // released from the limiter once the sink is done with it
};


// The first failure of an epoch; later ones are consequences and are dropped.
class FirstError {
 public:
  void set(Error error) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = std::move(error);
    failed_.store(true);
  }
  bool failed() const { return failed_.load(); }
  void rethrow() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_) throw *error_;
  }

 private:
  std::mutex mutex_;
  std::atomic<bool> failed_{false};
  std::optional<Error> error_;
};

// One pass: samples loaded and augmented by the graph's workers (their own generator each),
// batched serially, and handed one batch at a time to the calling thread, where the sink
// consumes it; then the batcher's last partial batch.
class GraphPass {
 public:
  // `next_batch_index` numbers the batches across the passes of an epoch; `peak_in_flight` is
  // the most samples in flight so far, updated when the pass ends.
  GraphPass(const PassPlan& plan, PassStages& stages, EpochStats& stats, std::int64_t& next_batch_index,
            std::size_t& peak_in_flight)
      : plan_(plan), stages_(stages), stats_(stats), next_batch_index_(next_batch_index),
        peak_in_flight_(peak_in_flight), peak_(peak_in_flight),
        loaders_(stages.source, stages.chain, plan.epoch_seed, plan.imgsz, plan.epoch, &stages.recent_images,
                 stages.fields) {
    loaders_.share_decoded_pixels(stages.plan_pixels);
    loaders_.keep_source_images(stages.source_images, stages.source_images_key);
  }

  void run() {
    // The graph's workers are the data path's parallelism. OpenCV's own pool inside every
    // worker's warpAffine/resize/LUT would nest a second pool over the same cores and starve the
    // thread that launches GPU work (as Ultralytics' workers do with cv2.setNumThreads(0)).
    cv::setNumThreads(0);
    std::thread graph_thread([this] { run_graph(); });
    hand_over_batches();
    consumer_done_.set_value();
    graph_thread.join();
    peak_in_flight_ = peak_.load();
    error_.rethrow();
    consume_last_batch();
  }

 private:
  // The sink runs on the calling thread, never on a worker: a step is not delayed by a worker
  // that first finishes a sample, a worker is never taken for a step, and the sink sees one
  // thread (its CUDA stream, cuBLAS workspaces and captured graphs are per thread). The graph
  // hands each batch over through an async_node, which keeps the graph waiting until the
  // calling thread hands the batch's samples back to the limiter.
  using SinkNode = flow::async_node<BatchMessage, long long, flow::queueing>;
  using BatchNode = flow::multifunction_node<Item, std::tuple<BatchMessage, long long>>;
  struct Handoff {
    BatchMessage message;
    SinkNode::gateway_type* gateway = nullptr;  // null: the graph has finished
  };

  void fail(const std::string& message) { error_.set(Error(message)); }
  void release(long long n) { in_flight_.fetch_sub(static_cast<std::size_t>(n)); }

  // A worker's sample: loaded by the source, then through every augmentation. A sample the
  // source cannot load is skipped and counted; an augmentation's failure ends the pass.
  Item load(const Token& t) {
    const std::size_t now = in_flight_.fetch_add(1) + 1;
    for (std::size_t p = peak_.load(); now > p && !peak_.compare_exchange_weak(p, now);) {
    }
    Item item;
    item.sequence = t.sequence;
    item.local = t.local;
    item.index = t.index;
    if (error_.failed()) return item;  // draining after a failure: do no more work
    Sample sample;
    try {
      sample = loaders_.load_source(t.index);
    } catch (const std::exception& e) {
      skip(t.index, e.what());
      return item;
    } catch (...) {
      skip(t.index, "unknown exception");
      return item;
    }
    sample.sequence = t.sequence;
    // Each sample's own generator: results do not depend on which thread ran it.
    Rng rng(sample_seed(plan_.epoch_seed, t.sequence));
    try {
      const std::vector<std::size_t> recent =
          recent_indexes(plan_.whole_order, plan_.previous_order, t.sequence, plan_.recent_window, plan_.world_size);
      loaders_.apply(sample, rng, stages_.chain.size(), RecentSamples{recent.data(), recent.size()},
                     stages_.plan_pixels);
      item.sample = std::make_shared<Sample>(std::move(sample));
    } catch (const ChainStageError& e) {
      fail(stages_.label(1 + e.stage()) + " failed on " + sample_text(t.index, sample.path) + ": " + e.what());
    } catch (const std::exception& e) {
      // Nothing may escape a node: the graph would end while the calling thread holds a batch.
      fail("the data path failed on " + sample_text(t.index, sample.path) + ": " + e.what());
    } catch (...) {
      fail("the data path failed on " + sample_text(t.index, sample.path) + ": unknown exception");
    }
    return item;
  }

  void skip(std::size_t index, const std::string& why) {
    std::lock_guard<std::mutex> lock(skipped_mutex_);
    stats_.skipped.push_back({index, why});
  }

  // The serial batcher: a sample in, maybe a batch out to the sink, or the sample's place in
  // flight released when it brought no batch along (skipped, or after a failure).
  void batch(const Item& item, BatchNode::output_ports_type& ports) {
    if (!item.sample || error_.failed()) {
      release(1);
      std::get<1>(ports).try_put(1);
      return;
    }
    const std::string path = item.sample->path;
    std::optional<Batch> batch;
    try {
      batch = stages_.batcher.add(std::move(*item.sample));
    } catch (const std::exception& e) {
      fail(stages_.label(stages_.batcher_stage) + " failed on " + sample_text(item.index, path) + ": " + e.what());
    } catch (...) {
      fail(stages_.label(stages_.batcher_stage) + " failed on " + sample_text(item.index, path) + ": unknown exception");
    }
    if (error_.failed()) {
      release(1);
      std::get<1>(ports).try_put(1);
      return;
    }
    if (batch) {
      batch->epoch = plan_.epoch;
      batch->index = next_batch_index_++;
      const long long n = static_cast<long long>(batch->size);
      std::get<0>(ports).try_put(BatchMessage{std::make_shared<Batch>(std::move(*batch)), n});
    }
  }

  // The graph, on its own thread and task arena: input -> limiter -> workers -> (sequencer) ->
  // batcher -> sink hand-over, the limiter's count given back by the batcher and the sink.
  void run_graph() {
    try {
      tbb::task_arena arena(plan_.workers);
      arena.execute([&] {
        flow::graph g;
        std::size_t next = 0;  // in this rank's share (which starts at first_sequence); serial
        flow::input_node<Token> input(g, [&](tbb::flow_control& fc) -> Token {
          if (next >= plan_.order.size() || error_.failed() || stages_.stop_requested()) {
            fc.stop();
            return {};
          }
          Token t{plan_.order[next].index, plan_.order[next].sequence, next};
          ++next;
          return t;
        });
        flow::limiter_node<Token, long long> limiter(g, plan_.limit);
        flow::function_node<Token, Item> work(g, static_cast<std::size_t>(plan_.workers),
                                              [this](const Token& t) { return load(t); });
        // The serial batcher is the critical path: a thread that becomes free runs its waiting
        // work before another sample (a worker otherwise picks up the samples the limiter just
        // released first, and the next batch waits a sample's time for a thread).
        const flow::node_priority_t critical = 1;
        BatchNode batch_node(g, flow::serial,
                             [this](const Item& item, BatchNode::output_ports_type& ports) { batch(item, ports); },
                             critical);
        // Serial, so batches reach the queue in the batcher's order; critical, so a finished
        // batch is handed over before another sample starts. No plugin code runs here.
        SinkNode sink_node(g, flow::serial, [this](const BatchMessage& m, SinkNode::gateway_type& gateway) {
          gateway.reserve_wait();
          ready_.push(Handoff{m, &gateway});
        }, critical);

        flow::make_edge(input, limiter);
        flow::make_edge(limiter, work);
        std::optional<flow::sequencer_node<Item>> sequencer;
        if (plan_.ordered) {
          // The sequencer counts from 0: `local` is the position in this pass's share, which
          // starts at 0 in a resumed epoch too.
          sequencer.emplace(g, [](const Item& item) { return static_cast<std::size_t>(item.local); });
          flow::make_edge(work, *sequencer);
          flow::make_edge(*sequencer, batch_node);
        } else {
          flow::make_edge(work, batch_node);
        }
        flow::make_edge(flow::output_port<0>(batch_node), sink_node);
        flow::make_edge(flow::output_port<1>(batch_node), limiter.decrementer());
        flow::make_edge(sink_node, limiter.decrementer());

        input.activate();
        g.wait_for_all();
        // The calling thread may still be inside the gateway's last release_wait().
        ready_.push(Handoff{});
        consumer_finished_.wait();
      });
    } catch (const std::exception& e) {
      error_.set(Error(std::string("the data path's flow graph failed: ") + e.what()));
      ready_.push(Handoff{});
    } catch (...) {
      error_.set(Error("the data path's flow graph failed: unknown exception"));
      ready_.push(Handoff{});
    }
  }

  // On the calling thread: each batch the graph hands over goes to the sink, then its samples'
  // places back to the limiter, until the graph has finished.
  void hand_over_batches() {
    for (;;) {
      Handoff h;
      ready_.pop(h);
      if (h.gateway == nullptr) break;
      // After a stop request the batch in the sink finishes and no other starts: batches
      // already assembled are left for a resumed run, which loads their samples again.
      if (!error_.failed() && !stages_.stop_requested()) {
        try {
          stages_.consume(*h.message.batch);
        } catch (const Error& e) {
          error_.set(e);
        } catch (const std::exception& e) {
          // consume names the sink in an Error; only its own failure (out of memory while
          // writing that message) lands here. Nothing may leave the loop: the graph waits for it.
          error_.set(Error(e.what()));
        }
      }
      h.message.batch.reset();  // the pooled pixels go back before more samples are let in
      release(h.message.samples);
      h.gateway->try_put(h.message.samples);  // to the limiter's decrement port
      h.gateway->release_wait();
    }
  }

  // The pass's last, partial batch (the graph is idle: no other thread touches these).
  // After a stop it is dropped: a resumed run loads those samples again.
  void consume_last_batch() {
    std::optional<Batch> last;
    try {
      last = stages_.batcher.flush();
    } catch (const std::exception& e) {
      throw Error(stages_.label(stages_.batcher_stage) + " failed in flush at the end of epoch " +
                  std::to_string(plan_.epoch) + ": " + e.what());
    }
    if (last && last->size > 0 && !stages_.stop_requested()) {
      last->epoch = plan_.epoch;
      last->index = next_batch_index_++;
      stages_.consume(*last);
    }
  }

  const PassPlan& plan_;
  PassStages& stages_;
  EpochStats& stats_;
  std::int64_t& next_batch_index_;
  std::size_t& peak_in_flight_;
  FirstError error_;
  std::mutex skipped_mutex_;
  std::atomic<std::size_t> in_flight_{0}, peak_;
  StageSampleLoaders loaders_;
  tbb::concurrent_bounded_queue<Handoff> ready_;
  std::promise<void> consumer_done_;
  std::shared_future<void> consumer_finished_ = consumer_done_.get_future().share();
};

}  // namespace

void run_graph_pass(const PassPlan& plan, PassStages& stages, EpochStats& stats, std::int64_t& next_batch_index,
                    std::size_t& peak_in_flight) {
  GraphPass pass(plan, stages, stats, next_batch_index, peak_in_flight);
  pass.run();
}

}  // namespace yoloflow::core
