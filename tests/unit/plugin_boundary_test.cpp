// The plugin boundary under bad input: folders the loader cannot walk, library files that are
// truncated or not libraries for this host, descriptors that are data or point anywhere, and
// schemas whose defaults their own ranges refuse. Each is refused (or skipped) with one line
// naming what is wrong, and the host does not crash: a crash would end this test binary.
#include <doctest/doctest.h>

#include <elf.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/pipeline/component_spec.h"
#include "runtime/plugin/descriptor_check.h"
#include "runtime/plugin/library_mapping.h"
#include "runtime/plugin/plugin_manager.h"
#include "runtime/plugin/schema_defaults.h"
#include "support/paths.h"
#include "support/run_cli.h"
#include "yoloflow/error.h"

using namespace yoloflow;
using yoloflow::test::test_plugin_dir;

namespace fs = std::filesystem;

namespace {

std::string lib(const std::string& c) { return test_plugin_dir(c) + "/yoloflow_test_" + c + ".so"; }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What the user must never see instead of a sentence about their file.
void check_no_internals(const std::string& text) {
  CHECK_FALSE(contains(text, "filesystem error"));
  CHECK_FALSE(contains(text, "iostream"));
  CHECK_FALSE(contains(text, "basic_ios"));
  CHECK_FALSE(contains(text, "bad_alloc"));
  CHECK_FALSE(contains(text, "boost"));
}

std::string refusal(const std::string& path) {
  core::PluginManager pm;
  const auto r = pm.load(path);
  CHECK_FALSE(r.loaded);
  CHECK(r.components.empty());
  check_no_internals(r.reason);
  return r.reason;
}

// A copy of `from` at `to` with `bytes` written at `offset` (a damaged header), or cut to `size`.
void patched_copy(const std::string& from, const std::string& to, std::size_t offset, const std::vector<unsigned char>& bytes) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  std::fstream f(to, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

void truncated_copy(const std::string& from, const std::string& to, std::uintmax_t size) {
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  fs::resize_file(to, size);
}

// A descriptor's strings side by side, the name last: version, torch_version, name.
const char kStrings[] = "1.0.0\0none\0in_memory";
const char* const kName = kStrings + 11;

// The host's own descriptor layout as YOLOFLOW_PLUGIN fills it, its strings in kStrings.
yoloflow_plugin_descriptor_t descriptor_with(void (*reg)(Registrar&)) {
  return {YOLOFLOW_SDK_ABI_VERSION, static_cast<std::uint32_t>(sizeof(yoloflow_plugin_descriptor_t)),
          kName, kStrings, YOLOFLOW_VERSION_STRING, kStrings + 6, -1, "test", reg};
}

core::MappedSegment segment(const void* begin, std::size_t size, bool executable = false) {
  core::MappedSegment s;
  s.begin = reinterpret_cast<std::uintptr_t>(begin);
  s.end = s.begin + size;
  s.readable = true;
  s.executable = executable;
  return s;
}

void register_nothing(Registrar&) {}

}  // namespace

// ---------------------------------------------------------------- plugin folders

TEST_CASE("a symbolic link loop in a plugin folder is skipped with a warning naming it; the rest loads") {
  const auto dir = test::temp_dir("plugin-loop");
  fs::create_symlink("loop.so", dir + "/loop.so");  // points at itself
  fs::create_symlink(dir + "/nowhere.so.target", dir + "/dangling.so");
  fs::copy_file(lib("good"), dir + "/good.so");
  for (const char* command : {"plugins", "describe test_invert"}) {
    CAPTURE(command);
    const auto r = test::run_cli("--plugin-path " + dir + " " + command);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.output, "test_invert"));
    CHECK(contains(r.output, "plugin folder " + dir + ": skipped loop.so: a symbolic link loop (too many levels of symbolic links)"));
    CHECK(contains(r.output, "skipped dangling.so: a symbolic link to nothing (its target does not exist)"));
    check_no_internals(r.output);
  }
  core::PluginManager pm;
  pm.add_search_dir(dir);
  pm.load_all();  // does not throw
  CHECK(pm.registry().find(Kind::Augmentation, "test_invert") != nullptr);
  test::remove_tree(dir);
}

