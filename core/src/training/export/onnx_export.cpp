// Builds the ONNX model around the plugin's graph: input and output declarations, optional
// NMS, metadata, checker and shape inference, then one atomic write.
#include "training/export/onnx_export.h"
#include "training/export/onnx_model_build.h"

#include <chrono>
#include <ctime>
#include <sstream>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "training/export/head_outputs.h"
#include "training/export/onnx_graph_builder.h"
#include "training/export/onnx_nms.h"
#include "runtime/util/atomic_file.h"
#include "yoloflow/error.h"
#include "yoloflow/version.h"

namespace yoloflow::core {

namespace {

std::string iso_now() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

void add_meta(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

void set_output(onnx::GraphProto& graph, const std::string& name, int elem_type,
                const std::vector<std::pair<std::string, std::int64_t>>& dims) {
  auto* out = graph.add_output();
  out->set_name(name);
  auto* t = out->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  for (const auto& [symbol, value] : dims) {
    auto* d = t->mutable_shape()->add_dim();
    if (symbol.empty()) {
      d->set_dim_value(value);
    } else {
      d->set_dim_param(symbol);
    }
  }
}

}  // namespace

std::string python_repr(const std::string& s) {
  // Python prefers single quotes and switches to double ones when only those avoid escapes.
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  for (const char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  return out + q;
}

onnx::ModelProto build_onnx_model(Model& model, const OnnxExportOptions& o, std::vector<std::int64_t>* output_shape) {
  if (o.opset < kMinOnnxOpset || o.opset > kMaxOnnxOpset) {
    throw InvalidInput("--opset " + std::to_string(o.opset) + " is not supported: use " +
                       std::to_string(kMinOnnxOpset) + " to " + std::to_string(kMaxOnnxOpset));
  }
  if (o.batch < 1) throw InvalidInput("--batch must be at least 1, got " + std::to_string(o.batch));
  const auto head = model.head();
  const std::int64_t stride = head.strides.empty() ? 32 : head.strides.back();
  if (o.height <= 0 || o.width <= 0 || o.height % stride != 0 || o.width % stride != 0) {
    throw InvalidInput("image size " + std::to_string(o.height) + "x" + std::to_string(o.width) +
                       " is not a positive multiple of the model's largest stride " + std::to_string(stride));
  }
  if (!o.names.empty() && static_cast<int>(o.names.size()) != head.nc) {
    throw InvalidInput("export: " + std::to_string(o.names.size()) + " class names for a model with " +
                       std::to_string(head.nc) + " classes");
  }

  onnx::ModelProto m;
  m.set_ir_version(8);  // opsets up to 17 (ONNX 1.12..1.14)
  m.set_producer_name("yoloflow");
  m.set_producer_version(YOLOFLOW_VERSION_STRING);
  m.set_model_version(1);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(o.opset);
  auto* graph = m.mutable_graph();
  graph->set_name(model.architecture());

  GraphExportSpec spec;
  spec.batch = o.batch;
  spec.height = o.height;
  spec.width = o.width;
  spec.dynamic = o.dynamic;
  OnnxGraphBuilder g(spec, o.half, graph);
  {
    torch::NoGradGuard no_grad;
    model.module().eval();
    g.input();
    model.export_graph(g);
  }
  if (g.model_output().empty()) throw Error("export: the model wrote no output into the graph");

  std::int64_t anchors = 0;
  for (const auto s : head.strides) anchors += (o.height / s) * (o.width / s);
  // The head's per-anchor outputs follow the class probabilities in output0; its per-image ones
  // are the graph's next outputs, in the head's order.
  const std::int64_t extra_channels = per_anchor_channels(head);
  const std::vector<std::string> image_outputs = per_image_outputs(head);
  const auto& marked = g.image_outputs();
  std::vector<std::string> marked_names;
  for (const auto& m : marked) marked_names.push_back(m.first);
  if (marked_names != image_outputs) {
    auto joined = [](const std::vector<std::string>& names) {
      std::string out;
      for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
      return out;
    };
    throw Error("export: " + model.architecture() + " marks the graph outputs [" + joined(marked_names) +
                "] where its head declares the per-image outputs [" + joined(image_outputs) + "]");
  }
  if (o.nms && (extra_channels > 0 || !image_outputs.empty())) {
    throw InvalidInput("--nms exports a detection model's boxes only; " + model.architecture() + " (task " + head.task +
                       ") has more outputs: export it without --nms (its NMS runs where the file is read: yoloflow "
                       "val and predict, or Ultralytics' AutoBackend)");
  }
  GraphValue out = g.model_output();
  std::vector<std::pair<std::string, std::int64_t>> dims;
  const std::pair<std::string, std::int64_t> batch_dim = o.dynamic ? std::make_pair(std::string("batch"), std::int64_t{0})
                                                                   : std::make_pair(std::string(), o.batch);
  if (o.nms) {
    out = append_nms(g, out, head.nc, o.nms_settings);
    dims = {batch_dim, {"", o.nms_settings.max_det}, {"", 6}};
  } else {
    dims = {batch_dim, {"", 4 + head.nc + extra_channels},
            o.dynamic ? std::make_pair(std::string("anchors"), std::int64_t{0}) : std::make_pair(std::string(), anchors)};
  }
  g.rename(out, "output0");
  set_output(*graph, "output0", g.float_type(), dims);
  if (!marked.empty()) {
    // Their sizes as the model's own forward gives them at this input (one image).
    ModelOutput sample;
    {
      torch::NoGradGuard no_grad;
      const auto param = model.module().parameters();
      const auto device = param.empty() ? torch::Device(torch::kCPU) : param.front().device();
      sample = model.forward_train(torch::zeros({1, 3, o.height, o.width}, torch::TensorOptions().device(device)));
    }
    for (std::size_t k = 0; k < marked.size(); ++k) {
      const auto& [name, value] = marked[k];
      const auto it = sample.extras.find(name);
      if (it == sample.extras.end() || it->second.dim() < 2) {
        throw Error("export: " + model.architecture() + "'s forward gives no per-image output '" + name + "'");
      }
      const std::string graph_name = "output" + std::to_string(k + 1);
      // Ultralytics' symbolic names for a segmentation model's prototypes.
      const std::string symbol = name == "prototypes" ? "mask" : name;
      std::vector<std::pair<std::string, std::int64_t>> d{batch_dim};
      for (std::int64_t a = 1; a < it->second.dim(); ++a) {
        const bool spatial = a >= 2;
        const std::string axis = a == 2 ? "_height" : a == 3 ? "_width" : "_" + std::to_string(a);
        d.emplace_back(o.dynamic && spatial ? symbol + axis : std::string(), it->second.size(a));
      }
      g.rename(value, graph_name);
      set_output(*graph, graph_name, g.float_type(), d);
    }
  }

  // Metadata as Ultralytics writes it: str() of Python values, so its readers can eval them.
  std::ostringstream names;
  names << "{";
  for (int i = 0; i < head.nc; ++i) {
    const std::string n = o.names.empty() ? std::to_string(i) : o.names[static_cast<std::size_t>(i)];
    names << (i ? ", " : "") << i << ": " << python_repr(n);
  }
  names << "}";
  const std::string imgsz = "[" + std::to_string(o.height) + ", " + std::to_string(o.width) + "]";
  add_meta(m, "description", "yoloflow " + model.architecture() + " model" +
                                 (o.description.empty() ? "" : " from " + o.description));
  add_meta(m, "author", "yoloflow");
  add_meta(m, "date", iso_now());
  add_meta(m, "version", YOLOFLOW_VERSION_STRING);
  add_meta(m, "stride", std::to_string(stride));
  add_meta(m, "task", head.task.empty() ? "detect" : head.task);
  add_meta(m, "batch", std::to_string(o.batch));
  add_meta(m, "imgsz", imgsz);
  add_meta(m, "names", names.str());
  add_meta(m, "args", "{'batch': " + std::to_string(o.batch) + ", 'half': " + py_bool(o.half) +
                          ", 'dynamic': " + py_bool(o.dynamic) + ", 'nms': " + py_bool(o.nms) +
                          (o.int8 ? ", 'int8': True" : "") +
                          ", 'opset': " + std::to_string(o.opset) + ", 'imgsz': " + imgsz + "}");
  add_meta(m, "channels", "3");

  if (output_shape != nullptr) {
    output_shape->clear();
    for (const auto& [symbol, value] : dims) output_shape->push_back(symbol.empty() ? value : -1);
  }
  return m;
}

OnnxExportReport check_and_write_onnx(onnx::ModelProto& m, const std::vector<std::int64_t>& output_shape,
                                      const std::string& path) {
  try {
    onnx::checker::check_model(m);
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    throw Error(std::string("export: the ONNX graph fails the ONNX checker: ") + e.what());
  }

  std::string bytes;
  if (!m.SerializeToString(&bytes)) throw Error("export: the ONNX model could not be serialised (over 2 GB?)");
  write_file_atomic(path, bytes);

  OnnxExportReport r;
  r.path = path;
  r.output_shape = output_shape;
  for (int k = 1; k < m.graph().output_size(); ++k) {
    std::vector<std::int64_t> dims;
    for (const auto& d : m.graph().output(k).type().tensor_type().shape().dim()) {
      dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
    r.more_outputs.emplace_back(m.graph().output(k).name(), dims);
  }
  r.nodes = m.graph().node_size();
  r.initializers = m.graph().initializer_size();
  r.bytes = static_cast<std::int64_t>(bytes.size());
  return r;
}

OnnxExportReport export_onnx(Model& model, const OnnxExportOptions& o, const std::string& path) {
  std::vector<std::int64_t> output_shape;
  onnx::ModelProto m = build_onnx_model(model, o, &output_shape);
  return check_and_write_onnx(m, output_shape, path);
}

}  // namespace yoloflow::core
