// The yolo11 model plugin: architecture as released (parameter counts, names, shapes),
// decoding, parity with Ultralytics, weights interchange, checkpointing and channels_last.
// Here rather than beside the plugin: it checks the plugin through the host's model helpers
// (core/src/model: the model factory, weights files, FLOP counting).
#include <doctest/doctest.h>

#include <cmath>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <memory>
#include <regex>
#include <sstream>

#include "training/model/flop_counter.h"
#include "training/model/model_factory.h"
#include "training/model/weights_io.h"
#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/plugins.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;

namespace {

core::PluginManager& plugins() { return test::plugins_with("yolo11"); }

std::unique_ptr<Model> make(const std::string& arch, int nc = 80) {
  return core::create_model(plugins().registry(), arch, nc);
}

std::unique_ptr<Model> make_with(const json& params, const StageContext& context = {}) {
  const auto* rc = plugins().registry().find(Kind::Model, "yolo11");
  REQUIRE(rc != nullptr);
  auto m = plugins().registry().create_as<Model>(Kind::Model, "yolo11", "test");
  m->configure(Params(rc->info.schema.resolve(params), "test"), context);
  return m;
}

std::int64_t count_params(Model& m) {
  std::int64_t n = 0;
  for (const auto& p : m.module().parameters()) n += p.numel();
  return n;
}

torch::Tensor load_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes).toTensor();
}

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/yolo11n-parity/" + name; }

}  // namespace

TEST_CASE("yolo11 parameter counts match Ultralytics at nc=80 for every scale") {
  const std::pair<const char*, std::int64_t> expected[] = {{"yolo11n", 2624080},
                                                           {"yolo11s", 9458752},
                                                           {"yolo11m", 20114688},
                                                           {"yolo11l", 25372160},
                                                           {"yolo11x", 56966176}};
  for (const auto& [arch, n] : expected) {
    CAPTURE(arch);
    auto m = make(arch);
    CHECK(count_params(*m) == n);
    CHECK(m->architecture() == arch);
    // The layer table's per-layer counts add up to the total.
    std::int64_t sum = 0;
    for (const auto& r : m->layers()) sum += r.params;
    CHECK(sum == n);
  }
}

TEST_CASE("yolo11n state-dict names are Ultralytics' names") {
  auto m = make("yolo11n");
  const auto state = core::module_state(m->module());
  CHECK(state.size() == 499);  // as in the parity fixture's state dict
  CHECK(state.front().first == "model.0.conv.weight");
  CHECK(state.back().first == "model.23.dfl.conv.weight");
  std::set<std::string> names;
  for (const auto& [n, t] : state) names.insert(n);
  for (const char* n : {"model.0.bn.running_mean", "model.0.bn.num_batches_tracked", "model.23.cv2.0.2.weight",
                        "model.23.cv3.1.0.0.conv.weight", "model.10.m.0.attn.qkv.conv.weight",
                        "model.10.m.0.ffn.1.bn.bias", "model.9.cv1.conv.weight", "model.2.m.0.cv1.conv.weight",
                        "model.22.m.0.m.1.cv2.conv.weight"}) {
    CHECK_MESSAGE(names.count(n) == 1, n);
  }
  // The DFL integral is fixed: weights 0..15, not trained.
  const auto& dfl = state.back().second;
  CHECK_FALSE(dfl.requires_grad());
  CHECK(torch::equal(dfl.reshape(-1), torch::arange(16, torch::kFloat)));
}