TEST_CASE("a plugin folder that cannot be read is skipped with a warning, and the other folders load") {
  const auto dir = test::temp_dir("plugin-unreadable");
  fs::create_symlink("looped", dir + "/looped");  // a folder path that is a loop
  const auto r = test::run_cli("--plugin-path " + dir + "/looped --plugin-path " + test_plugin_dir("good") + " plugins");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "plugin folder " + dir + "/looped cannot be read (a symbolic link loop (too many levels of "
                           "symbolic links)); skipped"));
  CHECK(contains(r.output, "test_invert"));
  check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("a folder and a library the process may not read are skipped or refused, naming them") {
  // Permissions do not stop root: the CLI then runs as the unprivileged user `nobody`.
  std::string as_user;
  if (::geteuid() == 0) {
    if (test::run_shell("command -v setpriv").exit_code != 0) {
      MESSAGE("running as root without setpriv: permissions cannot be tested here");
      return;
    }
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  const auto dir = test::temp_dir("plugin-permissions");
  fs::create_directories(dir + "/locked");
  fs::copy_file(lib("good"), dir + "/locked/good.so");
  fs::permissions(dir + "/locked", fs::perms::none);
  fs::create_directories(dir + "/open");
  fs::copy_file(lib("good"), dir + "/open/unreadable.so");
  fs::permissions(dir + "/open/unreadable.so", fs::perms::none);
  const auto r = test::run_shell(as_user + test::cli() + " --plugin-path " + dir + "/locked --plugin-path " + dir +
                                 "/open --plugin-path " + test_plugin_dir("good") + " plugins");
  fs::permissions(dir + "/locked", fs::perms::owner_all);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "plugin folder " + dir + "/locked cannot be read (permission denied); skipped"));
  CHECK(contains(r.output, dir + "/open/unreadable.so: cannot be read: Permission denied"));
  CHECK(contains(r.output, "test_invert"));
  check_no_internals(r.output);
  test::remove_tree(dir);
}

// ---------------------------------------------------------------- library files

TEST_CASE("a truncated plugin library is named as such, not as an iostream error") {
  const auto dir = test::temp_dir("plugin-truncated");
  const auto size = fs::file_size(lib("good"));
  truncated_copy(lib("good"), dir + "/half.so", size / 2);
  CHECK(refusal(dir + "/half.so") == "truncated or damaged ELF file: its section headers lie past the end of the file (" +
                                         std::to_string(size / 2) + " bytes)");
  truncated_copy(lib("good"), dir + "/header.so", 40);
  CHECK(refusal(dir + "/header.so") == "truncated or damaged ELF file: it ends inside its ELF header (40 bytes)");

  const auto r = test::run_cli("--plugin-path " + dir + " plugins");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "Refused:"));
  CHECK(contains(r.output, dir + "/half.so: truncated or damaged ELF file: its section headers lie past the end of the file"));
  check_no_internals(r.output);
  test::remove_tree(dir);
}

TEST_CASE("an ELF file for another machine, class or type is refused saying which") {
  const auto dir = test::temp_dir("plugin-foreign-elf");
  patched_copy(lib("good"), dir + "/elf32.so", EI_CLASS, {ELFCLASS32});
  CHECK(refusal(dir + "/elf32.so") == "not a library for this host: a 32-bit ELF file; this host loads 64-bit libraries");
  patched_copy(lib("good"), dir + "/exec.so", offsetof(Elf64_Ehdr, e_type), {ET_EXEC, 0});
  CHECK(refusal(dir + "/exec.so") == "not a shared library: an executable; build the plugin with yoloflow_add_plugin");
#if defined(__x86_64__)
  patched_copy(lib("good"), dir + "/arm.so", offsetof(Elf64_Ehdr, e_machine), {EM_AARCH64, 0});
  CHECK(refusal(dir + "/arm.so") == "not a library for this host: built for AArch64, this host is x86-64");
#endif
  // Section headers said to be far past the end of a whole file.
  patched_copy(lib("good"), dir + "/shoff.so", offsetof(Elf64_Ehdr, e_shoff), {0, 0, 0, 0, 0, 0, 0, 0x40});
  CHECK(contains(refusal(dir + "/shoff.so"), "truncated or damaged ELF file: its section headers lie past the end of the file"));
  test::remove_tree(dir);
}

// ---------------------------------------------------------------- descriptors

TEST_CASE("a descriptor exported as a data object is refused before it is called") {
  CHECK(refusal(lib("bad_descriptor_data_symbol")) ==
        "not a yoloflow plugin: its 'yoloflow_plugin_descriptor' symbol is a data object, not a function (define the "
        "descriptor with YOLOFLOW_PLUGIN)");
}

