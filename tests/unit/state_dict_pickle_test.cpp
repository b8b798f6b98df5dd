// The state-dict pickle emitter on its own: integers past 32 bits (LONG1), memo slots past
// 255 (LONG_BINPUT/LONG_BINGET) and more than 1000 items (SETITEMS batches), read back by
// Python's own unpickler with the tensor rebuild replaced by a recorder.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "training/model/state_dict_pickle.h"
#include "training/model/weights_io.h"
#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;

namespace {

// Python with PyTorch (test::python()) on `args`.
test::CliResult python(const std::string& args) { return test::run_shell(test::python() + " " + args); }

}  // namespace

TEST_CASE("state-dict pickle: large integers, many memo slots and 1000+ items unpickle in Python") {
  std::vector<core::PickledTensor> tensors;
  for (int i = 0; i < 1203; ++i) {
    core::PickledTensor t;
    t.name = "layer." + std::to_string(i) + ".weight";
    t.storage_type = i % 2 ? "HalfStorage" : "FloatStorage";
    t.storage_key = std::to_string(i);
    t.storage_numel = i == 7 ? 5000000000LL : i + 1;
    t.storage_offset = i == 7 ? 3000000000LL : 0;
    t.sizes = i == 7 ? std::vector<std::int64_t>{70000, 2} : std::vector<std::int64_t>{i + 1};
    t.strides = i == 7 ? std::vector<std::int64_t>{2, 1} : std::vector<std::int64_t>{1};
    tensors.push_back(t);
  }
  const auto dir = test::temp_dir("pickle");
  {
    const auto bytes = core::pickle_state_dict(tensors);
    std::ofstream(dir + "/data.pkl", std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  test::write_file(dir + "/check.py", R"(import collections, pickle, sys
class U(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ('torch._utils', '_rebuild_tensor_v2'):
            return lambda *args: args
        if (module, name) == ('collections', 'OrderedDict'):
            return collections.OrderedDict
        if module == 'torch' and name in ('FloatStorage', 'HalfStorage'):
            return name
        raise RuntimeError('unexpected global %s.%s' % (module, name))
    def persistent_load(self, pid):
        return pid
sd = U(open(sys.argv[1], 'rb')).load()
print(type(sd).__name__, len(sd), list(sd)[0], list(sd)[-1])
print('7:', sd['layer.7.weight'])
print('1202:', sd['layer.1202.weight'])
ok = all(sd['layer.%d.weight' % i][0] == ('storage', 'HalfStorage' if i % 2 else 'FloatStorage', str(i), 'cpu', i + 1)
         for i in range(1203) if i != 7)
print('pids', ok)
)");
  const auto [rc, out] = python(dir + "/check.py " + dir + "/data.pkl");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("OrderedDict 1203 layer.0.weight layer.1202.weight") != std::string::npos);
  CHECK(out.find("7: (('storage', 'HalfStorage', '7', 'cpu', 5000000000), 3000000000, (70000, 2), (2, 1), False, "
                 "OrderedDict())") != std::string::npos);
  CHECK(out.find("1202: (('storage', 'FloatStorage', '1202', 'cpu', 1203), 0, (1203,), (1,), False, OrderedDict())") !=
        std::string::npos);
  CHECK(out.find("pids True") != std::string::npos);
}

TEST_CASE("read_weights reads Python's model.state_dict() files: OrderedDict with _metadata, protocol 4, shared storages") {
  const auto dir = test::temp_dir("pyread");
  test::write_file(dir + "/save.py", R"(import sys, torch
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
m(torch.rand(2, 3, 8, 8))  # BN statistics move, num_batches_tracked becomes 1
sd = m.state_dict()  # an OrderedDict carrying a _metadata attribute
torch.save(sd, sys.argv[1] + '/p2.pt')
torch.save(sd, sys.argv[1] + '/p4.pt', pickle_protocol=4)
x = torch.arange(10.)
torch.save({'whole': x, 'tail': x[6:], 'half': x.half()}, sys.argv[1] + '/views.pt')
for k, t in sd.items():
    print('entry', k, repr(float(t.double().sum())))
)");
  const auto [rc, out] = python(dir + "/save.py " + dir);
  INFO(out);
  REQUIRE(rc == 0);
  for (const char* file : {"/p2.pt", "/p4.pt"}) {
    INFO(file);
    const auto w = core::read_weights(dir + file);
    const std::vector<std::string> names = {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                            "1.running_var", "1.num_batches_tracked"};
    REQUIRE(w.size() == names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      CHECK(w[i].first == names[i]);
      const auto line = "entry " + names[i] + " ";
      const auto at = out.find(line);
      REQUIRE(at != std::string::npos);
      const double py_sum = std::stod(out.substr(at + line.size()));
      CHECK(w[i].second.to(torch::kDouble).sum().item<double>() == doctest::Approx(py_sum).epsilon(1e-12));
    }
    CHECK(w[0].second.sizes() == torch::IntArrayRef({4, 3, 3, 3}));
    CHECK((w[6].second.scalar_type() == torch::kLong));
    CHECK(w[6].second.item<std::int64_t>() == 1);
  }
  const auto v = core::read_weights(dir + "/views.pt");
  REQUIRE(v.size() == 3);
  CHECK(torch::equal(v[0].second, torch::arange(10, torch::kFloat)));
  CHECK(torch::equal(v[1].second, torch::arange(6, 10, torch::kFloat)));
  CHECK((v[2].second.scalar_type() == torch::kHalf));
  CHECK(torch::equal(v[2].second, torch::arange(10, torch::kHalf)));
}

TEST_CASE("read_weights refuses a pickle that calls anything beyond tensors and dicts, naming the file") {
  const auto dir = test::temp_dir("pyevil");
  test::write_file(dir + "/save.py", R"(import sys, torch, fractions
torch.save({'w': torch.ones(2), 'x': fractions.Fraction(1, 3)}, sys.argv[1] + '/evil.pt')
)");
  const auto [rc, out] = python(dir + "/save.py " + dir);
  INFO(out);
  REQUIRE(rc == 0);
  try {
    core::read_weights(dir + "/evil.pt");
    FAIL("expected an error");
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(dir + "/evil.pt") != std::string::npos);
    CHECK(msg.find("global 'fractions.Fraction' is not allowed") != std::string::npos);
  }
}

TEST_CASE("read_weights refuses a storage record of the wrong size, naming the file and the record") {
  const auto dir = test::temp_dir("pyshort");
  core::write_weights(dir + "/w.pt", {{"a", torch::ones({4, 4})}, {"b", torch::ones({3})}});
  // The same archive with data/0 cut to 10 bytes.
  test::write_file(dir + "/cut.py", R"(import sys, zipfile
src, dst = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2], 'w')
for n in src.namelist():
    data = src.read(n)
    dst.writestr(n, data[:10] if n.endswith('/data/0') else data)
dst.close()
)");
  const auto [rc, out] = python(dir + "/cut.py " + dir + "/w.pt " + dir + "/cut.pt");
  INFO(out);
  REQUIRE(rc == 0);
  try {
    core::read_weights(dir + "/cut.pt");
    FAIL("expected an error");
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(dir + "/cut.pt") != std::string::npos);
    CHECK(msg.find("record archive/data/0 holds 10 bytes, its storage of 16 elements needs 64") != std::string::npos);
  }
}
