// Test plugin: `batch_probe`, a sink that writes every batch it receives as one JSON line (its
// index, height and width, each sample's source index and geometry, every target array as
// {"shape", "values"} under its name), so a test can check what a pipeline delivered without a
// model.
#include <fstream>

#include "yoloflow/error.h"
#include "yoloflow/plugin.h"
#include "yoloflow/sink.h"

namespace {

using namespace yoloflow;

class BatchProbe final : public Sink {
 public:
  void configure(const Params& p, const StageContext&) override { out_ = p.get_string("out"); }

  void consume(Batch& batch) override {
    json targets = json::object();
    for (const auto& [name, array] : batch.targets) targets[name] = {{"shape", array.shape}, {"values", array.values}};
    json line = {{"index", batch.index}, {"height", batch.height}, {"width", batch.width}, {"targets", targets}};
    json samples = json::array();
    for (const auto& s : batch.samples) {
      const Geometry& g = s.geometry;
      samples.push_back({{"index", s.index},
                         {"path", s.path},
                         {"original_width", g.original_width},
                         {"original_height", g.original_height},
                         {"ratio_x", g.ratio_x},
                         {"ratio_y", g.ratio_y},
                         {"pad_x", g.pad_x},
                         {"pad_y", g.pad_y}});
    }
    line["samples"] = samples;
    std::ofstream f(out_, std::ios::app);
    if (!(f << line.dump() << "\n")) throw Error("batch_probe: cannot write " + out_);
  }

 private:
  std::string out_;
};

void register_batch_probe(Registrar& r) {
  Schema s;
  s.add_string("out", "").doc("JSON-lines file each batch is appended to.");
  r.add_sink<BatchProbe>("batch_probe", std::move(s), "Writes each batch's shape, samples and targets (test plugin).");
}

}  // namespace

YOLOFLOW_PLUGIN("test_batch_probe", "1.0.0", register_batch_probe)