TEST_CASE("yolo11 layer table rows are the released layer list") {
  auto m = make("yolo11n");
  const auto rows = m->layers();
  REQUIRE(rows.size() == 24);
  CHECK(rows[0].module == "Conv");
  CHECK(rows[0].args == "[3, 16, 3, 2]");
  CHECK(rows[0].params == 464);
  CHECK(rows[2].module == "C3k2");
  CHECK(rows[2].args == "[32, 64, 1, False, 0.25]");
  CHECK(rows[9].module == "SPPF");
  CHECK(rows[10].module == "C2PSA");
  CHECK(rows[12].from == "[-1, 6]");
  CHECK(rows[23].module == "Detect");
  CHECK(rows[23].from == "[16, 19, 22]");
  CHECK(rows[23].args == "[80, [64, 128, 256]]");
  // m/l/x force c3k in every C3k2.
  auto l = make("yolo11l");
  CHECK(l->layers()[2].args == "[128, 256, 2, True, 0.25]");
  CHECK(l->layers()[2].repeats == 2);
}

TEST_CASE("yolo11 GFLOPs at 640 counted from the forward pass match the published values") {
  // Published: n 6.6, s 21.7 (m/l/x take seconds each on a small CPU; see docs/model.md).
  // We count convolutions and matrix products only; Ultralytics' thop count adds batch norm,
  // which is why its fused model reports 6.5 for yolo11n: allow 0.15.
  auto n = make("yolo11n");
  const double gn = core::forward_gflops(*n, 640);
  auto s = make("yolo11s");
  const double gs = core::forward_gflops(*s, 640);
  MESSAGE("GFLOPs at 640: n " << gn << ", s " << gs);
  CHECK(std::abs(gn - 6.6) <= 0.15);
  CHECK(std::abs(gs - 21.7) <= 0.15);
}

TEST_CASE("yolo11 training output shapes at 320 and 640") {
  auto m = make("yolo11n", 5);
  m->module().train();
  for (int sz : {320, 640}) {
    const auto out = m->forward_train(torch::rand({2, 3, sz, sz})).levels;
    REQUIRE(out.size() == 3);
    for (int i = 0; i < 3; ++i) {
      const int s = 8 << i;
      CHECK(out[i].sizes() == torch::IntArrayRef({2, 64 + 5, sz / s, sz / s}));
    }
  }
  // Non-square sizes that are multiples of 32 work too.
  const auto out = m->forward_train(torch::rand({1, 3, 256, 384})).levels;
  CHECK(out[2].sizes() == torch::IntArrayRef({1, 69, 8, 12}));
}

TEST_CASE("yolo11 rejects image sizes that are not multiples of 32 with a clear message") {
  auto m = make("yolo11n");
  try {
    m->forward_train(torch::rand({1, 3, 330, 320}));
    FAIL("expected an error");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("330x320 is not a multiple of 32") != std::string::npos);
  }
  CHECK_THROWS_AS(m->forward_train(torch::rand({1, 1, 320, 320})), InvalidInput);
}

TEST_CASE("yolo11 configure again keeps an unchanged network and rebuilds a changed one") {
  const auto* rc = plugins().registry().find(Kind::Model, "yolo11");
  REQUIRE(rc != nullptr);
  auto m = plugins().registry().create_as<Model>(Kind::Model, "yolo11", "test");
  m->configure(Params(rc->info.schema.resolve({{"scale", "n"}, {"nc", 3}}), "t"), StageContext{});
  auto* root = &m->module();
  const auto w = m->module().named_parameters()["model.0.conv.weight"];
  {
    torch::NoGradGuard ng;
    w.fill_(0.25);  // a "trained" value that a rebuild would lose
  }
  m->configure(Params(rc->info.schema.resolve({{"scale", "n"}, {"nc", 3}, {"checkpoint_neck", true}}), "t"),
               StageContext{});
  CHECK(&m->module() == root);
  CHECK(m->module().named_parameters()["model.0.conv.weight"].eq(0.25).all().item<bool>());
  m->configure(Params(rc->info.schema.resolve({{"scale", "n"}, {"nc", 4}}), "t"), StageContext{});
  CHECK(m->head().nc == 4);
  CHECK(m->module().named_parameters()["model.23.cv3.0.2.bias"].size(0) == 4);
}

