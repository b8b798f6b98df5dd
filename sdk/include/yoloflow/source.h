#pragma once
// Data source plugins: enumerate a dataset and load one sample at a time.
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "yoloflow/augmentation.h"
#include "yoloflow/component.h"
#include "yoloflow/sample.h"

namespace yoloflow {

// A problem found in the data and what was done about it. Sources never stop a run for
// bad data: they skip or fix, and say so here.
struct DataIssue {
  std::string path;     // the file concerned
  std::string problem;  // "image missing", "corrupt image", "bad label line 3: ..."
  std::string action;   // "skipped image", "dropped box", "clipped box", ...
};

struct DatasetInfo {
  std::string root;                 // dataset folder
  std::vector<std::string> names;   // class names, index = class id
  std::size_t images = 0;           // usable samples
  std::size_t boxes = 0;            // labelled boxes over usable samples
  std::size_t max_boxes = 0;        // boxes of the densest sample (0 = unknown)
};

// One sample's labels as its dataset states them (before any augmentation), read without its
// image: each instance's class and box, normalised to the image.
struct SampleLabels {
  std::vector<int> classes;
  std::vector<std::array<float, 4>> boxes;  // centre x, centre y, width, height in 0..1
};

// Reads samples. configure() scans the dataset (file lists, labels) and may be slow;
// load() decodes one image and is called concurrently from several threads.
class YOLOFLOW_SDK_API DataSource : public Component {
 public:
  ~DataSource() override;
  virtual std::size_t size() const = 0;
  // Thread-safe. Returns the image resized so its long side is the context's imgsz
  // (Sample::geometry records how), boxes in pixels of that image. Throws on a file that
  // cannot be read at load time; the host skips it, counts it and names it.
  virtual Sample load(std::size_t index) = 0;
  virtual DatasetInfo info() const = 0;
  // Every problem found so far (scan and loads), for the summary.
  virtual std::vector<DataIssue> issues() const = 0;
  // Sample `index`'s labels without decoding its image (labels.jpg, dataset statistics).
  // False where the source cannot tell them so (the default); then the host draws nothing.
  virtual bool labels(std::size_t index, SampleLabels& out) const;
  // Whether load() may give pixels shared with the source's own store (a RAM cache) instead of
  // a copy. The host sets it while nothing writes into a sample's pixels (the chain plans them:
  // AugmentContext::plan_pixels), before the epoch's loads. By default ignored.
  virtual void share_pixels(bool shared);
};

// A source's samples by index, as a SampleLoader: what the host hands an augmentation that
// loads other samples (mosaic, mixup) when nothing else is kept, and what a test hands one.
class SourceSamples final : public SampleLoader {
 public:
  explicit SourceSamples(DataSource& source) : source_(source) {}
  std::size_t size() const override { return source_.size(); }
  Sample load(std::size_t index) override { return source_.load(index); }

 private:
  DataSource& source_;
};

}  // namespace yoloflow
