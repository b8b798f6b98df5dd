#pragma once
// Testing a plugin as the host runs it, without the host: load the built plugin library, create
// its components from their schemas, and check them against the contract of their kind. For a
// plugin's own tests (any test framework; the checks return what they found wrong instead of
// asserting), and for the conformance test that runs every shipped component through it.
//
//   yoloflow::testing::PluginLibrary lib("build/yoloflow_grayscale.so");
//   auto aug = lib.make<yoloflow::Augmentation>("grayscale", {{"p", 1.0}});
//   auto problems = yoloflow::testing::augmentation_contract(*aug, samples, 320);
//
// Every kind has its contract. This header is LibTorch-free: source, augmentation, batcher,
// sink, monitor, scheduler and callback (hooks and JSON state). The kinds that exchange tensors
// (model, loss, optimizer, precision, and a callback's tensors) have theirs in
// yoloflow/testing_torch.h, header-only, compiled with the test's own LibTorch.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "yoloflow/augmentation.h"
#include "yoloflow/batcher.h"
#include "yoloflow/callback.h"
#include "yoloflow/component.h"
#include "yoloflow/fields.h"
#include "yoloflow/monitor.h"
#include "yoloflow/params.h"
#include "yoloflow/plugin.h"
#include "yoloflow/sample.h"
#include "yoloflow/scheduler.h"
#include "yoloflow/sink.h"
#include "yoloflow/source.h"

namespace yoloflow::testing {

// One plugin library, loaded for the whole process (never unloaded: objects it made may outlive
// any scope), its descriptor checked as the host checks it and its components registered.
class YOLOFLOW_SDK_API PluginLibrary final : public Registrar {
 public:
  // Throws yoloflow::Error when the file cannot be loaded, exports no descriptor, was built for
  // another SDK ABI (both versions in the message) or registers one name twice for a kind.
  explicit PluginLibrary(const std::string& path);
  ~PluginLibrary() override;
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const std::string& plugin_name() const { return plugin_name_; }
  const std::vector<ComponentInfo>& components() const { return components_; }
  // Throws yoloflow::Error naming what the library does register when it has no such component.
  const ComponentInfo& info(Kind kind, const std::string& name) const;

  // Creates `name` and configures it as the host does: `params` validated against its schema
  // (every problem in one InvalidInput, each with its JSON path under "params") and completed
  // with the defaults. T is the kind's interface (Augmentation, DataSource, ...).
  template <class T>
  std::unique_ptr<T> make(const std::string& name, const json& params = json::object(),
                          const StageContext& context = {}) {
    return std::unique_ptr<T>(static_cast<T*>(create(kind_of(static_cast<T*>(nullptr)), name, params, context)));
  }
  Component* create(Kind kind, const std::string& name, const json& params, const StageContext& context);

  void add(ComponentInfo info) override;

 private:
  static Kind kind_of(Augmentation*) { return Kind::Augmentation; }
  static Kind kind_of(DataSource*) { return Kind::Source; }
  static Kind kind_of(Batcher*) { return Kind::Batcher; }
  static Kind kind_of(Sink*) { return Kind::Sink; }
  static Kind kind_of(Model*) { return Kind::Model; }
  static Kind kind_of(Optimizer*) { return Kind::Optimizer; }
  static Kind kind_of(PrecisionStrategy*) { return Kind::Precision; }
  static Kind kind_of(Monitor*) { return Kind::Monitor; }
  static Kind kind_of(Scheduler*) { return Kind::Scheduler; }
  static Kind kind_of(Callback*) { return Kind::Callback; }
  static Kind kind_of(Loss*) { return Kind::Loss; }
  static Kind kind_of(Evaluator*) { return Kind::Evaluator; }
  std::string path_, plugin_name_;
  std::vector<ComponentInfo> components_;
};

// A SampleLoader over fixed samples (each load returns a copy that owns its pixels).
class YOLOFLOW_SDK_API SampleList final : public SampleLoader {
 public:
  explicit SampleList(std::vector<Sample> samples) : samples_(std::move(samples)) {}
  std::size_t size() const override { return samples_.size(); }
  Sample load(std::size_t index) override;