TEST_CASE("yolo11 decode: DFL expectation, anchors at cell centres times stride, sigmoid scores") {
  auto m = make("yolo11n", 2);
  // All-zero logits: every DFL bin equally likely, expectation 7.5 per side; scores 0.5.
  std::vector<torch::Tensor> levels{torch::zeros({1, 66, 4, 4}), torch::zeros({1, 66, 2, 2}),
                                    torch::zeros({1, 66, 1, 1})};
  auto d = m->decode(ModelOutput{levels, {}});
  REQUIRE(d.boxes.sizes() == torch::IntArrayRef({1, 21, 4}));
  REQUIRE(d.scores.sizes() == torch::IntArrayRef({1, 21, 2}));
  CHECK(d.scores.eq(0.5).all().item<bool>());
  auto b = d.boxes[0];
  // First P3 anchor (0.5, 0.5) * 8: x1 = (0.5 - 7.5) * 8 = -56, x2 = (0.5 + 7.5) * 8 = 64.
  CHECK(b[0][0].item<float>() == doctest::Approx(-56));
  CHECK(b[0][1].item<float>() == doctest::Approx(-56));
  CHECK(b[0][2].item<float>() == doctest::Approx(64));
  CHECK(b[0][3].item<float>() == doctest::Approx(64));
  // Anchor 1 of P3 is the next column: (1.5, 0.5).
  CHECK(b[1][0].item<float>() == doctest::Approx((1.5 - 7.5) * 8));
  CHECK(b[1][1].item<float>() == doctest::Approx((0.5 - 7.5) * 8));
  // The P5 anchor (0.5, 0.5) * 32.
  CHECK(b[20][2].item<float>() == doctest::Approx((0.5 + 7.5) * 32));
  // A peaked distribution: all mass on bin 3 for the left side -> x1 = (0.5 - 3) * 8.
  levels[0].index_put_({0, 3, 0, 0}, 100.0);
  d = m->decode(ModelOutput{levels, {}});
  CHECK(d.boxes[0][0][0].item<float>() == doctest::Approx((0.5 - 3) * 8).epsilon(1e-4));
}

TEST_CASE("yolo11n with the parity fixture's weights reproduces Ultralytics' eval output") {
  auto m = make("yolo11n");
  const auto weights = core::read_weights(fixture("yolo11n.pt"));
  CHECK(weights.size() == 499);
  const auto report = core::load_weights(m->module(), weights, fixture("yolo11n.pt"));
  CHECK(report.loaded == 499);
  m->module().eval();
  const auto input = load_tensor(fixture("input.pt"));
  const auto ref = load_tensor(fixture("ref_eval.pt"));
  REQUIRE(ref.sizes() == torch::IntArrayRef({1, 84, 2100}));
  torch::NoGradGuard ng;
  const auto d = m->decode(m->forward_train(input));
  const auto b = d.boxes[0];  // (A, 4) xyxy
  const auto xywh = torch::stack({(b.select(1, 0) + b.select(1, 2)) / 2, (b.select(1, 1) + b.select(1, 3)) / 2,
                                  b.select(1, 2) - b.select(1, 0), b.select(1, 3) - b.select(1, 1)},
                                 0);  // (4, A)
  const auto ours = torch::cat({xywh, d.scores[0].transpose(0, 1)}, 0).unsqueeze(0);
  const double box_err = (ours.slice(1, 0, 4) - ref.slice(1, 0, 4)).abs().max().item<double>();
  const double cls_err = (ours.slice(1, 4, 84) - ref.slice(1, 4, 84)).abs().max().item<double>();
  MESSAGE("parity: max |box| error " << box_err << " px, max |prob| error " << cls_err);
  CHECK(box_err < 1e-3);
  CHECK(cls_err < 1e-5);
  CHECK(torch::allclose(ours, ref, 1e-5, 1e-3));
}

