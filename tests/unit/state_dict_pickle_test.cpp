// The state-dict pickle emitter on its own: integers past 32 bits (LONG1), memo slots past
// 255 (LONG_BINPUT/LONG_BINGET) and more than 1000 items (SETITEMS batches), read back by
// Python's own unpickler with the tensor rebuild replaced by a recorder.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>

#include "model/state_dict_pickle.h"
#include "support/paths.h"
#include "support/run_cli.h"

using namespace yoloflow;

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
  std::string out;
  FILE* p = popen((test::python() + " " + dir + "/check.py " + dir + "/data.pkl 2>&1").c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int rc = pclose(p);
  INFO(out);
  CHECK(WEXITSTATUS(rc) == 0);
  CHECK(out.find("OrderedDict 1203 layer.0.weight layer.1202.weight") != std::string::npos);
  CHECK(out.find("7: (('storage', 'HalfStorage', '7', 'cpu', 5000000000), 3000000000, (70000, 2), (2, 1), False, "
                 "OrderedDict())") != std::string::npos);
  CHECK(out.find("1202: (('storage', 'FloatStorage', '1202', 'cpu', 1203), 0, (1203,), (1,), False, OrderedDict())") !=
        std::string::npos);
  CHECK(out.find("pids True") != std::string::npos);
}
