#include "cli/export_int8.h"

#include <iostream>

#include "training/export/int8_export.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_int8_options(CLI::App& cmd, Int8Request& r) {
  cmd.add_flag("--int8", r.on,
               "INT8 QDQ model: int8 convolutions (weights per output channel, activations per tensor) calibrated "
               "on --data's images; for TensorRT (trtexec --int8), ONNX Runtime, OpenVINO");
  cmd.add_option("--data", r.data, "data.yaml whose images calibrate --int8 (Ultralytics layout)");
  cmd.add_option("--split", r.split, "Split of --data to calibrate on")->check(CLI::IsMember({"train", "val", "test"}));
  cmd.add_option("--fraction", r.fraction, "Fraction of the split's images to calibrate on (the first ones)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_option("--calibration-images", r.images, "At most this many calibration images (default: all --fraction leaves)")
      ->check(CLI::Range(1, 1000000));
  cmd.add_option("--calibration", r.method,
                 "How activation ranges are set: minmax (the largest |x|; holds accuracy on detection heads), percentile "
                 "(99.99 % of |x|), entropy (least KL divergence)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd.add_option("--int8-float", r.keep_float,
                 "Convolutions kept in float32, by weight name or prefix (model.23. = the whole head); the DFL's "
                 "always is")
      ->delimiter(',');
  cmd.add_option("--calibration-batch", r.batch, "Images per calibration batch (memory, not results)")
      ->check(CLI::Range(1, 256));
}

void check_int8_request(const Int8Request& r) {
  const bool any = !r.data.empty() || r.fraction != 1.0 || r.images != 0 || r.split != "val" ||
                   r.method != "minmax" || !r.keep_float.empty();
  if (!r.on && any) throw InvalidInput("--data, --split, --fraction and --calibration* calibrate --int8; add --int8");
  if (r.on && r.data.empty()) {
    throw InvalidInput("--int8 needs --data DATA.yaml: the images its activation ranges are calibrated on");
  }
}

core::OnnxExportReport export_int8(CliContext& ctx, core::LoadedCheckpointModel& loaded,
                                   const core::OnnxExportOptions& options, const Int8Request& r, const std::string& out) {
  core::Int8Calibration c;
  c.data = r.data;
  c.split = r.split;
  c.fraction = r.fraction;
  c.images = static_cast<std::size_t>(r.images);
  c.method = core::parse_calibration_method(r.method, "--calibration");
  c.batch = r.batch;
  c.keep_float = r.keep_float;
  const auto rep = core::export_onnx_int8(ctx.plugins().registry(), *loaded.model, loaded.described, options, c, out);
  std::cout << "int8: " << rep.quantized << " convolutions quantized, " << rep.kept_float.size() << " kept in float (";
  for (std::size_t k = 0; k < rep.kept_float.size(); ++k) std::cout << (k ? ", " : "") << rep.kept_float[k];
  std::cout << "); activation ranges by " << r.method << " on " << rep.calibration_images << " images of " << r.data
            << " split '" << r.split << "'\n";
  return rep.file;
}

}  // namespace yoloflow::cli