TEST_CASE("yolo11 weights round trip through a file, and Python's torch.load reads it") {
  auto a = make("yolo11n", 3);
  auto b = make("yolo11n", 3);
  const auto dir = test::temp_dir("weights");
  const auto path = dir + "/w.pt";
  core::write_weights(path, core::module_state(a->module()));
  const auto back = core::read_weights(path);
  core::load_weights(b->module(), back, path);
  for (auto& m : {a.get(), b.get()}) m->module().eval();
  torch::NoGradGuard ng;
  const auto x = torch::rand({1, 3, 64, 64});
  const auto ya = a->forward_train(x).levels, yb = b->forward_train(x).levels;
  for (int i = 0; i < 3; ++i) CHECK(torch::equal(ya[i], yb[i]));
  const auto [rc, out] = test::run_shell(test::python() + " -c \"import torch; sd=torch.load('" + path +
                               "', weights_only=True); print(len(sd), tuple(sd['model.23.cv3.0.2.weight'].shape), "
                               "sd['model.0.bn.num_batches_tracked'].dtype)\"");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("499 (3, 64, 1, 1) torch.int64") != std::string::npos);
}

TEST_CASE("loading weights with wrong shapes and missing keys fails listing all of them") {
  auto m = make("yolo11n");
  auto w = core::read_weights(fixture("yolo11n.pt"));
  const auto before = m->module().named_parameters()["model.0.conv.weight"].clone();
  core::NamedTensors bad;
  for (auto& [n, t] : w) {
    if (n == "model.5.conv.weight" || n == "model.17.bn.running_var") continue;  // missing
    if (n == "model.0.conv.weight") {
      bad.emplace_back(n, torch::zeros({16, 3, 5, 5}));  // wrong shape
    } else if (n == "model.10.cv1.bn.bias") {
      bad.emplace_back(n, torch::zeros({7}));
    } else {
      bad.emplace_back(n, t);
    }
  }
  bad.emplace_back("model.24.extra.weight", torch::zeros({1}));  // unexpected
  try {
    core::load_weights(m->module(), bad, "bad.pt");
    FAIL("expected an error");
  } catch (const InvalidInput& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("bad.pt") != std::string::npos);
    CHECK(msg.find("2 missing, 1 unexpected, 2 wrong shape") != std::string::npos);
    CHECK(msg.find("missing in file: model.5.conv.weight") != std::string::npos);
    CHECK(msg.find("missing in file: model.17.bn.running_var") != std::string::npos);
    CHECK(msg.find("not in model: model.24.extra.weight") != std::string::npos);
    CHECK(msg.find("model.0.conv.weight: file [16, 3, 5, 5] vs model [16, 3, 3, 3]") != std::string::npos);
    CHECK(msg.find("model.10.cv1.bn.bias: file [7] vs model [256]") != std::string::npos);
  }
  // Nothing was loaded.
  CHECK(torch::equal(m->module().named_parameters()["model.0.conv.weight"], before));
}

