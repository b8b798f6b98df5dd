#pragma once
// Reading a file a user names, bounded, the one way yoloflow and its plugins read them: only a
// regular file (a named pipe would block forever, /dev/zero never ends, a folder is no file),
// checked again on the descriptor it is read through (a path swapped for a pipe after the
// check is refused too), and never more bytes than its kind of file may hold. A list (an
// image list) is read a block at a time, so memory stays at one line whatever the file holds.
//
// Messages are "<name> <why>", `name` being what the file is to the user ("weights file
// 'x.pt'", "data.yaml 'd.yaml'") and `why` one of: "does not exist", "is a loop of symbolic
// links", "is not a regular file (a named pipe)" (a folder, a character device, a block device,
// a socket), "cannot be read (permission denied)", "holds N bytes, more than the M bytes a
// label file may hold", "holds N bytes, more than this machine's memory".
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "yoloflow/export.h"

namespace yoloflow {

// How many bytes one kind of file may hold, and the kind in words ("a label file").
struct FileBudget {
  std::uint64_t max_bytes;
  const char* kind;
};

// Far above any real file of the kind, far below what would exhaust memory. A weights file is
// also never read when it is larger than the machine's memory.
inline constexpr FileBudget kPipelineFileBudget{std::uint64_t{16} << 20, "a pipeline file"};
inline constexpr FileBudget kDataYamlBudget{std::uint64_t{64} << 20, "a data.yaml"};
inline constexpr FileBudget kLabelFileBudget{std::uint64_t{64} << 20, "a label file"};
// 1 GiB: twice what the largest image decoded (179 megapixels, 8-bit RGB) takes uncompressed.
inline constexpr FileBudget kImageFileBudget{std::uint64_t{1} << 30, "an image file"};
inline constexpr FileBudget kWeightsFileBudget{std::uint64_t{256} << 30, "a weights file"};

// A list read line by line: the longest line and the most lines it may have.
struct LineBudget {
  std::size_t max_line_bytes;
  std::size_t max_lines;
  const char* kind;
};

// An image list names one path per line (PATH_MAX is 4096); ten million images is several
// times the largest public detection dataset.
inline constexpr LineBudget kImageListBudget{4096, 10'000'000, "an image list"};
// A label line is a box (5 numbers) or a polygon of up to ~40000 points.
inline constexpr LineBudget kLabelLineBudget{std::size_t{1} << 20, 4'000'000, "a label file"};

// Why `path` leads nowhere: "does not exist", "is a loop of symbolic links", "cannot be read
// (permission denied)"; "" when it names something (of any type; symbolic links followed).
YOLOFLOW_SDK_API std::string unreachable_path(const std::string& path);

// Why `path` cannot be read as a file of `budget`'s kind (the words after its name, see
// above); "" when it can.
YOLOFLOW_SDK_API std::string file_refusal(const std::string& path, const FileBudget& budget);

// The whole file. Throws InvalidInput "<name> <why>" when it cannot be read as above, or
// shrinks while it is read.
YOLOFLOW_SDK_API std::string read_user_file(const std::string& path, const FileBudget& budget,
                                            const std::string& name);

// As read_user_file, without throwing: false with `why` set (the words after the file's name).
YOLOFLOW_SDK_API bool try_read_user_file(const std::string& path, const FileBudget& budget, std::string& bytes,
                                         std::string& why);

// Up to `count` bytes from `offset` (fewer at the end of the file), of a file that passes
// file_refusal(path, budget). False with `why` set otherwise. For headers: never more is read.
YOLOFLOW_SDK_API bool read_user_file_part(const std::string& path, const FileBudget& budget, std::uint64_t offset,
                                          std::size_t count, std::string& bytes, std::string& why);

// Calls `line` with each line of `path` (without its end of line and surrounding blanks; blank
// lines too) and its number from 1, reading a block at a time; `line` returns false to stop.
// Throws InvalidInput "<name> <why>" when the file cannot be read (as read_user_file, without a
// size limit), when a line is longer than budget.max_line_bytes ("has a line N longer than 4096
// bytes: it is not <kind>") or there are more than budget.max_lines lines.
YOLOFLOW_SDK_API void for_each_line(const std::string& path, const LineBudget& budget, const std::string& name,
                                    const std::function<bool(const std::string& line, std::size_t number)>& line);

}  // namespace yoloflow
