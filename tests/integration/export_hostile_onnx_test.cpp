// ONNX files read back by `yoloflow val` and `predict` whose tensors keep their data in another
// file (ONNX's external data) or declare more than they hold. External data are read into the
// model where the file is read, so every runtime gets the same whole model; a location that is
// not a regular file (/dev/zero, which never ends), lies outside the model's folder (`..`, an
// absolute path, a link out), or is shorter than the bytes named is refused in one line naming
// the tensor and the location, as is a tensor whose dims declare more than its data hold.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "support/coco_subset.h"
#include "support/paths.h"
#include "support/output_checks.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
namespace fs = std::filesystem;

namespace {

using test::contains;

void check_refused(const test::CliResult& r, const std::string& expected) {
  INFO(r.output);
  CHECK(r.exit_code == kExitInvalid);
  CHECK(contains(r.output, expected));
  for (const char* internal : {"Exception raised from", "frame #", "bad_alloc", "std::", "OpenCV(", "shape", "Reshape"}) {
    CHECK_MESSAGE(!contains(r.output, internal), "'" << internal << "' in the output");
  }
  std::size_t errors = 0;
  for (auto at = r.output.find("error: "); at != std::string::npos; at = r.output.find("error: ", at + 1)) ++errors;
  CHECK(errors == 1);
}

// 15 float32 weights of a 1x1 conv from 3 channels to 5, as bytes.
std::string conv_weights() {
  std::vector<float> w(15);
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = 0.01f * static_cast<float>(k + 1);
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
}

// A detector as the exported-file reader takes one: images (1, 3, 32, 32) -> a 1x1 conv to 5
// channels (4 box values and 1 class) -> (1, 5, 1024). `edit` changes the conv's weight tensor W.
onnx::ModelProto small_detector(const std::function<void(onnx::TensorProto&)>& edit) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("yoloflow tests");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("small");
  auto value = [](onnx::ValueInfoProto* v, const std::string& name, std::vector<std::int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (auto d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  value(g->add_input(), "images", {1, 3, 32, 32});
  value(g->add_output(), "output0", {1, 5, 1024});
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : {5, 3, 1, 1}) w->add_dims(d);
  w->set_raw_data(conv_weights());
  edit(*w);
  auto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(3);
  for (std::int64_t d : {1, 5, 1024}) shape->add_int64_data(d);
  auto* conv = g->add_node();
  conv->set_op_type("Conv");
  conv->add_input("images");
  conv->add_input("W");
  conv->add_output("conv");
  auto* kernel = conv->add_attribute();  // OpenCV's dnn needs it said
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(1);
  kernel->add_ints(1);
  auto* reshape = g->add_node();
  reshape->set_op_type("Reshape");
  reshape->add_input("conv");
  reshape->add_input("shape");
  reshape->add_output("output0");
  for (const auto& [k, v] : {std::pair<const char*, const char*>{"names", "{0: 'thing'}"}, {"stride", "32"}, {"imgsz", "[32, 32]"}}) {
    auto* p = m.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  return m;
}

// W's data in the file `location` (relative to the model's folder), bytes offset..offset+length.
std::function<void(onnx::TensorProto&)> external(const std::string& location, const std::string& offset = "0",
                                                 const std::string& length = "60") {
  return [=](onnx::TensorProto& t) {
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"location", location}, {"offset", offset}, {"length", length}}) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
  };
}

std::string write_model(const std::string& path, const onnx::ModelProto& m) {
  std::string bytes;
  REQUIRE(m.SerializeToString(&bytes));
  test::write_file(path, bytes);
  return path;
}

}  // namespace

TEST_CASE("hostile weights: ONNX external data beside the model are read into it, by either runtime") {
  const auto dir = test::temp_dir("onnx-external");
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  // Two tensors' worth: W's bytes start at 4.
  test::write_file(dir + "/model/data/w.bin", std::string(4, '\0') + conv_weights());
  const std::string model = write_model(dir + "/model/m.onnx", small_detector(external("data/w.bin", "4")));
  for (const std::string runtime : {"opencv", "libtorch"}) {
    CAPTURE(runtime);
    const auto r = test::run_cli("predict --weights " + model + " --runtime " + runtime + " --source " + image + " --out " +
                                 dir + "/pred-" + runtime);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(dir + "/pred-" + runtime));
  }
}