TEST_CASE("weights import CLI: exact import, mismatch listing, and nc change keeping all but the class head") {
  const auto dir = test::temp_dir("import");
  auto r = test::run_cli("weights import " + fixture("yolo11n.pt") + " --model yolo11n --out " + dir + "/a.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("imported 499 tensors") != std::string::npos);
  const auto src = core::read_weights(fixture("yolo11n.pt"));
  const auto imported = core::read_weights(dir + "/a.pt");
  std::map<std::string, torch::Tensor> im(imported.begin(), imported.end());
  for (const auto& [n, t] : src) CHECK_MESSAGE(torch::equal(im.at(n), t), n);

  // A yolo11s model cannot take yolo11n weights: the mismatches are counted, the first ones
  // listed, exit code 2.
  r = test::run_cli("weights import " + fixture("yolo11n.pt") + " --model yolo11s --out " + dir + "/b.pt");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("wrong shape: model.0.conv.weight: file [16, 3, 3, 3] vs model [32, 3, 3, 3]") !=
        std::string::npos);
  CHECK(r.output.find("(0 missing, 0 unexpected, 381 wrong shape)") != std::string::npos);
  CHECK(r.output.find("... and 371 more wrong shape") != std::string::npos);

  // nc 80 -> 3: everything but the class branch comes from the file.
  r = test::run_cli("weights import " + fixture("yolo11n.pt") + " --model yolo11n --nc 3 --out " + dir + "/c.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("nc 80 -> 3") != std::string::npos);
  const auto tuned = core::read_weights(dir + "/c.pt");
  std::map<std::string, torch::Tensor> tm(tuned.begin(), tuned.end());
  CHECK(tm.at("model.23.cv3.0.2.weight").sizes() == torch::IntArrayRef({3, 64, 1, 1}));
  const std::regex cls(R"(^model\.23\.cv3\..*)");
  int same = 0, kept = 0;
  for (const auto& [n, t] : src) {
    if (std::regex_match(n, cls)) {
      if (tm.at(n).sizes() != t.sizes()) ++kept;
      continue;
    }
    CHECK_MESSAGE(torch::equal(tm.at(n), t), n);
    ++same;
  }
  CHECK(kept > 0);
  CHECK(r.output.find("kept the initial values of " + std::to_string(kept)) != std::string::npos);
  // For yolo11s the class-branch width does not depend on nc: only the final convs differ.
  auto s80 = make("yolo11s", 80);
  const auto s80_path = dir + "/s80.pt";
  core::write_weights(s80_path, core::module_state(s80->module()));
  r = test::run_cli("weights import " + s80_path + " --model yolo11s --nc 7 --out " + dir + "/s7.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("kept the initial values of 6 class-head tensors") != std::string::npos);
  for (const char* n : {"model.23.cv3.0.2.weight", "model.23.cv3.0.2.bias", "model.23.cv3.2.2.bias"}) {
    CHECK(r.output.find(n) != std::string::npos);
  }
}

TEST_CASE("weights export CLI writes a dict Python's torch.load reads, from a checkpoint dict") {
  const auto dir = test::temp_dir("export");
  // A checkpoint dict holding the weights under "ema" (plus other entries).
  auto m = make("yolo11n");
  c10::Dict<std::string, at::Tensor> sd;
  for (const auto& [n, t] : core::module_state(m->module())) sd.insert(n, t.contiguous());
  c10::impl::GenericDict ckpt(c10::StringType::get(), c10::AnyType::get());
  ckpt.insert("ema", sd);
  ckpt.insert("epoch", 3);
  const auto bytes = torch::pickle_save(ckpt);
  std::ofstream(dir + "/ckpt.pt", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto r = test::run_cli("weights export " + dir + "/ckpt.pt --model yolo11n --out " + dir + "/out.pt");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto [rc, out] = test::run_shell(test::python() + " -c \"import torch; sd=torch.load('" + dir +
                               "/out.pt', weights_only=True); print(type(sd).__name__, len(sd), list(sd)[0], float(sd['model.23.dfl.conv.weight'].sum()))\"");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("OrderedDict 499 model.0.conv.weight 120.0") != std::string::npos);
  // A file that is not a weights file: a clear error naming it.
  test::write_file(dir + "/junk.pt", "not a pickle");
  r = test::run_cli("weights export " + dir + "/junk.pt --out " + dir + "/x.pt");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("junk.pt") != std::string::npos);
}

TEST_CASE("weights export writes what Python's torch.save writes: plain torch.load and weights_only=True read all 499 entries") {
  const auto dir = test::temp_dir("export_sd");
  const auto out_path = dir + "/out.pt";
  auto r = test::run_cli("weights export " + fixture("yolo11n.pt") + " --model yolo11n --out " + out_path);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Python loads our file both ways, compares it with the fixture (written by Python's
  // torch.save) entry by entry, and prints name, dtype, shape and sum of every entry. It also
  // saves what it loaded with torch.save and compares that pickle with ours byte for byte.
  test::write_file(dir + "/check.py", R"(import collections, sys, zipfile, torch
ours, ref_path, resaved = sys.argv[1:4]
ref = torch.load(ref_path, weights_only=True)
strict = torch.load(ours, weights_only=True)
plain = torch.load(ours)
for sd in (strict, plain):
    assert type(sd) is collections.OrderedDict, type(sd)
    assert list(sd) == list(ref)
    for k, t in ref.items():
        assert sd[k].dtype == t.dtype and sd[k].shape == t.shape and torch.equal(sd[k], t), k
        assert not sd[k].requires_grad, k
torch.save(strict, resaved)
z_ours, z_py = zipfile.ZipFile(ours), zipfile.ZipFile(resaved)
names = lambda z: {n.split('/', 1)[1] for n in z.namelist()}
# Every record of ours is one torch.save writes too (PyTorch < 2.0 writes no byteorder; newer
# versions add bookkeeping records such as .format_version that loading does not need).
print('records', names(z_ours) - {'byteorder'} <= names(z_py), 'data.pkl' in names(z_ours), len([n for n in names(z_ours) if n.startswith('data/')]))
print('pickle identical', z_ours.read('archive/data.pkl') == z_py.read('archive/data.pkl'))
print('byteorder', z_ours.read('archive/byteorder').decode())
for k, t in plain.items():
    print('entry', k, str(t.dtype).replace('torch.', ''), 'x'.join(map(str, t.shape)) or '-', repr(float(t.double().sum())))
)");
  const auto [rc, out] = test::run_shell(test::python() + " " + dir + "/check.py " + out_path + " " + fixture("yolo11n.pt") +
                               " " + dir + "/archive.pt");
  INFO(out);
  REQUIRE(rc == 0);
  CHECK(out.find("records True True 499") != std::string::npos);
  CHECK(out.find("pickle identical True") != std::string::npos);
  CHECK(out.find("byteorder little") != std::string::npos);
  // Every entry as C++ sees the fixture: same order, dtype, shape and sum.
  const auto ref = core::read_weights(fixture("yolo11n.pt"));
  REQUIRE(ref.size() == 499);
  std::istringstream lines(out);
  std::string line;
  std::size_t i = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("entry ", 0) != 0) continue;
    REQUIRE(i < ref.size());
    std::istringstream f(line.substr(6));
    std::string name, dtype, shape;
    double sum = 0;
    f >> name >> dtype >> shape >> sum;
    const auto& [ref_name, t] = ref[i++];
    CHECK(name == ref_name);
    CHECK(dtype == (t.scalar_type() == torch::kLong ? "int64" : "float32"));
    std::string ref_shape;
    for (const auto d : t.sizes()) ref_shape += (ref_shape.empty() ? "" : "x") + std::to_string(d);
    CHECK_MESSAGE(shape == (ref_shape.empty() ? "-" : ref_shape), name);
    const double ref_sum = t.to(torch::kDouble).sum().item<double>();
    CHECK_MESSAGE(std::abs(sum - ref_sum) <= 1e-9 * std::max(1.0, std::abs(ref_sum)), name);
  }
  CHECK(i == 499);
  // Our import reads our export back bit-identically.
  const auto back = core::read_weights(out_path);
  REQUIRE(back.size() == ref.size());
  for (std::size_t k = 0; k < ref.size(); ++k) {
    CHECK(back[k].first == ref[k].first);
    CHECK((back[k].second.scalar_type() == ref[k].second.scalar_type()));
    CHECK_MESSAGE(torch::equal(back[k].second, ref[k].second), ref[k].first);
  }
}

