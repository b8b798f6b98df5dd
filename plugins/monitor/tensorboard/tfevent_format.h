#pragma once
// TensorBoard's event file format, written by hand (no protobuf dependency): each record is
// TFRecord-framed (uint64 length, masked CRC32C of the length, payload, masked CRC32C of
// the payload, all little-endian) and its payload is a serialized tensorflow.Event:
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }
//   Value   { string tag = 1; float simple_value = 2; Image image = 4; }
//   Image   { int32 height = 1; int32 width = 2; int32 colorspace = 3; bytes encoded_image_string = 4; }
// Header-only so that the tests can check the encoder against hand-computed bytes.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace yoloflow::tfevent {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses.
inline std::uint32_t crc32c(const void* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// TFRecord stores CRCs rotated and offset (a CRC of data holding CRCs is then less degenerate).
inline std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  const std::uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

// Protobuf wire format: the few field types an Event needs.
class ProtoWriter {
 public:
  void varint_field(int field, std::uint64_t value) {
    key(field, 0);
    varint(value);
  }
  // int64/int32 are varints of the two's complement (negative values take 10 bytes).
  void int64_field(int field, std::int64_t value) { varint_field(field, static_cast<std::uint64_t>(value)); }
  void double_field(int field, double value) {
    key(field, 1);
    fixed(&value, 8);
  }
  void float_field(int field, float value) {
    key(field, 5);
    fixed(&value, 4);
  }
  void bytes_field(int field, const std::string& value) {
    key(field, 2);
    varint(value.size());
    out_ += value;
  }
  const std::string& bytes() const { return out_; }

 private:
  void key(int field, int wire_type) { varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint64_t>(wire_type)); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  // Little-endian regardless of the host: copy the bytes in order of significance.
  void fixed(const void* value, int size) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, value, static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  }
  std::string out_;
};

struct ImageData {
  int height = 0;
  int width = 0;
  int colorspace = 3;  // 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA
  std::string png;     // the encoded image
};

// The first record of every file: names the format version TensorBoard expects.
inline std::string file_version_event(double wall_time) {
  ProtoWriter e;
  e.double_field(1, wall_time);
  e.bytes_field(3, "brain.Event:2");
  return e.bytes();
}

// An Event carrying `summary` at `step`.
inline std::string summary_event(double wall_time, std::int64_t step, const ProtoWriter& summary) {
  ProtoWriter e;
  e.double_field(1, wall_time);
  e.int64_field(2, step);
  e.bytes_field(5, summary.bytes());
  return e.bytes();
}

// One Event holding one scalar Value per (tag, value), all at `step`.
inline std::string scalars_event(double wall_time, std::int64_t step,
                                 const std::vector<std::pair<std::string, float>>& scalars) {
  ProtoWriter summary;
  for (const auto& [tag, value] : scalars) {
    ProtoWriter v;
    v.bytes_field(1, tag);
    v.float_field(2, value);
    summary.bytes_field(1, v.bytes());
  }
  return summary_event(wall_time, step, summary);
}

inline std::string image_event(double wall_time, std::int64_t step, const std::string& tag, const ImageData& image) {
  ProtoWriter img;
  img.int64_field(1, image.height);
  img.int64_field(2, image.width);
  img.int64_field(3, image.colorspace);
  img.bytes_field(4, image.png);
  ProtoWriter v;
  v.bytes_field(1, tag);
  v.bytes_field(4, img.bytes());
  ProtoWriter summary;
  summary.bytes_field(1, v.bytes());
  return summary_event(wall_time, step, summary);
}

// A TFRecord: length, its masked CRC, the payload, its masked CRC.
inline std::string framed_record(const std::string& payload) {
  std::string out;
  const std::uint64_t length = payload.size();
  char len_bytes[8];
  for (int i = 0; i < 8; ++i) len_bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  auto put_u32 = [&out](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  };
  out.append(len_bytes, 8);
  put_u32(masked_crc32c(len_bytes, 8));
  out += payload;
  put_u32(masked_crc32c(payload.data(), payload.size()));
  return out;
}

}  // namespace yoloflow::tfevent