TEST_CASE("hostile weights: ONNX external data that are no file beside the model, or too short, are refused in one line") {
  const auto dir = test::temp_dir("onnx-external-hostile");
  const std::string data = test::write_coco128_subset(dir, 2);
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  fs::create_directories(dir + "/model");
  test::write_file(dir + "/outside.bin", conv_weights());
  auto refused = [&](const std::string& name, const std::function<void(onnx::TensorProto&)>& edit, const std::string& expected) {
    CAPTURE(name);
    const std::string model = write_model(dir + "/model/" + name + ".onnx", small_detector(edit));
    check_refused(test::run_cli("predict --weights " + model + " --source " + image + " --out " + dir + "/pred"),
                  "--weights " + model + ": " + expected);
    check_refused(test::run_cli("val --weights " + model + " --data " + data), "--weights " + model + ": " + expected);
    CHECK_FALSE(fs::exists(dir + "/pred"));
  };

  refused("dev-zero", external("/dev/zero"),
          "tensor 'W' keeps its data in '/dev/zero', which is not a regular file (a character device)");
  fs::create_symlink("/dev/zero", dir + "/model/zero.bin");
  refused("link-to-dev-zero", external("zero.bin"),
          "tensor 'W' keeps its data in 'zero.bin', which is not a regular file (a character device)");
  refused("parent", external("../outside.bin"), "tensor 'W' keeps its data in '../outside.bin', outside the model's folder");
  refused("absolute", external(dir + "/outside.bin"),
          "tensor 'W' keeps its data in '" + dir + "/outside.bin', outside the model's folder");
  fs::create_symlink(dir + "/outside.bin", dir + "/model/link.bin");
  refused("link-out", external("link.bin"), "tensor 'W' keeps its data in 'link.bin', a link out of the model's folder");
  test::write_file(dir + "/model/short.bin", std::string(10, '\0'));
  refused("short", external("short.bin"), "tensor 'W' needs bytes 0 to 60 of 'short.bin', which holds 10");
  test::write_file(dir + "/model/w.bin", conv_weights());
  refused("offset-past-end", external("w.bin", "56"), "tensor 'W' needs bytes 56 to 116 of 'w.bin', which holds 60");
  refused("missing", external("none.bin"), "tensor 'W' keeps its data in 'none.bin', which does not exist");
  refused("length-not-dims", external("w.bin", "0", "8"),
          "tensor 'W' keeps its data in 'w.bin' as 8 bytes, but its dims declare 60");
  refused("offset-not-a-number", external("w.bin", "-4"), "tensor 'W': its external data offset '-4' is not a byte count");
}

TEST_CASE("hostile weights: an ONNX tensor declaring more elements than its data hold is refused before anything is allocated") {
  const auto dir = test::temp_dir("onnx-declared");
  const std::string image = test::coco128_dir() + "/images/train2017/000000000009.jpg";
  const std::string huge = write_model(dir + "/huge.onnx", small_detector([](onnx::TensorProto& t) {
    t.clear_dims();
    t.add_dims(std::int64_t{1} << 40);
    t.set_raw_data(std::string(4, '\0'));
  }));
  const auto h = test::run_cli("predict --weights " + huge + " --source " + image + " --out " + dir + "/pred",
                               "ulimit -v 4000000; ");
  check_refused(h, "--weights " + huge + ": tensor 'W' declares 1099511627776 elements of float32 (4398046511104 bytes): "
                   "more than the 1 GiB one tensor may hold");
  const std::string cut = write_model(dir + "/cut.onnx", small_detector([](onnx::TensorProto& t) {
    t.set_raw_data(t.raw_data().substr(0, 8));
  }));
  check_refused(test::run_cli("predict --weights " + cut + " --source " + image + " --out " + dir + "/pred"),
                "--weights " + cut + ": tensor 'W' declares 15 elements of float32 (60 bytes), but its data hold 8 bytes");
  CHECK_FALSE(fs::exists(dir + "/pred"));
}
