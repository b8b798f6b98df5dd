#include "runtime/util/file_checks.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "yoloflow/error.h"

namespace fs = std::filesystem;

namespace yoloflow::core {

std::string not_a_regular_file(const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return ec == std::errc::too_many_symbolic_link_levels ? "a loop of symbolic links" : "not readable (" + ec.message() + ")";
  }
  switch (st.type()) {
    case fs::file_type::regular: return "";
    case fs::file_type::not_found: return "no such file";
    case fs::file_type::directory: return "a folder, not a file";
    case fs::file_type::fifo: return "a named pipe, not a regular file";
    case fs::file_type::socket: return "a socket, not a regular file";
    case fs::file_type::character: return "a character device, not a regular file";
    case fs::file_type::block: return "a block device, not a regular file";
    default: return "not a regular file";
  }
}

std::string read_regular_file(const std::string& path, std::uintmax_t max_bytes, const std::string& what) {
  const std::string kind = not_a_regular_file(path);
  if (!kind.empty()) throw InvalidInput(what + " '" + path + "': " + kind);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw InvalidInput(what + " '" + path + "': cannot read it (" + ec.message() + ")");
  if (size > max_bytes) {
    throw InvalidInput(what + " '" + path + "': it holds " + std::to_string(size) + " bytes, more than the " +
                       std::to_string(max_bytes) + " such a file may have");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(what + " '" + path + "': cannot open it (" + std::strerror(errno) + ")");
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

}  // namespace yoloflow::core
