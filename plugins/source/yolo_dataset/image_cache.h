#pragma once
// Caches of decoded, resized images (yolo_dataset's load() before any augmentation):
// RamImageCache keeps them in memory within a byte budget; DiskImageCache stores them as
// raw files keyed by everything that decides their pixels.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

namespace yoloflow::plugins::yolo {

struct ResizedImage {
  cv::Mat image;  // 8-bit BGR, continuous, long side = imgsz
  int original_width = 0, original_height = 0;
};

// One slot per dataset index, filled on first use from any thread. Entries are immutable
// once stored; get() hands out a deep copy so augmentations may write into their sample (or,
// while the chain plans its pixels and nobody writes, the stored pixels themselves).
// Pixels only: labels (boxes and polygon outlines) live once per image in the source's label
// table whatever the cache, so the budget counts pixel bytes, as Ultralytics' check_cache_ram.
class RamImageCache {
 public:
  void reset(std::size_t slots, std::uint64_t budget_bytes);
  // `shared`: the stored pixels themselves (nobody writes into them), not a copy.
  std::optional<ResizedImage> get(std::size_t index, bool shared = false) const;
  // Stores a copy unless the budget is spent (the estimate can be off for odd files): the
  // image then stays uncached rather than failing the run.
  void put(std::size_t index, const ResizedImage& img, bool shared = false);
  std::uint64_t used_bytes() const { return used_; }

 private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<const ResizedImage>> slots_;
  std::uint64_t budget_ = 0;
  std::atomic<std::uint64_t> used_{0};
};

class DiskImageCache {
 public:
  // Creates `dir` if needed; InvalidInput naming `param_where` when it cannot.
  void open(const std::string& dir, const std::string& param_where);
  const std::string& dir() const { return dir_; }

  // Key text for one source image: its absolute path, byte size and modification time plus
  // the parameters that shape the pixels, so a changed file or parameter misses.
  static std::string key_for(const std::string& image_path, int imgsz, const std::string& interp);
  std::string file_for(const std::string& key) const;

  // nullopt on a miss or an unreadable/foreign/mismatching file (then rewritten by put).
  std::optional<ResizedImage> get(const std::string& key) const;
  // Written to a unique temporary file, then renamed over the final name: readers never see
  // a partial file, and two runs writing the same entry both leave a complete one.
  void put(const std::string& key, const ResizedImage& img) const;

 private:
  std::string dir_;
};

}  // namespace yoloflow::plugins::yolo
