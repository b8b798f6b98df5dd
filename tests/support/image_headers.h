#pragma once
// Image files written by hand, well formed up to their pixels, declaring any size: what a test
// needs to show that an image over the decoder's limit is refused from its header, in every
// format OpenCV reads, without a decoder ever reaching the (missing) pixels.
#include <cstdint>
#include <string>

namespace yoloflow::test {

// The CRC-32 of PNG chunks (ISO 3309).
inline std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

inline std::string be16(std::uint32_t v) { return std::string{static_cast<char>(v >> 8), static_cast<char>(v)}; }
inline std::string be32(std::uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
inline std::string le16(std::uint32_t v) { return std::string{static_cast<char>(v), static_cast<char>(v >> 8)}; }
inline std::string le24(std::uint32_t v) {
  return std::string{static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16)};
}
inline std::string le32(std::uint32_t v) {
  return std::string{static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16), static_cast<char>(v >> 24)};
}

inline std::string png_chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(crc32(type + data));
}

// A PNG whose header says width x height (8-bit RGB).
inline std::string png_of_size(std::uint32_t width, std::uint32_t height) {
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + png_chunk("IHDR", ihdr) +
         png_chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8)) + png_chunk("IEND", "");
}

// A baseline JPEG's markers up to its frame header, and its end marker.
inline std::string jpeg_of_size(std::uint32_t width, std::uint32_t height) {
  return std::string("\xFF\xD8\xFF\xE0", 4) + be16(16) + std::string("JFIF\0\x01\x01\0\0\x01\0\x01\0\0", 14) +
         std::string("\xFF\xC0", 2) + be16(17) + "\x08" + be16(height) + be16(width) +
         std::string("\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01", 10) + std::string("\xFF\xD9", 2);
}

// A 24-bit BMP (BITMAPINFOHEADER).
inline std::string bmp_of_size(std::uint32_t width, std::uint32_t height) {
  return "BM" + le32(54 + 16) + le32(0) + le32(54) + le32(40) + le32(width) + le32(height) + le16(1) + le16(24) +
         le32(0) + le32(0) + le32(2835) + le32(2835) + le32(0) + le32(0) + std::string(16, '\0');
}

// A little-endian TIFF whose first directory holds ImageWidth and ImageLength (LONG).
inline std::string tiff_of_size(std::uint32_t width, std::uint32_t height) {
  return std::string("II*\0", 4) + le32(8) + le16(2) + le16(256) + le16(4) + le32(1) + le32(width) + le16(257) +
         le16(4) + le32(1) + le32(height) + le32(0) + std::string(16, '\0');
}

// An extended WebP (VP8X) canvas.
inline std::string webp_of_size(std::uint32_t width, std::uint32_t height) {
  const std::string vp8x = "VP8X" + le32(10) + le32(0) + le24(width - 1) + le24(height - 1);
  return "RIFF" + le32(static_cast<std::uint32_t>(4 + vp8x.size())) + "WEBP" + vp8x;
}

inline std::string ppm_of_size(std::uint32_t width, std::uint32_t height) {
  return "P6\n# a comment\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n" + std::string(16, '\0');
}

inline std::string pam_of_size(std::uint32_t width, std::uint32_t height) {
  return "P7\nWIDTH " + std::to_string(width) + "\nHEIGHT " + std::to_string(height) +
         "\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n" + std::string(16, '\0');
}

inline std::string pfm_of_size(std::uint32_t width, std::uint32_t height) {
  return "PF\n" + std::to_string(width) + " " + std::to_string(height) + "\n-1.0\n" + std::string(16, '\0');
}

inline std::string sun_raster_of_size(std::uint32_t width, std::uint32_t height) {
  return std::string("\x59\xA6\x6A\x95", 4) + be32(width) + be32(height) + be32(24) + be32(0) + be32(1) + be32(0) +
         be32(0) + std::string(16, '\0');
}

inline std::string hdr_of_size(std::uint32_t width, std::uint32_t height) {
  return "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y " + std::to_string(height) + " +X " + std::to_string(width) + "\n" +
         std::string(16, '\0');
}

// A JP2 file: signature, file type and header boxes, the image header box in the last.
inline std::string jp2_of_size(std::uint32_t width, std::uint32_t height) {
  const std::string ihdr = be32(22) + "ihdr" + be32(height) + be32(width) + be16(3) + "\x07\x07" + std::string("\0\0", 2);
  return std::string("\0\0\0\x0CjP  \r\n\x87\n", 12) + be32(20) + "ftypjp2 " + be32(0) + "jp2 " +
         be32(static_cast<std::uint32_t>(8 + ihdr.size())) + "jp2h" + ihdr;
}

// A JPEG 2000 codestream: SOC, then the SIZ marker segment.
inline std::string j2k_of_size(std::uint32_t width, std::uint32_t height) {
  return std::string("\xFF\x4F\xFF\x51", 4) + be16(47) + be16(0) + be32(width) + be32(height) + be32(0) + be32(0) +
         be32(width) + be32(height) + be32(0) + be32(0) + be16(3) + std::string("\x07\x01\x01\x07\x01\x01\x07\x01\x01", 9) +
         std::string("\xFF\xD9", 2);
}

// An OpenEXR header with its dataWindow attribute.
inline std::string exr_of_size(std::uint32_t width, std::uint32_t height) {
  return std::string("\x76\x2F\x31\x01\x02\0\0\0", 8) + std::string("dataWindow\0box2i\0", 17) + le32(16) + le32(0) +
         le32(0) + le32(width - 1) + le32(height - 1) + std::string("\0", 1) + std::string(16, '\0');
}

}  // namespace yoloflow::test
