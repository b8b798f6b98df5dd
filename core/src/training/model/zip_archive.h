#pragma once
// The zip archives PyTorch writes (torch.save, torch::pickle_save): entries stored without
// compression, zip64 when large. Read from bytes already in memory, every size and offset in
// the archive checked against what the bytes hold before it is used, and every entry's CRC-32
// verified when the archive is opened (LibTorch's reader skips the check, so a corrupted
// weight would load silently). Torch-free: it only handles bytes.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace yoloflow::core {

// What is wrong with an archive, as a phrase to follow the file's name: "is truncated: ...",
// "is damaged: ...".
struct ZipError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ZipEntry {
  std::string name;
  std::uint64_t data_offset = 0;  // where its bytes start in the archive
  std::uint64_t size = 0;
  std::uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  // Parses the central directory and checks every entry (bounds, names, CRC-32). Throws
  // ZipError. `bytes` must outlive the archive.
  explicit ZipArchive(std::string_view bytes);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  std::string_view data(const ZipEntry& entry) const;

 private:
  std::string_view bytes_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, std::size_t> index_;  // name -> position in entries_
};

// Whether `bytes` start as a zip archive does (a local file header, or the end record of an
// empty archive).
bool starts_like_zip(std::string_view bytes);

// CRC-32 (ISO-HDLC, the zip one) of `bytes`.
std::uint32_t crc32_of(std::string_view bytes);

}  // namespace yoloflow::core
