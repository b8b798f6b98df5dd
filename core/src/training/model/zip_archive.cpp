// Zip records as PKWARE's APPNOTE.TXT describes them (sections 4.3.7 local file header,
// 4.3.12 central directory header, 4.3.14-4.3.16 the zip64 and plain end records, 4.5.3 the
// zip64 extended information extra field).
#include "training/model/zip_archive.h"

#include <algorithm>
#include <array>
#include <cstdio>

namespace yoloflow::core {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50;
constexpr std::uint32_t kCentralHeader = 0x02014b50;
constexpr std::uint32_t kEndRecord = 0x06054b50;
constexpr std::uint32_t kZip64EndRecord = 0x06064b50;
constexpr std::uint32_t kZip64Locator = 0x07064b50;
constexpr std::size_t kLocalHeaderSize = 30;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kEndRecordSize = 22;
constexpr std::size_t kZip64EndRecordSize = 56;
constexpr std::size_t kZip64LocatorSize = 20;
constexpr std::uint16_t kZip64Extra = 0x0001;

// Little-endian reads at `at`; callers check the bounds first.
std::uint64_t le(std::string_view b, std::uint64_t at, int n) {
  std::uint64_t v = 0;
  for (int k = 0; k < n; ++k) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[at + k])) << (8 * k);
  return v;
}
std::uint32_t u32(std::string_view b, std::uint64_t at) { return static_cast<std::uint32_t>(le(b, at, 4)); }
std::uint16_t u16(std::string_view b, std::uint64_t at) { return static_cast<std::uint16_t>(le(b, at, 2)); }

// Whether [at, at + n) lies inside `b`, without overflowing.
bool inside(std::string_view b, std::uint64_t at, std::uint64_t n) { return at <= b.size() && n <= b.size() - at; }

