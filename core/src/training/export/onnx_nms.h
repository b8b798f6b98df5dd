#pragma once
// Non-maximum suppression appended to an exported graph (`yoloflow export --nms`), with the
// output Ultralytics' ONNX export with nms=True gives: (B, max_det, 6), rows x1, y1, x2, y2,
// confidence, class in input pixels, best first, zero rows after the last detection.
#include <cstdint>

#include "training/export/nms_settings.h"
#include "training/export/onnx_graph_builder.h"

namespace yoloflow::core {

// `pred`: (B, 4 + nc, A) as GraphBuilder::output describes. One class per anchor (its best),
// suppression within each class (ONNX NonMaxSuppression, which runs in float32).
GraphValue append_nms(OnnxGraphBuilder& g, const GraphValue& pred, std::int64_t nc, const NmsSettings& s);

}  // namespace yoloflow::core