TEST_CASE("weights files keep float16, bfloat16, int64 and other dtypes, views and empty tensors, for us and for Python") {
  const auto dir = test::temp_dir("dtypes");
  const auto path = dir + "/w.pt";
  const auto base = torch::arange(12, torch::kFloat).reshape({3, 4});
  core::NamedTensors w = {
      {"half", (base / 8).to(torch::kHalf)},
      {"bf16", (base - 5.5).to(torch::kBFloat16)},
      {"count", torch::tensor(int64_t{7} << 40)},                      // 0-dim int64, like num_batches_tracked
      {"long", torch::tensor({int64_t{-3}, int64_t{1} << 33, int64_t{5}})},
      {"double", base.to(torch::kDouble) / 3},
      {"flag", base.gt(4)},
      {"int8", (base - 6).to(torch::kChar)},
      {"empty", torch::zeros({0, 3})},
      {"transposed", base.t()},                                        // not contiguous
      {"row", base[2]},                                                // storage offset 8 in its base
      {"wide", torch::arange(140000, torch::kFloat).reshape({2, 70000})},  // sizes past 65535
  };
  core::write_weights(path, w);
  const auto back = core::read_weights(path);
  REQUIRE(back.size() == w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    INFO(w[i].first);
    CHECK(back[i].first == w[i].first);
    CHECK((back[i].second.scalar_type() == w[i].second.scalar_type()));
    CHECK(back[i].second.sizes() == w[i].second.sizes());
    CHECK(torch::equal(back[i].second, w[i].second));
  }
  const auto [rc, out] = test::run_shell(test::python() + " -c \"import torch\nb = torch.arange(12.).reshape(3, 4)\n"
                               "sd = torch.load('" + path + "', weights_only=True)\n"
                               "exp = dict(half=(b / 8).half(), bf16=(b - 5.5).bfloat16(), count=torch.tensor(7 << 40), "
                               "long=torch.tensor([-3, 1 << 33, 5]), double=b.double() / 3, flag=b > 4, int8=(b - 6).to(torch.int8), "
                               "empty=torch.zeros(0, 3), transposed=b.t(), row=b[2], wide=torch.arange(140000.).reshape(2, 70000))\n"
                               "assert list(sd) == list(exp), list(sd)\n"
                               "bad = [k for k in exp if sd[k].dtype != exp[k].dtype or sd[k].shape != exp[k].shape or not torch.equal(sd[k], exp[k])]\n"
                               "print('mismatches', bad, sd['count'].dtype, sd['bf16'].dtype, sd['half'].dtype)\"");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("mismatches [] torch.int64 torch.bfloat16 torch.float16") != std::string::npos);
}

