// `multi_scale` on the train sink, run as a user would: each batch trains at its own size
// between half and 1.5x imgsz, the progress line says which, and the run completes.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <string>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "runtime/run/results_csv.h"

using namespace yoloflow;

TEST_CASE("train with multi_scale: batches at several sizes, multiples of 32 from 0.5x to 1.5x imgsz") {
  const auto dir = test::temp_dir("multi-scale");
  const auto data = test::write_coco128_subset(dir, 8);
  const auto run = dir + "/run";
  // imgsz 64: sizes 32, 64 or 96; 8 images, batch 2, 2 epochs = 8 steps, each reported.
  const auto r =
      test::train_coco128_cpu(data, run, "epochs=2 stages.train.params.log_every=1 stages.train.params.multi_scale=0.5");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::set<int> sizes;
  int reported = 0;
  const std::regex size_re("step [0-9]+/4 .* size ([0-9]+)");
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), size_re), end; it != end; ++it) {
    const int size = std::stoi((*it)[1]);
    CHECK(size % 32 == 0);
    CHECK(size >= 32);
    CHECK(size <= 96);
    sizes.insert(size);
    ++reported;
  }
  CHECK(reported == 8);
  CHECK(sizes.size() >= 2);
  core::ResultsCsv results(run + "/results.csv");
  results.load();
  CHECK(results.rows().size() == 2);

  // Out of range: the parameter's path and its range.
  const auto bad = test::run_cli("validate " + std::string(YOLOFLOW_SOURCE_DIR) + "/pipelines/train-coco128-cpu.json" +
                                 " stages.source.params.data=" + data + " stages.train.params.data=" + data +
                                 " stages.train.params.multi_scale=1.5");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("stages.train.params.multi_scale") != std::string::npos);
}
