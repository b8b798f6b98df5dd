// The plugin boundary: every way a library can be refused, with its one-line reason.
#include <doctest/doctest.h>

#include "runtime/plugin/plugin_manager.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using yoloflow::test::test_plugin_dir;

namespace {
std::string lib(const std::string& c) { return test_plugin_dir(c) + "/yoloflow_test_" + c + ".so"; }
}  // namespace

TEST_CASE("a well-formed plugin loads and registers its components") {
  core::PluginManager pm;
  auto r = pm.load(lib("good"));
  CHECK(r.loaded);
  CHECK(r.name == "test_good");
  CHECK(r.version == "1.0.0");
  REQUIRE(r.components.size() == 1);
  CHECK(r.components[0] == "augmentation:test_invert");
  const auto* rc = pm.registry().find(Kind::Augmentation, "test_invert");
  REQUIRE(rc != nullptr);
  CHECK(rc->file == lib("good"));
  CHECK(rc->info.schema.find("p") != nullptr);
}

TEST_CASE("a library without descriptor is refused as not a plugin") {
  core::PluginManager pm;
  auto r = pm.load(lib("no_descriptor"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("not a yoloflow plugin") != std::string::npos);
  CHECK(r.reason.find("yoloflow_plugin_descriptor") != std::string::npos);
}

TEST_CASE("a file that is not a shared library is refused") {
  const auto dir = test::temp_dir("notelf");
  test::write_file(dir + "/fake.so", "this is text, not ELF");
  core::PluginManager pm;
  auto r = pm.load(dir + "/fake.so");
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("not a shared library: the file (21 bytes) does not start with the ELF header") !=
        std::string::npos);
  CHECK(r.reason.find("iostream") == std::string::npos);
}

TEST_CASE("another SDK ABI version is refused with both versions") {
  core::PluginManager pm;
  auto r = pm.load(lib("wrong_abi"));
  CHECK_FALSE(r.loaded);
  const auto expected = std::to_string(YOLOFLOW_SDK_ABI_VERSION);
  const auto found = std::to_string(YOLOFLOW_SDK_ABI_VERSION + 41);
  CHECK(r.reason.find("SDK ABI version mismatch") != std::string::npos);
  CHECK(r.reason.find("host expects " + expected) != std::string::npos);
  CHECK(r.reason.find("built with " + found) != std::string::npos);
}