TEST_CASE("info CLI prints the layer table, parameters and GFLOPs") {
  auto r = test::run_cli("info --model yolo11n --nc 80 --imgsz 640");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("C2PSA") != std::string::npos);
  CHECK(r.output.find("[80, [64, 128, 256]]") != std::string::npos);
  CHECK(r.output.find("2,624,080 parameters") != std::string::npos);
  CHECK(std::regex_search(r.output, std::regex("6\\.[56] GFLOPs at 640x640")));
  r = test::run_cli("info --model yolo11q");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("unknown model 'yolo11q'") != std::string::npos);
}

namespace {

struct StepResult {
  std::vector<torch::Tensor> outputs, grads, buffers;
};

// One training forward + backward of a fixed loss on a model with fixed weights.
StepResult train_step(bool ckpt_backbone, bool ckpt_neck, bool channels_last = false) {
  torch::manual_seed(0);
  auto m = make_with({{"scale", "n"}, {"nc", 3}, {"checkpoint_backbone", ckpt_backbone},
                      {"checkpoint_neck", ckpt_neck}, {"channels_last", channels_last}});
  m->module().train();
  torch::manual_seed(1);
  const auto x = torch::rand({2, 3, 96, 128});
  const auto out = m->forward_train(x).levels;
  torch::Tensor loss = torch::zeros({});
  for (std::size_t i = 0; i < out.size(); ++i) loss = loss + (out[i] * out[i]).mean() * static_cast<double>(i + 1);
  loss.backward();
  StepResult r;
  for (const auto& o : out) r.outputs.push_back(o.detach().contiguous());
  for (const auto& p : m->module().parameters()) {
    if (p.requires_grad()) {
      REQUIRE(p.grad().defined());
      r.grads.push_back(p.grad().contiguous());
    }
  }
  for (const auto& b : m->module().buffers()) r.buffers.push_back(b.contiguous());
  return r;
}

}  // namespace

