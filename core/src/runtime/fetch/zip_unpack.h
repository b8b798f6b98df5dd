#pragma once
// Unpacks a zip archive (the datasets Ultralytics publishes) into a folder: its central
// directory read, entries stored or deflated (zlib), each checked against its CRC-32. An
// archive is untrusted input: entries that would land outside the folder (absolute paths,
// `..`), symbolic links, encrypted or zip64 entries, and sizes past the bounds below are
// refused before anything is written.
#include <cstdint>
#include <string>

namespace yoloflow::core {

struct ZipLimits {
  std::uint64_t max_total_bytes = 64ull << 30;  // all entries unpacked together
  std::uint64_t max_entry_bytes = 16ull << 30;  // one entry
  std::uint64_t max_entries = 1u << 20;
  // Unpacked / packed, for entries larger than 1 MB: more is a decompression bomb.
  std::uint64_t max_ratio = 1000;
};

struct ZipSummary {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;  // unpacked
};

// Whether this build can unpack (it was built with zlib).
bool unzip_available();

// Reads the archive's central directory and checks every entry as unzip_to_folder does, writing
// nothing: a cut download or a hostile archive is refused before it is kept.
void check_zip(const std::string& zip_path, const ZipLimits& limits = {});

// Unpacks `zip_path` into `folder`, which must not exist yet: everything goes to a temporary
// folder beside it, renamed to `folder` once every entry is written and checked, so a cut or
// refused unpacking leaves no half folder. Throws InvalidInput in one line naming the archive
// (and the entry) on anything refused or unreadable.
ZipSummary unzip_to_folder(const std::string& zip_path, const std::string& folder, const ZipLimits& limits = {});

}  // namespace yoloflow::core