TEST_CASE("another LibTorch version is refused with both versions") {
  core::PluginManager pm;
  auto r = pm.load(lib("wrong_torch"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("LibTorch version mismatch") != std::string::npos);
  CHECK(r.reason.find("host uses " + core::HostAbi::current().torch_version) != std::string::npos);
  CHECK(r.reason.find("built with 0.4.1") != std::string::npos);
}

TEST_CASE("another C++ ABI is refused with both values") {
  core::PluginManager pm;
  pm.expected.cxx11_abi = core::HostAbi::current().cxx11_abi == 1 ? 0 : 1;
  auto r = pm.load(lib("good"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("C++ ABI mismatch") != std::string::npos);
  CHECK(r.reason.find("_GLIBCXX_USE_CXX11_ABI=" + std::to_string(pm.expected.cxx11_abi)) !=
        std::string::npos);
}

TEST_CASE("a missing symbol is refused naming the symbol, in the loader's words only") {
  core::PluginManager pm;
  auto r = pm.load(lib("missing_symbol"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("cannot be loaded: undefined symbol yoloflow_test_function_nobody_defines") != std::string::npos);
  CHECK(r.reason.find("Bad file descriptor") == std::string::npos);
  CHECK(r.reason.find("boost") == std::string::npos);
}

TEST_CASE("a plugin built with the old libstdc++ string ABI gets the C++ ABI message, not an undefined symbol") {
  // It cannot be bound (its std::string calls name host functions that do not exist), but its
  // descriptor is read all the same and says why.
  core::PluginManager pm;
  auto r = pm.load(lib("old_cxx_abi"));
  CHECK_FALSE(r.loaded);
  INFO(r.reason);
  CHECK(r.reason.find("C++ ABI mismatch: host uses _GLIBCXX_USE_CXX11_ABI=1, plugin was built with 0") != std::string::npos);
  CHECK(pm.registry().find(Kind::Augmentation, "test_old_abi_invert") == nullptr);
}

TEST_CASE("a duplicate name is refused naming both files") {
  core::PluginManager pm;
  REQUIRE(pm.load(lib("good")).loaded);
  auto r = pm.load(lib("duplicate"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason.find("duplicate augmentation 'test_invert'") != std::string::npos);
  CHECK(r.reason.find(lib("good")) != std::string::npos);
  CHECK(r.reason.find(lib("duplicate")) != std::string::npos);
  // The first registration is untouched.
  CHECK(pm.registry().find(Kind::Augmentation, "test_invert")->file == lib("good"));
}

TEST_CASE("a throwing constructor becomes an error naming the plugin and the node") {
  core::PluginManager pm;
  REQUIRE(pm.load(lib("throwing")).loaded);
  try {
    pm.registry().create(Kind::Augmentation, "test_throwing", "stages.augment");
    FAIL("expected an error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("stages.augment") != std::string::npos);
    CHECK(what.find("test_throwing") != std::string::npos);
    CHECK(what.find("failed on purpose") != std::string::npos);
  }
}

TEST_CASE("`plugins` lists refused libraries with their reasons and exits 0; --strict exits 3, as the docs say") {
  // Listing is what the command is for: refused libraries are part of the answer.
  auto r = test::run_cli("--plugin-path " + test_plugin_dir("wrong_abi") + " plugins");
  INFO(r.output);
  CHECK(r.exit_code == kExitOk);
  CHECK(r.output.find("Refused:") != std::string::npos);
  CHECK(r.output.find("SDK ABI version mismatch") != std::string::npos);
  auto strict = test::run_cli("--plugin-path " + test_plugin_dir("wrong_abi") + " plugins --strict");
  INFO(strict.output);
  CHECK(strict.exit_code == kExitPluginError);
  CHECK(strict.output.find("SDK ABI version mismatch") != std::string::npos);
  CHECK(strict.output.find("error: a plugin library was refused (listed above; --strict)") != std::string::npos);
  auto clean = test::run_cli("--plugin-path " + test_plugin_dir("good") + " plugins --strict");
  CHECK(clean.exit_code == kExitOk);
  // Older scripts' flag still works (it is the default now).
  auto allowed = test::run_cli("--plugin-path " + test_plugin_dir("wrong_abi") + " plugins --allow-refused");
  CHECK(allowed.exit_code == kExitOk);

  // docs/troubleshooting.md's exit code table says so.
  const std::string docs = test::read_file(std::string(YOLOFLOW_SOURCE_DIR) + "/docs/troubleshooting.md");
  const auto row = docs.find("\n| 3 | ");
  REQUIRE(row != std::string::npos);
  const std::string line = docs.substr(row + 1, docs.find('\n', row + 1) - row - 1);
  INFO(line);
  CHECK(line.find("`yoloflow plugins --strict`") != std::string::npos);
  CHECK(line.find("`yoloflow plugins` itself exits 0") != std::string::npos);
  CHECK(docs.find("no command returns it") == std::string::npos);
}

TEST_CASE("--plugin-path also takes one plugin library") {
  auto r = test::run_cli("--plugin-path " + test_plugin_dir("good") + "/yoloflow_test_good.so plugins");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("test_invert") != std::string::npos);
  CHECK(r.output.find("does not exist") == std::string::npos);
}

TEST_CASE("YOLOFLOW_PLUGIN_PATH adds a plugin folder") {
  auto r = test::run_cli("plugins", "YOLOFLOW_PLUGIN_PATH=" + test_plugin_dir("good") + " ");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("test_invert") != std::string::npos);
}