TEST_CASE("a descriptor function returning a pointer outside its library is refused before it is read") {
  CHECK(refusal(lib("bad_descriptor_tiny_pointer")) ==
        "its descriptor function returned a pointer (0x10) outside the library's memory; rebuild the plugin with the "
        "SDK's YOLOFLOW_PLUGIN macro");
  for (const char* variant : {"heap_pointer", "stack_pointer", "past_end"}) {
    CAPTURE(variant);
    const auto reason = refusal(lib(std::string("bad_descriptor_") + variant));
    CHECK(contains(reason, "its descriptor function returned a pointer (0x"));
    CHECK(contains(reason, ") outside the library's memory; rebuild the plugin with the SDK's YOLOFLOW_PLUGIN macro"));
  }
  const auto r = test::run_cli("--plugin-path " + test_plugin_dir("bad_descriptor_heap_pointer") + " plugins --strict");
  INFO(r.output);
  CHECK(r.exit_code == kExitPluginError);
  CHECK(contains(r.output, "outside the library's memory"));
}

TEST_CASE("a descriptor with a null or foreign string or register function names the field") {
  const std::string rebuild = "; rebuild the plugin with the SDK's YOLOFLOW_PLUGIN macro";
  CHECK(refusal(lib("bad_descriptor_null_torch")) ==
        "its descriptor names no LibTorch version (torch_version is null)" + rebuild);
  CHECK(refusal(lib("bad_descriptor_null_name")) == "its descriptor names no plugin name (name is null)" + rebuild);
  CHECK(refusal(lib("bad_descriptor_null_version")) == "its descriptor names no plugin version (version is null)" + rebuild);
  const auto foreign = refusal(lib("bad_descriptor_foreign_name"));
  CHECK(contains(foreign, "its descriptor's name (0x"));
  CHECK(contains(foreign, ") points outside the library's memory" + rebuild));
  const auto reg = refusal(lib("bad_descriptor_register_outside_code"));
  CHECK(contains(reg, "its descriptor's register function (0x"));
  CHECK(contains(reg, ") is not in the library's code" + rebuild));
}

TEST_CASE("descriptor checks: a descriptor or string running past the library's memory is refused") {
  const core::HostAbi host{YOLOFLOW_SDK_ABI_VERSION, "none", -1};
  yoloflow_plugin_descriptor_t d = descriptor_with(&register_nothing);
  const auto code = reinterpret_cast<const void*>(&register_nothing);
  SUBCASE("all of it inside the library: accepted") {
    const core::LibraryMapping m({segment(&d, sizeof(d)), segment(kStrings, sizeof(kStrings)), segment(code, 1, true)});
    const auto checked = core::check_descriptor(&d, m, host);
    CHECK(checked.problem.empty());
    CHECK(checked.name == "in_memory");
    CHECK(checked.version == "1.0.0");
  }
  SUBCASE("its last byte outside") {
    const core::LibraryMapping m({segment(&d, sizeof(d) - 1), segment(kStrings, sizeof(kStrings)), segment(code, 1, true)});
    CHECK(core::check_descriptor(&d, m, host).problem ==
          "its descriptor (" + core::pointer_text(&d) + ", " + std::to_string(sizeof(d)) +
              " bytes) runs past the end of the library's memory; rebuild the plugin with the SDK's YOLOFLOW_PLUGIN macro");
  }
  SUBCASE("a name whose terminator lies outside") {
    const core::LibraryMapping m({segment(&d, sizeof(d)), segment(kStrings, sizeof(kStrings) - 1), segment(code, 1, true)});
    CHECK(core::check_descriptor(&d, m, host).problem ==
          "its descriptor's name (" + core::pointer_text(kName) +
              ") is not NUL-terminated inside the library's memory; rebuild the plugin with the SDK's YOLOFLOW_PLUGIN macro");
  }
  SUBCASE("another SDK ABI is refused before anything past the version fields is read") {
    d.abi_version = YOLOFLOW_SDK_ABI_VERSION + 1;
    const core::LibraryMapping m({segment(&d, 8)});
    CHECK(contains(core::check_descriptor(&d, m, host).problem, "SDK ABI version mismatch"));
  }
}

// ---------------------------------------------------------------- defaults

TEST_CASE("a library whose default lies outside its own range is refused at load, naming all of it") {
  core::PluginManager pm;
  const auto r = pm.load(lib("bad_default"));
  CHECK_FALSE(r.loaded);
  CHECK(r.reason ==
        "plugin 'test_bad_default': augmentation 'test_bad_default' declares parameter 'p' with default 1.5, which its "
        "own schema refuses: 1.5 is out of range: expected float in [0, 1]");
  CHECK(pm.registry().find(Kind::Augmentation, "test_bad_default") == nullptr);

  for (const char* command : {"plugins", "describe test_bad_default"}) {
    CAPTURE(command);
    const auto cli = test::run_cli("--plugin-path " + test_plugin_dir("bad_default") + " " + command);
    INFO(cli.output);
    CHECK(contains(cli.output, "declares parameter 'p' with default 1.5, which its own schema refuses"));
  }
  const auto describe = test::run_cli("--plugin-path " + test_plugin_dir("bad_default") + " describe test_bad_default");
  CHECK(describe.exit_code != 0);
}

