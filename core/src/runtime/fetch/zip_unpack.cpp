#include "runtime/fetch/zip_unpack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#ifdef YOLOFLOW_WITH_ZLIB
#include <zlib.h>
#endif

#include "runtime/util/remove_tree.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

#ifndef YOLOFLOW_WITH_ZLIB

bool unzip_available() { return false; }

void check_zip(const std::string& zip_path, const ZipLimits&) {
  throw InvalidInput(zip_path + ": this build of yoloflow cannot unpack zip archives (it was built without zlib)");
}

ZipSummary unzip_to_folder(const std::string& zip_path, const std::string& folder, const ZipLimits&) {
  throw InvalidInput(zip_path + ": this build of yoloflow cannot unpack zip archives (it was built without zlib); "
                     "unpack it into " + folder + " by hand");
}

#else

namespace {

namespace fs = std::filesystem;

std::uint32_t u16(const unsigned char* p) { return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8); }
std::uint32_t u32(const unsigned char* p) { return u16(p) | (u16(p + 2) << 16); }

struct Entry {
  std::string name;
  std::uint32_t method = 0, flags = 0, crc = 0;
  std::uint64_t packed = 0, size = 0, local_offset = 0;
  bool folder = false;
};

class Archive {
 public:
  explicit Archive(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw InvalidInput(path + ": cannot open the archive");
    in_.seekg(0, std::ios::end);
    size_ = static_cast<std::uint64_t>(in_.tellg());
  }
  std::uint64_t size() const { return size_; }
  // Exactly n bytes at `offset`, or a refusal naming the archive as truncated.
  std::vector<unsigned char> read(std::uint64_t offset, std::uint64_t n) {
    if (offset > size_ || n > size_ - offset) throw InvalidInput(path_ + ": not a complete zip archive (truncated)");
    std::vector<unsigned char> buf(static_cast<std::size_t>(n));
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(n));
    if (!in_) throw InvalidInput(path_ + ": cannot read the archive");
    return buf;
  }
  std::ifstream& stream() { return in_; }

 private:
  std::string path_;
  std::ifstream in_;
  std::uint64_t size_ = 0;
};