std::string in_quotes(std::string_view name) {
  std::string out = "'";
  for (const char c : name.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out + (name.size() > 200 ? "...'" : "'");
}

// The end of the data descriptor (signature, CRC, then the stored size twice, 4 or 8 bytes
// each) that closes an entry whose data start at `data_at`: the first signature after it whose
// size is the distance from `data_at`, which no byte pattern inside the data matches by chance.
// 0 when none does (the file ends inside the entry).
std::uint64_t descriptor_after(std::string_view b, std::uint64_t data_at) {
  const std::string_view sig("PK\x07\x08", 4);
  for (std::size_t at = b.find(sig, data_at); at != std::string_view::npos; at = b.find(sig, at + 1)) {
    const std::uint64_t size = at - data_at;
    if (inside(b, at, 16) && u32(b, at + 8) == size && u32(b, at + 12) == size) return at + 16;
    if (inside(b, at, 24) && le(b, at + 8, 8) == size && le(b, at + 16, 8) == size) return at + 24;
  }
  return 0;
}

// Where a file that starts like a zip archive but has no end record was cut: walks the local
// headers from the start, as far as they lead.
std::string describe_cut(std::string_view b) {
  const std::string cut = "is truncated: a zip archive cut at " + std::to_string(b.size()) + " bytes";
  std::uint64_t pos = 0;
  std::size_t complete = 0;
  while (inside(b, pos, 4)) {
    const std::uint32_t sig = u32(b, pos);
    if (sig == kCentralHeader || sig == kZip64EndRecord || sig == kZip64Locator) {
      return cut + ", in its central directory (after " + std::to_string(complete) + " complete entries)";
    }
    if (sig != kLocalHeader) break;
    if (!inside(b, pos, kLocalHeaderSize)) {
      return cut + ", in the header of entry " + std::to_string(complete + 1);
    }
    const std::uint16_t flags = u16(b, pos + 6);
    const std::uint64_t name_len = u16(b, pos + 26), extra_len = u16(b, pos + 28);
    std::uint64_t size = u32(b, pos + 18);
    const std::uint64_t name_at = pos + kLocalHeaderSize;
    if (!inside(b, name_at, name_len + extra_len)) {
      return cut + ", in the header of entry " + std::to_string(complete + 1);
    }
    const std::string_view name = b.substr(name_at, name_len);
    if (size == 0xffffffffu) {  // the zip64 extra field holds both sizes, uncompressed first
      for (std::uint64_t e = name_at + name_len; e + 4 <= name_at + name_len + extra_len;) {
        const std::uint16_t id = u16(b, e), len = u16(b, e + 2);
        if (id == kZip64Extra && len >= 16 && e + 4 + 16 <= name_at + name_len + extra_len) size = le(b, e + 12, 8);
        e += 4 + len;
      }
    }
    const std::uint64_t data_at = name_at + name_len + extra_len;
    if ((flags & 0x8) && size == 0) {
      // Streamed (as PyTorch writes): the size follows the data, in a data descriptor.
      const std::uint64_t end = descriptor_after(b, data_at);
      if (end == 0) return cut + ", inside its entry " + in_quotes(name);
      pos = end;
      ++complete;
      continue;
    }
    const std::uint64_t data_end = data_at + size;
    if (data_end > b.size()) {
      return cut + ", inside its entry " + in_quotes(name) + " (which needs bytes up to " + std::to_string(data_end) + ")";
    }
    pos = (flags & 0x8) ? std::max(descriptor_after(b, data_at), data_end) : data_end;
    ++complete;
  }
  if (pos >= b.size()) {
    return cut + ", after " + std::to_string(complete) + " complete entries (its central directory is missing)";
  }
  return "is damaged: a zip archive without an end record, unreadable from byte " + std::to_string(pos);
}

struct EndRecord {
  std::uint64_t entries = 0;
  std::uint64_t directory_offset = 0;
  std::uint64_t directory_size = 0;
  std::uint64_t at = 0;  // where the end record (or the zip64 one) starts
};

EndRecord find_end_record(std::string_view b) {
  if (b.size() < kEndRecordSize) throw ZipError(describe_cut(b));
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
  const std::uint64_t last = b.size() - kEndRecordSize;
  const std::uint64_t first = last > 0xffff ? last - 0xffff : 0;
  for (std::uint64_t at = last + 1; at-- > first;) {
    if (u32(b, at) != kEndRecord || at + kEndRecordSize + u16(b, at + 20) != b.size()) continue;
    EndRecord r;
    r.at = at;
    r.entries = u16(b, at + 10);
    r.directory_size = u32(b, at + 12);
    r.directory_offset = u32(b, at + 16);
    if (at >= kZip64LocatorSize && u32(b, at - kZip64LocatorSize) == kZip64Locator) {
      const std::uint64_t z = le(b, at - kZip64LocatorSize + 8, 8);
      if (!inside(b, z, kZip64EndRecordSize) || z > at - kZip64LocatorSize || u32(b, z) != kZip64EndRecord) {
        throw ZipError("is damaged: its zip64 end record (at byte " + std::to_string(z) + ") is not where the archive says");
      }
      r.at = z;
      r.entries = le(b, z + 32, 8);
      r.directory_size = le(b, z + 40, 8);
      r.directory_offset = le(b, z + 48, 8);
    }
    return r;
  }
  throw ZipError(describe_cut(b));
}

// The zip64 extra field's values replace the 32-bit fields that hold 0xffffffff, in this order.
void apply_zip64(std::string_view b, std::uint64_t extra_at, std::uint64_t extra_len, std::uint64_t& size,
                 std::uint64_t& compressed, std::uint64_t& offset, const std::string& name) {
  for (std::uint64_t e = extra_at; e + 4 <= extra_at + extra_len;) {
    const std::uint16_t id = u16(b, e), len = u16(b, e + 2);
    if (e + 4 + len > extra_at + extra_len) throw ZipError("is damaged: entry " + in_quotes(name) + " has a cut extra field");
    if (id == kZip64Extra) {
      std::uint64_t at = e + 4;
      const std::uint64_t end = at + len;
      for (std::uint64_t* field : {&size, &compressed, &offset}) {
        if (*field != 0xffffffffu) continue;
        if (at + 8 > end) throw ZipError("is damaged: entry " + in_quotes(name) + " has a short zip64 field");
        *field = le(b, at, 8);
        at += 8;
      }
    }
    e += 4 + len;
  }
}

// Table-driven CRC-32, eight bytes at a time ("slicing by 8"): about 1 GB/s, so that checking
// a 100 MB checkpoint costs a tenth of a second.
struct Crc32Tables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  Crc32Tables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

}  // namespace

