#include "training/export/exported_file.h"
#include "training/export/onnx_runtime_choice.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "training/export/onnx_file_tensors.h"
#include "training/model/declared_tensor.h"
#include "runtime/util/file_checks.h"
#include "yoloflow/printable.h"
#include "yoloflow/error.h"

namespace yoloflow::core {
namespace {

namespace fs = std::filesystem;

// The whole numbers in a metadata text ("[640, 640]"); a number of more than 9 digits is
// kept as -1, which no check below takes (metadata are text anyone may write).
std::vector<std::int64_t> parse_int_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::string digits;
  auto push = [&] {
    out.push_back(digits.size() > 9 ? -1 : std::stoll(digits));
    digits.clear();
  };
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
    } else if (!digits.empty()) {
      push();
    }
  }
  if (!digits.empty()) push();
  return out;
}

// The most classes an exported detector may have: the yolo11 model's own limit on nc.
constexpr std::int64_t kMaxExportedClasses = 100000;
// The largest input side: the imgsz range of the train sink and of `yoloflow export`.
constexpr std::int64_t kMaxExportedSide = 8192;

// Dimensions of a value's declared type, -1 for a symbolic one.
std::vector<std::int64_t> declared_dims(const onnx::ValueInfoProto& v) {
  std::vector<std::int64_t> out;
  for (const auto& d : v.type().tensor_type().shape().dim()) out.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return out;
}

}  // namespace

bool is_onnx_path(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".onnx";
}

bool parse_names_metadata(const std::string& text, std::map<int, std::string>& out) {
  std::size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  skip();
  if (i >= text.size() || text[i] != '{') return false;
  ++i;
  for (;;) {
    skip();
    if (i < text.size() && text[i] == '}') return true;
    std::string key;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) key += text[i++];
    skip();
    if (key.empty() || key.size() > 9 || i >= text.size() || text[i] != ':') return false;
    ++i;
    skip();
    if (i >= text.size() || (text[i] != '\'' && text[i] != '"')) return false;
    const char q = text[i++];
    std::string value;
    while (i < text.size() && text[i] != q) {
      if (text[i] == '\\' && i + 1 < text.size()) {
        const char e = text[++i];
        value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        value += text[i];
      }
      ++i;
    }
    if (i >= text.size()) return false;
    ++i;
    out[std::stoi(key)] = value;
    skip();
    if (i < text.size() && text[i] == ',') ++i;
  }
}

std::string ExportedFile::variant() const {
  std::string v = int8 ? "int8 QDQ" : half ? "float16" : "float32";
  if (nms) v += " + NMS";
  if (dynamic) v += ", dynamic";
  return v;
}

