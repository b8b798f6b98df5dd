#include "image_cache.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "yoloflow/atomic_file.h"
#include "yoloflow/error.h"
#include "yoloflow/user_file.h"

namespace fs = std::filesystem;

namespace yoloflow::plugins::yolo {

void RamImageCache::reset(std::size_t slots, std::uint64_t budget_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_.assign(slots, nullptr);
  budget_ = budget_bytes;
  used_ = 0;
}

std::optional<ResizedImage> RamImageCache::get(std::size_t index, bool shared) const {
  std::shared_ptr<const ResizedImage> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index < slots_.size()) entry = slots_[index];
  }
  if (!entry) return std::nullopt;
  // The copy happens outside the lock: entries are never modified once stored.
  return ResizedImage{shared ? entry->image : entry->image.clone(), entry->original_width, entry->original_height};
}

void RamImageCache::put(std::size_t index, const ResizedImage& img, bool shared) {
  const std::uint64_t bytes = img.image.total() * img.image.elemSize();
  auto entry = std::make_shared<const ResizedImage>(
      ResizedImage{shared ? img.image : img.image.clone(), img.original_width, img.original_height});
  std::lock_guard<std::mutex> lock(mutex_);
  if (index >= slots_.size() || slots_[index]) return;  // another thread filled it first
  if (used_ + bytes > budget_) return;
  slots_[index] = std::move(entry);
  used_ += bytes;
}

namespace {

constexpr char kMagic[8] = {'Y', 'F', 'I', 'M', 'G', 'v', '1', '\0'};

std::uint64_t fnv1a64(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

void DiskImageCache::open(const std::string& dir, const std::string& param_where) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    throw InvalidInput(param_where + ": cannot create the image cache folder '" + dir + "'" +
                       (ec ? " (" + ec.message() + ")" : std::string()));
  }
  dir_ = dir;
}

std::string DiskImageCache::key_for(const std::string& image_path, int imgsz,
                                    const std::string& interp) {
  std::error_code ec;
  const auto abs = fs::absolute(image_path, ec).lexically_normal().string();
  const auto size = fs::file_size(image_path, ec);
  const auto mtime = fs::last_write_time(image_path, ec).time_since_epoch().count();
  std::ostringstream k;
  k << abs << '\n' << size << '\n' << mtime << '\n' << imgsz << '\n' << interp;
  return k.str();
}

std::string DiskImageCache::file_for(const std::string& key) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.yfimg", static_cast<unsigned long long>(fnv1a64(key)));
  return (fs::path(dir_) / name).string();
}

// File layout: magic, key length + key (checked, so a hash collision is a miss), then
// int32 width, height, original width, original height, and width*height*3 BGR bytes.
std::optional<ResizedImage> DiskImageCache::get(const std::string& key) const {
  // Read through the bounded reader: a cache file is a regular file no larger than the largest
  // image a cache holds (8192 px, imgsz's limit, on each side), whatever was put in its place.
  constexpr std::int32_t kMaxSide = 8192;
  constexpr FileBudget kCacheFileBudget{std::uint64_t{64} * 1024 + std::uint64_t{kMaxSide} * kMaxSide * 3, "an image cache file"};
  std::string bytes, why;
  if (!try_read_user_file(file_for(key), kCacheFileBudget, bytes, why)) return std::nullopt;
  std::size_t at = 0;
  auto take = [&](void* out, std::size_t n) {
    if (bytes.size() - at < n) return false;
    std::memcpy(out, bytes.data() + at, n);
    at += n;
    return true;
  };
  char magic[8];
  std::uint32_t key_len = 0;
  if (!take(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return std::nullopt;
  if (!take(&key_len, 4) || key_len != key.size()) return std::nullopt;
  if (bytes.size() - at < key_len || bytes.compare(at, key_len, key) != 0) return std::nullopt;
  at += key_len;
  std::int32_t dims[4];
  if (!take(dims, sizeof dims)) return std::nullopt;
  if (dims[0] <= 0 || dims[1] <= 0 || dims[0] > kMaxSide || dims[1] > kMaxSide) return std::nullopt;
  const auto pixel_bytes = static_cast<std::size_t>(dims[0]) * static_cast<std::size_t>(dims[1]) * 3;
  if (bytes.size() - at != pixel_bytes) return std::nullopt;  // torn or foreign: a miss
  ResizedImage out;
  out.image.create(dims[1], dims[0], CV_8UC3);
  out.original_width = dims[2];
  out.original_height = dims[3];
  std::memcpy(out.image.data, bytes.data() + at, pixel_bytes);
  return out;
}

void DiskImageCache::put(const std::string& key, const ResizedImage& img) const {
  // Through the SDK's atomic writer: a reader never sees half an entry, a full disk leaves no
  // partial file, and a cache entry that is not a regular file is never written into.
  try {
    AtomicFileWriter f(file_for(key));
    const auto key_len = static_cast<std::uint32_t>(key.size());
    const std::int32_t dims[4] = {img.image.cols, img.image.rows, img.original_width,
                                  img.original_height};
    f.write(kMagic, 8);
    f.write(&key_len, 4);
    f.write(key.data(), key.size());
    f.write(dims, sizeof dims);
    const cv::Mat cont = img.image.isContinuous() ? img.image : img.image.clone();
    f.write(cont.data, cont.total() * 3);
    f.commit();
  } catch (const Error&) {
    // a cache that cannot be written only costs speed
  }
}

}  // namespace yoloflow::plugins::yolo