 private:
  std::vector<Sample> samples_;
};

// `sample` after `augmentation`, drawing from a generator seeded with `seed`, as the graph
// applies it (the loader and recent samples are what mosaic-like augmentations combine).
YOLOFLOW_SDK_API Sample augmented(Augmentation& augmentation, const Sample& sample, std::uint64_t seed, int imgsz,
                                  SampleLoader& loader, RecentSamples recent = {});
// The same with the host's removal of the fields the augmentation does not keep: `keeps` (its
// contract's, lib.info(Kind::Augmentation, name).contract.keeps; empty, as undeclared, keeps boxes
// only) decides what is left of `sample` and of every sample `loader` gives before it runs.
YOLOFLOW_SDK_API Sample augmented(Augmentation& augmentation, const Sample& sample, std::uint64_t seed, int imgsz,
                                  SampleLoader& loader, Fields keeps, RecentSamples recent = {});

// What an augmentation must do on every sample and seed (0..seeds-1), with `samples` as its
// other samples: leave an 8-bit 3-channel continuous image; keep every box inside its image
// with x1 <= x2 and y1 <= y2 and a class it had; give the same output for the same seed; and
// not change the loader's samples. Returns one line per problem found (empty: none).
// `keeps` is the augmentation's contract (ComponentInfo::contract.keeps, or what the kind's
// default is: boxes). The samples, loader's included, are given every kept field they lack,
// made from their boxes (a diamond touching the box's sides, resampled as a source resamples
// outlines; keypoints at the centre, a quarter from the left and a quarter from the right, in
// that order; the diamond filled as a mask; image class 7), and stripped of the others, as the
// host strips them; then every output must keep the fields in step (annotations.h
// instance_problem), each polygon's extent within 1 px of its box, visible keypoints inside
// their box with the left one still left of the right one (a left-right flip must reorder
// them: configure flip_idx [0, 2, 1]), masks inside their box and the image class unchanged
// ("inside": within 2 px, plus one step of the outline where the box comes from one, plus 2 px
// for masks, which move by whole pixels).
YOLOFLOW_SDK_API std::vector<std::string> augmentation_contract(Augmentation& augmentation,
                                                                const std::vector<Sample>& samples, int imgsz,
                                                                int seeds = 8, Fields keeps = Field::Boxes);

// `sample` given every field of `fields` it lacks, made from its boxes as augmentation_contract
// makes them, and stripped of the others.
YOLOFLOW_SDK_API Sample with_fields(const Sample& sample, Fields fields);

// What a source must do for its first `count` samples: a positive size, loads that give 8-bit
// 3-channel continuous images whose long side is at most imgsz, boxes inside the image,
// `index` equal to the index asked for, a path, the same sample when loaded twice, labels() (where
// it gives them) equal to the loaded classes and boxes normalised, and an out-of-range index
// refused with an exception. Returns one line per problem found.
YOLOFLOW_SDK_API std::vector<std::string> source_contract(DataSource& source, int imgsz, std::size_t count = 8);

// What a batcher must do with `samples` (all of one size): batches of batch_size() (the
// last may be partial, from flush()), pixels RGB in the batch layout, and every sample
// accounted for once, in order; target arrays (yoloflow/sample.h, namespace targets) with
// coordinates normalised to 0..1 by the batch's width and height: a boxes array, (N, 6), with
// one row per box, each [batch_idx, cls, cx, cy, w, h] of an instance of image batch_idx;
// when the batch's samples carry keypoints, a keypoints array, (N, K, 3), with one row per box,
// row i the keypoints of boxes row i's instance; when they carry image classes, an
// image_classes array, (B,), with each image's class (-1 where it has none).
YOLOFLOW_SDK_API std::vector<std::string> batcher_contract(Batcher& batcher, const std::vector<Sample>& samples);

// What a sink must do with `batches`, as the graph hands them over: two epochs of begin_epoch,
// consume (each batch a copy) and end_epoch, then a third stopped after its first batch by
// interrupted(), and summary(), without throwing, each on the calling thread. Returns one
// line per problem found.
YOLOFLOW_SDK_API std::vector<std::string> sink_contract(Sink& sink, const std::vector<Batch>& batches);

// What a monitor must do through a run of `epochs` epochs of `steps` steps, in the host's order
// (on_run_start, on_step..., epoch_summary, on_epoch, on_run_end; its files, if any, under
// `run_dir`): no exception, an epoch summary of one line, and quick: the run waits for it, so
// every call returns within `max_call_ms` milliseconds (file writes included). Returns one line
// per problem found.
YOLOFLOW_SDK_API std::vector<std::string> monitor_contract(Monitor& monitor, const std::string& run_dir,
                                                           int epochs = 2, int steps = 20, double max_call_ms = 50.0);

// What a scheduler must do: for runs of 1, 2, 10 and 300 epochs, a finite factor in (0, 100]
// for every epoch, the same factor when asked again (it holds no state). Returns one line per
// problem found.
YOLOFLOW_SDK_API std::vector<std::string> scheduler_contract(const Scheduler& scheduler);

// What a callback must do through a short run (`epochs` epochs of `steps` batches of `batch`,
// hooks in the trainer's order, the run's folder `run_dir` with its weights/ folder made): no
// exception; checkpoints asked for by a plain file name; and its state: state() after each
// epoch is JSON that `fresh` (another instance made with the same parameters) takes with
// load_state() and gives back unchanged from its own state(). The hooks with tensors are
// checked by callback_tensors_contract (yoloflow/testing_torch.h). Returns one line per problem.
YOLOFLOW_SDK_API std::vector<std::string> callback_contract(Callback& callback, Callback& fresh, const Batch& batch,
                                                            const std::string& run_dir, int epochs = 3, int steps = 4);

namespace detail {
// Runs `call`, adding "WHAT threw: ..." to `out` when it throws; true when it returned. The
// contracts check one call at a time this way, so that one failure is reported, not fatal.
template <class F>
bool returns(const std::string& what, std::vector<std::string>& out, F&& call) {
  try {
    call();
    return true;
  } catch (const std::exception& e) {
    out.push_back(what + " threw: " + e.what());
  } catch (...) {
    out.push_back(what + " threw something that is not a std::exception");
  }
  return false;
}
}  // namespace detail

// A control that records what hooks ask of the run (the contracts' and a plugin test's own).
class RecordingControl final : public TrainControl {
 public:
  void save_checkpoint(const std::string& file) override { saved.push_back(file); }
  void request_stop(const std::string& reason) override { stops.push_back(reason); }
  std::vector<std::string> saved, stops;
};

}  // namespace yoloflow::testing