ExportedFile read_exported_file(const std::string& path, const std::string& option) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InvalidInput(option + " " + path + ": no such file");
  // A regular file, read no further than its size (a device or a pipe is named as such).
  const std::string data = read_regular_file(path, option + " " + path);
  ExportedFile f;
  f.path = path;
  f.model = std::make_shared<onnx::ModelProto>();
  if (data.empty() || !f.model->ParseFromString(data) || !f.model->has_graph()) {
    throw InvalidInput(option + " " + path + ": not an ONNX model (it does not parse as one)");
  }
  // External data read in and every tensor's dims checked against its data, before any runtime
  // sees the model.
  load_onnx_file_tensors(*f.model, path, option + " " + path);
  const auto& g = f.model->graph();
  for (const auto& p : f.model->metadata_props()) f.metadata[p.key()] = p.value();

  std::vector<const onnx::ValueInfoProto*> inputs;
  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  for (const auto& v : g.input()) {
    if (initializers.count(v.name()) == 0) inputs.push_back(&v);
  }
  const auto in_dims = inputs.size() == 1 ? declared_dims(*inputs[0]) : std::vector<std::int64_t>{};
  if (in_dims.size() != 4 || in_dims[1] != 3 || g.output_size() < 1) {
    throw InvalidInput(option + " " + path + ": not an exported detector (it needs one input (batch, 3, height, width) "
                       "and an output (batch, 4 + classes, anchors), as `yoloflow export` and `yolo export` write)");
  }
  const auto out_dims = declared_dims(g.output(0));
  const int in_type = inputs[0]->type().tensor_type().elem_type();
  f.half = in_type == onnx::TensorProto::FLOAT16;
  if (in_type != onnx::TensorProto::FLOAT && !f.half) {
    throw InvalidInput(option + " " + path + ": its input is neither float32 nor float16");
  }
  for (const auto& n : g.node()) {
    if (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear" || n.op_type() == "QLinearConv") f.int8 = true;
    if (n.op_type() == "NonMaxSuppression") f.nms = true;
  }
  f.dynamic = in_dims[0] < 0 || in_dims[2] < 0 || in_dims[3] < 0;
  f.batch = in_dims[0] > 0 ? in_dims[0] : 0;
  if (const auto it = f.metadata.find("stride"); it != f.metadata.end()) {
    const auto v = parse_int_list(it->second);
    if (!v.empty() && v[0] > 0) f.stride = v[0];
  }
  f.height = in_dims[2];
  f.width = in_dims[3];
  if (const auto it = f.metadata.find("imgsz"); it != f.metadata.end()) {
    const auto v = parse_int_list(it->second);
    if (v.size() == 2 && (f.height < 0 || f.width < 0)) {
      f.height = v[0];
      f.width = v[1];
    }
  }
  if (f.height <= 0 || f.width <= 0) {
    throw InvalidInput(option + " " + path + ": its input size is symbolic and its metadata has no imgsz");
  }
  // What the file declares decides what is allocated for every batch: checked before.
  if (f.height > kMaxExportedSide || f.width > kMaxExportedSide) {
    throw InvalidInput(option + " " + path + ": its input is " + std::to_string(f.height) + "x" + std::to_string(f.width) +
                       " pixels; yoloflow runs images of at most " + std::to_string(kMaxExportedSide) + " pixels a side");
  }
  if (const std::uint64_t input_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(f.batch, 1)) * 3 *
                                        static_cast<std::uint64_t>(f.height) * static_cast<std::uint64_t>(f.width) * 4;
      input_bytes > kMaxTensorBytes) {
    throw InvalidInput(option + " " + path + ": its input of batch " + std::to_string(f.batch) + " at " +
                       std::to_string(f.height) + "x" + std::to_string(f.width) + " holds " + std::to_string(input_bytes) +
                       " bytes, more than the " + bytes_text(kMaxTensorBytes) + " one tensor may hold");
  }
  if (out_dims.size() != 3) {
    throw InvalidInput(option + " " + path + ": its output is not (batch, 4 + classes, anchors)");
  }
  std::map<int, std::string> names;
  if (const auto it = f.metadata.find("names"); it != f.metadata.end()) parse_names_metadata(it->second, names);
  if (const auto it = f.metadata.find("task"); it != f.metadata.end()) f.task = it->second;
  if (f.task != "detect" && f.task != "segment") {
    throw InvalidInput(option + " " + path + ": its metadata says task " + printable(f.task) +
                       "; yoloflow runs exported detection and segmentation models (task detect, segment)");
  }
  if (f.task == "segment") {
    // output1: the prototypes, whose channels are the mask coefficients at the end of output0.
    const auto proto_dims = g.output_size() >= 2 ? declared_dims(g.output(1)) : std::vector<std::int64_t>{};
    if (proto_dims.size() != 4 || proto_dims[1] <= 0 || proto_dims[1] > 1024) {
      throw InvalidInput(option + " " + path + ": a segmentation model (metadata task segment) needs a second output, "
                         "the prototype masks (batch, masks, height / 4, width / 4), as `yolo export` writes it");
    }
    f.masks = proto_dims[1];
  }
  std::int64_t nc = 0;
  if (f.nms) {
    nc = names.empty() ? 0 : std::int64_t{names.rbegin()->first} + 1;
  } else {
    if (out_dims[1] <= 4 + f.masks) {
      throw InvalidInput(option + " " + path + ": its output is not (batch, 4 + classes" +
                         (f.masks > 0 ? " + " + std::to_string(f.masks) + " mask coefficients" : std::string()) +
                         ", anchors)");
    }
    nc = out_dims[1] - 4 - f.masks;
  }
  if (nc > kMaxExportedClasses) {
    throw InvalidInput(option + " " + path + ": it declares " + std::to_string(nc) + " classes; a detector has at most " +
                       std::to_string(kMaxExportedClasses));
  }
  f.nc = static_cast<int>(nc);
  for (int c = 0; c < f.nc; ++c) {
    const auto it = names.find(c);
    f.names.push_back(it == names.end() ? std::to_string(c) : it->second);
  }
  const auto d = f.metadata.find("description");
  f.description = d != f.metadata.end() ? d->second : f.model->producer_name();
  return f;
}

}  // namespace yoloflow::core