TEST_CASE("default_problems: every kind of default a schema refuses, and none for good ones") {
  ComponentInfo info;
  info.kind = Kind::Augmentation;
  info.name = "x";
  info.schema.add_float("p", 0.5).range(0.0, 1.0);
  info.schema.add_string("data").required();  // no default: nothing to check
  info.schema.add_int("n");                    // no default, not required
  CHECK(core::default_problems(info).empty());

  info.schema.add_enum("mode", {"a", "b"}, "c");
  info.schema.add_int("count", 3).min(4);
  info.schema.add_int_list("sizes", {1, 2, 3}).length(2, 2);
  info.schema.add("whole", ParamType::Int).default_value(2.5);
  info.schema.add_float("gain", 1.0).default_value(json{{"steps", {{"0", 2.0}}}}).max(1.5);
  const auto problems = core::default_problems(info);
  REQUIRE(problems.size() == 5);
  CHECK(contains(problems[0], "augmentation 'x' declares parameter 'mode' with default \"c\", which its own schema "
                              "refuses: \"c\" is not allowed: expected one of \"a\", \"b\""));
  CHECK(problems[1] == "augmentation 'x' declares parameter 'count' with default 3, which its own schema refuses: "
                       "3 is out of range: expected int >= 4");
  CHECK(contains(problems[2], "parameter 'sizes' with default [1,2,3], which its own schema refuses: has 3 elements: "
                              "expected list of 2 ints"));
  CHECK(contains(problems[3], "parameter 'whole' with default 2.5, which its own schema refuses: expected int"));
  CHECK(contains(problems[4], "parameter 'gain' with default {\"steps\":{\"0\":2.0}}, which its own schema refuses: "
                              "gain.steps.0: 2 is out of range"));
}

TEST_CASE("default_problems: a role given twice, or to a parameter that cannot hold it, is refused") {
  ComponentInfo info;
  info.kind = Kind::Source;
  info.name = "roles";
  info.schema.add_path("data").role(ParamRole::Dataset);
  info.schema.add_enum("split", {"train", "val"}, "train").role(ParamRole::Split);
  CHECK(core::default_problems(info).empty());
  info.schema.add_path("labels").role(ParamRole::Dataset);
  info.schema.add_int("fold", 0).role(ParamRole::ValidationSplit);
  info.schema.add_string("reader", "").role(ParamRole::ValidationSource);
  const auto problems = core::default_problems(info);
  REQUIRE(problems.size() == 3);
  CHECK(contains(problems[0], "source 'roles' declares parameter 'labels' as its dataset, which parameter 'data' is already"));
  CHECK(contains(problems[1], "declares parameter 'fold' as its validation split, which must be a string, path or enum parameter, not int"));
  CHECK(contains(problems[2], "declares parameter 'reader' as its validation source, which must be a component of kind source"));
}

TEST_CASE("every shipped and built-in component's defaults pass its own schema") {
  core::PluginManager pm;  // the build's plugin folder (next to the test binary's), and the host's own components
  for (const auto& r : pm.load_all()) {
    CAPTURE(r.path);
    CHECK_MESSAGE(r.loaded, r.reason);
  }
  int builtin = 0;
  for (const auto* rc : pm.registry().all()) {
    CAPTURE(rc->info.name);
    builtin += rc->file == "<built-in>";
    for (const auto& problem : core::default_problems(rc->info)) FAIL_CHECK(problem);
  }
  // Their component defaults (the train sink's model, optimizer, loss, ... from train-defaults.json)
  // name loaded plugins with parameters that fit.
  const core::RegistryComponentValidator validator(pm.registry());
  for (const auto* rc : pm.registry().all()) {
    CAPTURE(rc->info.name);
    Diagnostics found;
    validator.validate_defaults(rc->info.schema, json::object(), "params", found);
    for (const auto& d : found) FAIL_CHECK(d.path << ": " << d.message);
  }
  CHECK(builtin >= 5);  // train, validate, predict, train_batch_images, ema
  CHECK(pm.registry().find(Kind::Model, "yolo11") != nullptr);  // the shipped plugins were among them
}
