#pragma once
// `yoloflow export --int8 --data D.yaml`: the options of int8 calibration and the export that
// uses them (training/export/int8_export.h), with what the command prints about them.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/cli.h"
#include "training/checkpoint/checkpoint_model.h"
#include "training/export/onnx_export.h"

namespace yoloflow::cli {

struct Int8Request {
  bool on = false;
  std::string data, split = "val", method = "minmax";
  double fraction = 1.0;
  int images = 0;  // 0: every image --fraction leaves
  int batch = 8;
  std::vector<std::string> keep_float;  // weight-name prefixes of convolutions kept in float
};

void add_int8_options(CLI::App& cmd, Int8Request& r);
// Refuses calibration options given without --int8, and --int8 without --data.
void check_int8_request(const Int8Request& r);
// Calibrates, quantizes and writes `out`; prints the calibration's summary.
core::OnnxExportReport export_int8(CliContext& ctx, core::LoadedCheckpointModel& loaded,
                                   const core::OnnxExportOptions& options, const Int8Request& r, const std::string& out);

}  // namespace yoloflow::cli
