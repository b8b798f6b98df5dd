#pragma once
// A TensorBoard event file reader for tests, written independently of the plugin's encoder
// (bitwise CRC, its own protobuf parser): TFRecord framing with both CRCs checked, then the
// tensorflow.Event fields the plugin writes. Any malformation throws, naming the offset.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace yoloflow::test::tfevent_reader {

// CRC-32C bit by bit (the plugin uses a table): two implementations must agree.
inline std::uint32_t crc32c_bitwise(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::uint32_t masked(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

inline std::uint64_t little_endian(const std::string& s, std::size_t at, int size) {
  std::uint64_t v = 0;
  for (int i = size - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s.at(at + static_cast<std::size_t>(i)));
  return v;
}

// The payloads of a TFRecord file, both CRCs of every record checked.
inline std::vector<std::string> read_records(const std::string& file_bytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < file_bytes.size()) {
    if (file_bytes.size() - at < 12) throw std::runtime_error("truncated record header at " + std::to_string(at));
    const std::string len_bytes = file_bytes.substr(at, 8);
    const std::uint64_t length = little_endian(file_bytes, at, 8);
    if (little_endian(file_bytes, at + 8, 4) != masked(crc32c_bitwise(len_bytes))) {
      throw std::runtime_error("bad length CRC at " + std::to_string(at));
    }
    at += 12;
    if (file_bytes.size() - at < length + 4) throw std::runtime_error("truncated record at " + std::to_string(at));
    std::string payload = file_bytes.substr(at, length);
    if (little_endian(file_bytes, at + length, 4) != masked(crc32c_bitwise(payload))) {
      throw std::runtime_error("bad payload CRC at " + std::to_string(at));
    }
    at += length + 4;
    out.push_back(std::move(payload));
  }
  return out;
}

// One protobuf field as found on the wire.
struct Field {
  int number = 0;
  int wire_type = 0;
  std::uint64_t value = 0;  // varint, fixed64 or fixed32 bits
  std::string bytes;        // length-delimited
};

inline std::vector<Field> parse_message(const std::string& m) {
  std::vector<Field> fields;
  std::size_t at = 0;
  auto varint = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= m.size()) throw std::runtime_error("truncated varint");
      const auto b = static_cast<unsigned char>(m[at++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  };
  while (at < m.size()) {
    const std::uint64_t key = varint();
    Field f;
    f.number = static_cast<int>(key >> 3);
    f.wire_type = static_cast<int>(key & 7);
    switch (f.wire_type) {
      case 0: f.value = varint(); break;
      case 1:
        if (m.size() - at < 8) throw std::runtime_error("truncated fixed64");
        f.value = little_endian(m, at, 8);
        at += 8;
        break;
      case 5:
        if (m.size() - at < 4) throw std::runtime_error("truncated fixed32");
        f.value = little_endian(m, at, 4);
        at += 4;
        break;
      case 2: {
        const std::uint64_t n = varint();
        if (m.size() - at < n) throw std::runtime_error("truncated length-delimited field");
        f.bytes = m.substr(at, n);
        at += n;
        break;
      }
      default: throw std::runtime_error("unexpected wire type " + std::to_string(f.wire_type));
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

struct Image {
  std::int64_t height = 0, width = 0, colorspace = 0;
  std::string encoded;
};

struct Value {
  std::string tag;
  bool has_simple_value = false;
  float simple_value = 0;
  bool has_image = false;
  Image image;
};

struct Event {
  double wall_time = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<Value> values;
};

inline Event parse_event(const std::string& payload) {
  Event e;
  for (const auto& f : parse_message(payload)) {
    if (f.number == 1 && f.wire_type == 1) {
      std::memcpy(&e.wall_time, &f.value, 8);
    } else if (f.number == 2 && f.wire_type == 0) {
      e.step = static_cast<std::int64_t>(f.value);
    } else if (f.number == 3 && f.wire_type == 2) {
      e.file_version = f.bytes;
    } else if (f.number == 5 && f.wire_type == 2) {
      for (const auto& sf : parse_message(f.bytes)) {
        if (sf.number != 1 || sf.wire_type != 2) throw std::runtime_error("unexpected Summary field");
        Value v;
        for (const auto& vf : parse_message(sf.bytes)) {
          if (vf.number == 1 && vf.wire_type == 2) {
            v.tag = vf.bytes;
          } else if (vf.number == 2 && vf.wire_type == 5) {
            const auto bits = static_cast<std::uint32_t>(vf.value);
            std::memcpy(&v.simple_value, &bits, 4);
            v.has_simple_value = true;
          } else if (vf.number == 4 && vf.wire_type == 2) {
            v.has_image = true;
            for (const auto& imf : parse_message(vf.bytes)) {
              if (imf.number == 1) v.image.height = static_cast<std::int64_t>(imf.value);
              else if (imf.number == 2) v.image.width = static_cast<std::int64_t>(imf.value);
              else if (imf.number == 3) v.image.colorspace = static_cast<std::int64_t>(imf.value);
              else if (imf.number == 4) v.image.encoded = imf.bytes;
            }
          } else {
            throw std::runtime_error("unexpected Value field " + std::to_string(vf.number));
          }
        }
        e.values.push_back(std::move(v));
      }
    } else {
      throw std::runtime_error("unexpected Event field " + std::to_string(f.number));
    }
  }
  return e;
}

}  // namespace yoloflow::test::tfevent_reader