TEST_CASE("activation checkpointing changes neither outputs, gradients nor BN statistics") {
  const auto ref = train_step(false, false);
  for (const auto& [bb, nk] : {std::pair{true, false}, {false, true}, {true, true}}) {
    CAPTURE(bb);
    CAPTURE(nk);
    const auto r = train_step(bb, nk);
    REQUIRE(r.outputs.size() == ref.outputs.size());
    for (std::size_t i = 0; i < ref.outputs.size(); ++i) CHECK(torch::equal(r.outputs[i], ref.outputs[i]));
    REQUIRE(r.grads.size() == ref.grads.size());
    std::size_t equal = 0;
    double worst = 0;
    for (std::size_t i = 0; i < ref.grads.size(); ++i) {
      equal += torch::equal(r.grads[i], ref.grads[i]) ? 1 : 0;
      worst = std::max(worst, (r.grads[i] - ref.grads[i]).abs().max().item<double>() /
                                  (ref.grads[i].abs().max().item<double>() + 1e-12));
    }
    MESSAGE("checkpointing: " << equal << "/" << ref.grads.size() << " gradients bit-identical, worst relative "
                              << worst);
    CHECK(worst < 1e-5);
    // Running statistics were updated exactly once (num_batches_tracked == 1, same values).
    REQUIRE(r.buffers.size() == ref.buffers.size());
    for (std::size_t i = 0; i < ref.buffers.size(); ++i) CHECK(torch::equal(r.buffers[i], ref.buffers[i]));
  }
}

TEST_CASE("channels_last converts weights and inputs and gives the same results") {
  auto m = make_with({{"scale", "n"}, {"nc", 3}, {"channels_last", true}});
  const auto w = m->module().named_parameters()["model.0.conv.weight"];
  CHECK(w.is_contiguous(torch::MemoryFormat::ChannelsLast));
  const auto ref = train_step(false, false);
  const auto r = train_step(false, false, true);
  for (std::size_t i = 0; i < ref.outputs.size(); ++i) {
    CHECK(torch::allclose(r.outputs[i], ref.outputs[i], 1e-4, 1e-4));
  }
  // Some gradients are numerically zero (~1e-9, e.g. where batch norm cancels them): measure
  // each difference against at least 1e-3 of the largest gradient, not against rounding noise.
  double global = 0;
  for (const auto& g : ref.grads) global = std::max(global, g.abs().max().item<double>());
  double worst = 0;
  std::size_t worst_i = 0;
  for (std::size_t i = 0; i < ref.grads.size(); ++i) {
    const double rel = (r.grads[i] - ref.grads[i]).abs().max().item<double>() /
                       std::max(ref.grads[i].abs().max().item<double>(), 1e-3 * global);
    if (rel > worst) {
      worst = rel;
      worst_i = i;
    }
  }
  // The default, "auto": channels_last when the model is made for a CUDA device.
  const auto weight_is_nhwc = [](Model& m) {
    return m.module().named_parameters()["model.0.conv.weight"].is_contiguous(torch::MemoryFormat::ChannelsLast);
  };
  CHECK_FALSE(weight_is_nhwc(*make_with({{"scale", "n"}, {"nc", 3}})));
  StageContext on_cpu, on_cuda;
  on_cpu.device = "cpu";
  on_cuda.device = "cuda:0";
  CHECK_FALSE(weight_is_nhwc(*make_with({{"scale", "n"}, {"nc", 3}}, on_cpu)));
  CHECK(weight_is_nhwc(*make_with({{"scale", "n"}, {"nc", 3}}, on_cuda)));
  CHECK_FALSE(weight_is_nhwc(*make_with({{"scale", "n"}, {"nc", 3}, {"channels_last", false}}, on_cuda)));
  MESSAGE("channels_last: worst relative gradient difference " << worst << " at parameter " << worst_i
                                                               << " of size " << ref.grads[worst_i].sizes()
                                                               << " max " << ref.grads[worst_i].abs().max().item<double>());
  CHECK(worst < 1e-3);
}