std::uint32_t crc32_of(std::string_view bytes) {
  static const Crc32Tables tables;
  const auto& t = tables.t;
  std::uint32_t c = 0xffffffffu;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t n = bytes.size();
  while (n >= 8) {
    const std::uint32_t lo = c ^ (static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
                                  static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24);
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
        t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

bool starts_like_zip(std::string_view bytes) {
  return bytes.size() >= 4 && (u32(bytes, 0) == kLocalHeader || u32(bytes, 0) == kEndRecord);
}

ZipArchive::ZipArchive(std::string_view bytes) : bytes_(bytes) {
  const std::string_view b = bytes_;
  const EndRecord end = find_end_record(b);
  if (end.directory_offset > end.at || end.directory_size > end.at - end.directory_offset) {
    throw ZipError("is damaged: its central directory (" + std::to_string(end.directory_size) + " bytes at byte " +
                   std::to_string(end.directory_offset) + ") runs past its end record at byte " + std::to_string(end.at));
  }
  // Each entry takes at least a fixed-size header: a count beyond that is damage, not a size
  // to reserve.
  if (end.entries > end.directory_size / kCentralHeaderSize) {
    throw ZipError("is damaged: its end record counts " + std::to_string(end.entries) + " entries, more than its " +
                   std::to_string(end.directory_size) + "-byte central directory can hold");
  }
  entries_.reserve(static_cast<std::size_t>(end.entries));
  std::uint64_t pos = end.directory_offset;
  const std::uint64_t directory_end = end.directory_offset + end.directory_size;
  for (std::uint64_t i = 0; i < end.entries; ++i) {
    if (pos + kCentralHeaderSize > directory_end || u32(b, pos) != kCentralHeader) {
      throw ZipError("is damaged: central directory entry " + std::to_string(i + 1) + " of " + std::to_string(end.entries) +
                     " is not at byte " + std::to_string(pos));
    }
    const std::uint16_t flags = u16(b, pos + 8), method = u16(b, pos + 10);
    const std::uint32_t crc = u32(b, pos + 16);
    std::uint64_t compressed = u32(b, pos + 20), size = u32(b, pos + 24);
    const std::uint64_t name_len = u16(b, pos + 28), extra_len = u16(b, pos + 30), comment_len = u16(b, pos + 32);
    std::uint64_t offset = u32(b, pos + 42);
    const std::uint64_t name_at = pos + kCentralHeaderSize;
    if (name_at + name_len + extra_len + comment_len > directory_end) {
      throw ZipError("is damaged: central directory entry " + std::to_string(i + 1) + " runs past the directory");
    }
    std::string name(b.substr(name_at, name_len));
    apply_zip64(b, name_at + name_len, extra_len, size, compressed, offset, name);
    if (flags & 0x1) throw ZipError("is encrypted (entry " + in_quotes(name) + ")");
    if (method != 0) {
      throw ZipError("holds a compressed entry " + in_quotes(name) + " (method " + std::to_string(method) +
                     "); PyTorch stores its entries uncompressed");
    }
    if (compressed != size) {
      throw ZipError("is damaged: stored entry " + in_quotes(name) + " says " + std::to_string(compressed) +
                     " bytes stored but " + std::to_string(size) + " bytes of data");
    }
    if (index_.count(name)) throw ZipError("is damaged: it holds entry " + in_quotes(name) + " twice");
    // The data follow the entry's local header, whose own name and extra field lengths count.
    if (!inside(b, offset, kLocalHeaderSize) || u32(b, offset) != kLocalHeader) {
      throw ZipError("is damaged: entry " + in_quotes(name) + " has no local header at byte " + std::to_string(offset));
    }
    const std::uint64_t local_name = u16(b, offset + 26), local_extra = u16(b, offset + 28);
    if (!inside(b, offset + kLocalHeaderSize, local_name + local_extra) ||
        b.substr(offset + kLocalHeaderSize, local_name) != name) {
      throw ZipError("is damaged: the local header of entry " + in_quotes(name) + " names another entry");
    }
    ZipEntry e;
    e.name = std::move(name);
    e.data_offset = offset + kLocalHeaderSize + local_name + local_extra;
    e.size = size;
    e.crc32 = crc;
    if (!inside(b, e.data_offset, e.size) || e.data_offset + e.size > end.directory_offset) {
      throw ZipError("is damaged: entry " + in_quotes(e.name) + " (" + std::to_string(e.size) + " bytes at byte " +
                     std::to_string(e.data_offset) + ") runs into its central directory");
    }
    const std::uint32_t actual = crc32_of(b.substr(e.data_offset, e.size));
    if (actual != e.crc32) {
      char hex[64];
      std::snprintf(hex, sizeof hex, "CRC-32 %08x, the archive says %08x", actual, e.crc32);
      throw ZipError("is damaged: entry " + in_quotes(e.name) + " fails its checksum (" + hex + ")");
    }
    index_.emplace(e.name, entries_.size());
    entries_.push_back(std::move(e));
    pos = name_at + name_len + extra_len + comment_len;
  }
}

const ZipEntry* ZipArchive::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

std::string_view ZipArchive::data(const ZipEntry& entry) const { return bytes_.substr(entry.data_offset, entry.size); }

}  // namespace yoloflow::core