// The end-of-central-directory record sits in the last 64 kB + 22 bytes (its comment is at
// most 65535 bytes).
std::vector<Entry> central_directory(Archive& a, const std::string& zip, const ZipLimits& limits) {
  const std::uint64_t tail = std::min<std::uint64_t>(a.size(), 65535 + 22);
  if (tail < 22) throw InvalidInput(zip + ": not a zip archive (too short)");
  const auto buf = a.read(a.size() - tail, tail);
  std::int64_t eocd = -1;
  for (std::int64_t i = static_cast<std::int64_t>(tail) - 22; i >= 0; --i) {
    if (u32(&buf[static_cast<std::size_t>(i)]) == 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw InvalidInput(zip + ": not a zip archive (no central directory; a cut download?)");
  const unsigned char* e = &buf[static_cast<std::size_t>(eocd)];
  const std::uint64_t count = u16(e + 10), dir_size = u32(e + 12), dir_offset = u32(e + 16);
  if (count == 0xffff || dir_size == 0xffffffff || dir_offset == 0xffffffff) {
    throw InvalidInput(zip + ": a zip64 archive, which yoloflow does not unpack; unpack it by hand");
  }
  if (count > limits.max_entries) throw InvalidInput(zip + ": " + std::to_string(count) + " entries, more than allowed");
  const auto dir = a.read(dir_offset, dir_size);
  std::vector<Entry> entries;
  std::size_t p = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (p + 46 > dir.size() || u32(&dir[p]) != 0x02014b50) throw InvalidInput(zip + ": a damaged central directory");
    const unsigned char* h = &dir[p];
    Entry en;
    const std::uint32_t made_by = u16(h + 4);
    en.flags = u16(h + 8);
    en.method = u16(h + 10);
    en.crc = u32(h + 16);
    en.packed = u32(h + 20);
    en.size = u32(h + 24);
    const std::size_t name_len = u16(h + 28), extra_len = u16(h + 30), comment_len = u16(h + 32);
    const std::uint32_t external = u32(h + 38);
    en.local_offset = u32(h + 42);
    if (p + 46 + name_len + extra_len + comment_len > dir.size()) throw InvalidInput(zip + ": a damaged central directory");
    en.name.assign(reinterpret_cast<const char*>(h + 46), name_len);
    p += 46 + name_len + extra_len + comment_len;
    const std::string what = zip + ": entry '" + en.name + "'";
    if (en.packed == 0xffffffff || en.size == 0xffffffff || en.local_offset == 0xffffffff) {
      throw InvalidInput(what + " is zip64, which yoloflow does not unpack; unpack the archive by hand");
    }
    // Unix permissions in the high half of the external attributes (made on Unix: 3).
    const std::uint32_t mode = external >> 16;
    if ((made_by >> 8) == 3 && (mode & 0170000) == 0120000) throw InvalidInput(what + " is a symbolic link; refused");
    if (en.flags & 1) throw InvalidInput(what + " is encrypted; refused");
    if (en.name.empty() || en.name.front() == '/' || en.name.front() == '\\' || en.name.find('\\') != std::string::npos ||
        (en.name.size() > 1 && en.name[1] == ':') || en.name.find('\0') != std::string::npos) {
      throw InvalidInput(what + " has an absolute or unusual path; refused");
    }
    for (const auto& part : fs::path(en.name)) {
      if (part == "..") throw InvalidInput(what + " would land outside the folder ('..'); refused");
    }
    en.folder = en.name.back() == '/';
    if (!en.folder && en.method != 0 && en.method != 8) {
      throw InvalidInput(what + " uses compression method " + std::to_string(en.method) + " (only stored and deflate)");
    }
    if (en.size > limits.max_entry_bytes) {
      throw InvalidInput(what + " declares " + std::to_string(en.size) + " bytes unpacked, more than allowed; refused");
    }
    if (en.size > (1u << 20) && en.size / std::max<std::uint64_t>(en.packed, 1) > limits.max_ratio) {
      throw InvalidInput(what + " would unpack " + std::to_string(en.size) + " bytes from " + std::to_string(en.packed) +
                         " (a decompression bomb?); refused");
    }
    if (en.method == 0 && en.packed != en.size) throw InvalidInput(what + ": stored with two different sizes");
    entries.push_back(std::move(en));
  }
  std::uint64_t total = 0;
  for (const auto& en : entries) total += en.size;
  if (total > limits.max_total_bytes) {
    throw InvalidInput(zip + ": declares " + std::to_string(total) + " bytes unpacked in all, more than allowed; refused");
  }
  return entries;
}

// Writes one entry to `target`, inflating it when deflated, never past its declared size.
void write_entry(Archive& a, const Entry& en, const std::string& zip, const std::string& target) {
  const std::string what = zip + ": entry '" + en.name + "'";
  const auto local = a.read(en.local_offset, 30);
  if (u32(local.data()) != 0x04034b50) throw InvalidInput(what + ": a damaged local header");
  const std::uint64_t data = en.local_offset + 30 + u16(&local[26]) + u16(&local[28]);
  if (data > a.size() || en.packed > a.size() - data) throw InvalidInput(what + ": truncated");
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write " + target + ": " + std::strerror(errno));
  std::uint64_t written = 0;
  uLong crc = crc32(0L, Z_NULL, 0);
  auto emit = [&](const unsigned char* p, std::size_t n) {
    if (written + n > en.size) throw InvalidInput(what + " unpacks to more than its declared size; refused");
    crc = crc32(crc, p, static_cast<uInt>(n));
    written += n;
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error("cannot write " + target + ": " + std::strerror(errno));
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  };
  z_stream z{};
  bool inflating = false;
  try {
    auto& in = a.stream();
    in.seekg(static_cast<std::streamoff>(data));
    std::vector<unsigned char> packed(1 << 16), plain(1 << 16);
    std::uint64_t left = en.packed;
    if (en.method == 8) {
      if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw Error(what + ": zlib could not start");
      inflating = true;
    }
    bool ended = false;
    while (left > 0 && !ended) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, packed.size()));
      in.read(reinterpret_cast<char*>(packed.data()), static_cast<std::streamsize>(n));
      if (!in) throw InvalidInput(what + ": truncated");
      left -= n;
      if (en.method == 0) {
        emit(packed.data(), n);
        continue;
      }
      z.next_in = packed.data();
      z.avail_in = static_cast<uInt>(n);
      while (z.avail_in > 0 && !ended) {
        z.next_out = plain.data();
        z.avail_out = static_cast<uInt>(plain.size());
        const int rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) throw InvalidInput(what + ": damaged compressed data");
        emit(plain.data(), plain.size() - z.avail_out);
        ended = rc == Z_STREAM_END;
      }
    }
    // Output zlib still holds once all input is in.
    while (inflating && !ended) {
      z.next_out = plain.data();
      z.avail_out = static_cast<uInt>(plain.size());
      const int rc = inflate(&z, Z_FINISH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) throw InvalidInput(what + ": damaged compressed data");
      emit(plain.data(), plain.size() - z.avail_out);
      ended = rc == Z_STREAM_END;
      if (rc == Z_BUF_ERROR) break;
    }
    if (written != en.size) {
      throw InvalidInput(what + " unpacks to " + std::to_string(written) + " bytes, not its declared " +
                         std::to_string(en.size) + "; refused");
    }
    if (crc != en.crc) throw InvalidInput(what + ": CRC-32 mismatch (a damaged archive)");
  } catch (...) {
    if (inflating) inflateEnd(&z);
    ::close(fd);
    throw;
  }
  if (inflating) inflateEnd(&z);
  if (::close(fd) != 0) throw Error("cannot write " + target + ": " + std::strerror(errno));
}

}  // namespace

bool unzip_available() { return true; }

void check_zip(const std::string& zip_path, const ZipLimits& limits) {
  Archive archive(zip_path);
  central_directory(archive, zip_path, limits);
}

ZipSummary unzip_to_folder(const std::string& zip_path, const std::string& folder, const ZipLimits& limits) {
  Archive archive(zip_path);
  // Every entry is checked before the first byte is written.
  const std::vector<Entry> entries = central_directory(archive, zip_path, limits);
  std::error_code ec;
  if (fs::exists(folder, ec)) throw InvalidInput(folder + " already exists; not unpacking " + zip_path + " over it");
  const fs::path parent = fs::path(folder).parent_path();
  fs::create_directories(parent, ec);
  if (ec) throw Error("cannot create " + parent.string() + ": " + ec.message());
  std::random_device rd;
  const std::string temp = folder + ".unpacking-" + std::to_string(rd() % 1000000);
  fs::create_directory(temp, ec);
  if (ec) throw Error("cannot create " + temp + ": " + ec.message());
  ZipSummary summary;
  try {
    for (const auto& en : entries) {
      const fs::path target = fs::path(temp) / fs::path(en.name).relative_path();
      if (en.folder) {
        fs::create_directories(target, ec);
        if (ec) throw Error("cannot create " + target.string() + ": " + ec.message());
        continue;
      }
      fs::create_directories(target.parent_path(), ec);
      if (ec) throw Error("cannot create " + target.parent_path().string() + ": " + ec.message());
      write_entry(archive, en, zip_path, target.string());
      ++summary.files;
      summary.bytes += en.size;
    }
    fs::rename(temp, folder, ec);
    if (ec) throw Error("cannot rename " + temp + " to " + folder + ": " + ec.message());
  } catch (...) {
    remove_tree(temp);
    throw;
  }
  return summary;
}

#endif

}  // namespace yoloflow::core
