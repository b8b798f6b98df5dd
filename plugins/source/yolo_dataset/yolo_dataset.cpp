// yolo_dataset: reads datasets in the Ultralytics layout (data.yaml + images/ + labels/).
//
// configure() scans the split once: every image is checked (header, end marker, a cheap
// reduced decode) and every label file parsed; bad data is skipped or fixed and recorded
// as a DataIssue, never fatal. load() decodes one image and resizes it so its long side
// is the epoch's imgsz, like Ultralytics' load_image. Polygon labels are kept: load() gives
// them in pixels, resampled as Ultralytics' dataset gives its segments.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "available_memory.h"
#include "image_cache.h"
#include "image_files.h"
#include "label_file.h"
#include "reduced_decode.h"
#include "yoloflow/annotations.h"
#include "yoloflow/data_yaml.h"
#include "yoloflow/directory_walk.h"
#include "yoloflow/error.h"
#include "yoloflow/image_header.h"
#include "yoloflow/log.h"
#include "yoloflow/plugin.h"
#include "yoloflow/printable.h"
#include "yoloflow/source.h"
#include "yoloflow/stop_request.h"

namespace fs = std::filesystem;

namespace yoloflow::plugins::yolo {
namespace {

// Problem categories, for the summary (the problem text starts with one of them).
const char* const kCategories[] = {
    "image missing", "not an image file type", "empty file", "not an image", "truncated image",
    "corrupt image", "unreadable file", "unreadable label file", "no label file",
    "label file without image", "bad label line", "degenerate box", "duplicate box",
    "box outside image", "box partly outside image", "box line in a polygon file", "cannot decode image", "image too large",
    "image file too large", "the label file", "not listed"};

std::string category_of(const std::string& problem) {
  std::string best;
  for (const char* c : kCategories) {
    const std::string cat(c);
    if (problem.compare(0, cat.size(), cat) == 0 && cat.size() > best.size()) best = cat;
  }
  return best.empty() ? problem : best;
}

// N of a label file's "N more problems in this file" (label_file.cpp), 0 for any other problem.
std::size_t unlisted_count(const std::string& problem) {
  const std::string tail = " more problems in this file";
  if (problem.size() <= tail.size() || problem.compare(problem.size() - tail.size(), tail.size(), tail) != 0) return 0;
  const std::string digits = problem.substr(0, problem.size() - tail.size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<std::size_t>(std::stoull(digits));
}

// True when an image for this label file exists (labels/ -> images/, any image extension):
// such a label belongs to an image of another split (.txt lists often share one folder),
// not to a missing one.
bool image_exists_for_label(const std::string& label) {
  std::string base = label;
  const auto pos = base.rfind("/labels/");
  if (pos != std::string::npos) base.replace(pos, 8, "/images/");
  std::error_code ec;
  for (const char* ext : {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp", ".JPG", ".JPEG",
                          ".PNG", ".BMP", ".TIF", ".TIFF", ".WEBP"}) {
    if (fs::exists(fs::path(base).replace_extension(ext), ec)) return true;
  }
  return false;
}

struct Entry {
  std::string image;
  std::vector<NormalizedBox> boxes;
  NormalizedPolygons polygons;  // empty unless a label line of the image is a polygon
  int width = 0, height = 0;  // from the scan, for the RAM cache's estimate
};

// Ultralytics rounds up and caps at imgsz, so the long side is exactly imgsz.
cv::Size resized_size(int w0, int h0, int imgsz) {
  const double r = static_cast<double>(imgsz) / std::max(w0, h0);
  if (r == 1.0) return {w0, h0};
  const int w = std::min(static_cast<int>(std::ceil(w0 * r)), imgsz);
  const int h = std::min(static_cast<int>(std::ceil(h0 * r)), imgsz);
  return {std::max(w, 1), std::max(h, 1)};
}

// Ultralytics' rule (its check_cache_ram): the cache plus a 50% margin fits in the memory
// available. 4 GB where the available memory cannot be read.
std::uint64_t automatic_cache_budget() {
  const auto available = available_memory_bytes();
  return available ? static_cast<std::uint64_t>(static_cast<double>(*available) / 1.5) : std::uint64_t{4000000000};
}

std::string gb_text(double bytes) {
  std::ostringstream s;
  s.precision(bytes < 1e9 ? 3 : 4);
  s << bytes / 1e9 << " GB (" << static_cast<std::uint64_t>(bytes) << " bytes)";
  return s.str();
}

// Which images and boxes of a split are read: Ultralytics' fraction, classes and single_cls.
struct Selection {
  double fraction = 1.0;
  std::set<int> classes;  // empty: all
  bool single_cls = false;
  bool operator==(const Selection& o) const {
    return fraction == o.fraction && classes == o.classes && single_cls == o.single_cls;
  }
};

class YoloDataset final : public DataSource {
 public:
  static Schema schema() {
    Schema s;
    s.add_path("data").required().fixed().role(ParamRole::Dataset).doc(
        "Ultralytics data.yaml: `path` (dataset root, relative to the yaml's folder), "
        "`train`/`val`/`test` (folders, .txt image lists, or lists of those) and `names`.");
    s.add_enum("split", {"train", "val", "test"}, "train").fixed().role(ParamRole::Split).doc("Which split to read.");
    s.add_enum("shrink_interpolation", {"area", "linear"}, "linear").fixed().doc(
        "Resampling when an image is shrunk to imgsz: 'linear' (what Ultralytics 8.4 uses in both "
        "directions, so validation numbers compare) or 'area' (smoother on large downscales). "
        "Enlarging always uses linear.");
    s.add_bool("decode_reduced", false).fixed().doc(
        "Decode a JPEG at least twice the size it is shrunk to at 1/2, 1/4 or 1/8 of its size "
        "inside libjpeg (OpenCV's IMREAD_REDUCED_COLOR_N: most of the decoding work skipped), never "
        "below the size it is resized to, then resize it as usual. For datasets of large photos "
        "read without a cache; boxes are unchanged, pixels differ slightly from a full decode "
        "(false, as Ultralytics decodes). The train split only: validation decodes in full, so its "
        "numbers compare with Ultralytics' validator.");
    s.add_enum("cache", {"none", "ram", "disk"}, "none").fixed().doc(
        "Keep decoded, resized images (before augmentation) to skip JPEG decoding after their "
        "first use: 'ram' in memory within cache_budget_gb (checked against an estimate at "
        "configure time; when they would not fit, a warning says so and nothing is cached), "
        "'disk' as raw files in cache_dir, reused by later runs.");
    s.add_float("cache_budget_gb").default_value("auto").accepts("auto").range(0.0, 1e6).fixed().doc(
        "Most memory the 'ram' cache may use, in GB (1e9 bytes). \"auto\": as Ultralytics sizes it, "
        "the cache with a 50% margin must fit in the memory available when the run starts "
        "(MemAvailable, or the container's limit when lower), so about two thirds of it.");
    s.add_enum("cache_fill", {"lazy", "eager"}, "lazy").fixed().doc(
        "When the 'ram' cache is filled: 'lazy' on each image's first load, 'eager' all at "
        "configure time (on several threads), so the first epoch runs at cached speed.");
    s.add_string("cache_dir", "").fixed().doc(
        "Folder of the 'disk' cache; empty means '.yoloflow_cache' in the dataset root "
        "(shared by every run on that dataset). Entries are keyed by image path, size, "
        "modification time, imgsz and interpolation, so changed files or settings miss.");
    s.add_float("fraction", 1.0).greater_than(0.0).max(1.0).fixed().doc(
        "Share of the train split's images to read (Ultralytics' `fraction`): the first round(n * fraction) "
        "of its sorted image list. Only the train split is cut: validation reads every image.");
    s.add_int_list("classes", {}).fixed().doc(
        "Class ids to keep (Ultralytics' `classes`): boxes of other classes are dropped, an image left "
        "without boxes stays as a background image, ids keep their numbers. Empty keeps every class.");
    s.add_bool("single_cls", false).fixed().doc(
        "Treat every object as one class (Ultralytics' `single_cls`): every box becomes class 0 and the "
        "dataset names one class, 'item', so the model trains with one class.");
    return s;
  }

  void configure(const Params& params, const StageContext& context) override {
    imgsz_ = context.imgsz;
    where_ = context.node.empty() ? params.where() : context.node;
    shrink_area_ = params.get_string("shrink_interpolation") == "area";
    const std::string data = params.get_string("data");
    const std::string split = params.get_string("split");
    decode_reduced_ = split == "train" && params.get_bool("decode_reduced");
    Selection selection;
    selection.fraction = split == "train" ? params.get_float("fraction") : 1.0;
    for (const auto c : params.get_ints("classes")) selection.classes.insert(static_cast<int>(c));
    selection.single_cls = params.get_bool("single_cls");
    if (data != scanned_data_ || split != scanned_split_ || !(selection == selection_)) {
      scan(data, split, selection, params.where());
      scanned_data_ = data;
      scanned_split_ = split;
      selection_ = selection;
    }
    configure_cache(params);
  }

  std::size_t size() const override { return sample_entries_.size(); }

  Sample load(std::size_t sample) override {
    if (sample >= sample_entries_.size()) {
      throw Error("yolo_dataset '" + where_ + "': sample " + std::to_string(sample) +
                  " out of range (" + std::to_string(sample_entries_.size()) + " samples)");
    }
    const std::size_t index = sample_entries_[sample];  // the image (listed once or more)
    const Entry& e = entries_[index];
    ResizedImage img = cached_or_decoded(index);
    Sample s;
    s.index = sample;
    s.path = e.image;
    s.image = std::move(img.image);
    const int w0 = img.original_width, h0 = img.original_height;
    s.geometry.original_width = w0;
    s.geometry.original_height = h0;
    s.geometry.ratio_x = static_cast<double>(s.image.cols) / w0;
    s.geometry.ratio_y = static_cast<double>(s.image.rows) / h0;
    const float W = static_cast<float>(s.image.cols), H = static_cast<float>(s.image.rows);
    s.boxes.reserve(e.boxes.size());
    for (const auto& b : e.boxes) {
      Box p;
      p.cls = b.cls;
      p.x1 = static_cast<float>(b.x1 * W);
      p.y1 = static_cast<float>(b.y1 * H);
      p.x2 = static_cast<float>(b.x2 * W);
      p.y2 = static_cast<float>(b.y2 * H);
      s.boxes.push_back(p);
    }
    // Outlines only for an image that has some: a detection dataset's load() allocates nothing
    // more than it did without them.
    if (!e.polygons.empty()) {
      // In pixels of the loaded image, as Ultralytics denormalises segments (x * w, y * h with
      // the resized shape, in float32), then every outline resampled to the same count (1000
      // points, or one more than the longest), as its dataset does before any augmentation.
      const NormalizedPolygons& np = e.polygons;
      s.polygons.resize(e.boxes.size());
      for (std::size_t i = 0; i < e.boxes.size(); ++i) {
        Polygon& poly = s.polygons[i];
        poly.reserve(np.points(i));
        for (std::size_t k = np.start[i]; k < np.start[i + 1]; ++k) poly.emplace_back(np.xy[2 * k] * W, np.xy[2 * k + 1] * H);
      }
      resample_polygons(s.polygons);
    }
    return s;
  }

  DatasetInfo info() const override { return info_; }

  // From the scan: the label file's boxes (after classes / single_cls), no image read.
  bool labels(std::size_t sample, SampleLabels& out) const override {
    if (sample >= sample_entries_.size()) return false;
    const Entry& e = entries_[sample_entries_[sample]];
    out.classes.clear();
    out.boxes.clear();
    for (const auto& b : e.boxes) {
      out.classes.push_back(b.cls);
      out.boxes.push_back({static_cast<float>((b.x1 + b.x2) / 2), static_cast<float>((b.y1 + b.y2) / 2),
                           static_cast<float>(b.x2 - b.x1), static_cast<float>(b.y2 - b.y1)});
    }
    return true;
  }

  std::vector<DataIssue> issues() const override {
    std::lock_guard<std::mutex> lock(issues_mutex_);
    return issues_;
  }
  void share_pixels(bool shared) override { shared_pixels_.store(shared, std::memory_order_relaxed); }

 private:
  ResizedImage cached_or_decoded(std::size_t index) {
    if (cache_ == "ram") {
      const bool shared = shared_pixels_.load(std::memory_order_relaxed);
      if (auto hit = ram_cache_.get(index, shared)) return std::move(*hit);
      ResizedImage img = decode_resized(index);
      ram_cache_.put(index, img, shared);
      return img;
    }
    if (cache_ == "disk") {
      const std::string key = DiskImageCache::key_for(entries_[index].image, imgsz_, interp_name());
      if (auto hit = disk_cache_.get(key)) return std::move(*hit);
      ResizedImage img = decode_resized(index);
      disk_cache_.put(key, img);
      return img;
    }
    return decode_resized(index);
  }

  // The header is checked again before decoding: the file may have been replaced since the scan,
  // and a decoder must never be handed an image over the pixel limit. `why` says why nothing
  // was decoded when it was refused.
  static cv::Mat read_image(const std::string& path, int flag, std::string& why) {
    if (why = image_file_refusal(path); !why.empty()) return {};
    try {
      return cv::imread(path, flag);
    } catch (const cv::Exception&) {
      return {};
    }
  }

  ResizedImage decode_resized(std::size_t index) {
    const Entry& e = entries_[index];
    cv::Mat original;
    std::string why;
    cv::Size full;  // the size of a full decode
    if (decode_reduced_ && has_jpeg_extension(e.image)) {
      const int factor = jpeg_reduction(e.width, e.height, resized_size(e.width, e.height, imgsz_));
      if (factor > 1) {
        original = read_image(e.image, reduced_color_flag(factor), why);
        const auto size = original.empty() ? std::nullopt : full_size_of(original.size(), e.width, e.height, factor);
        if (size) {
          full = *size;
        } else {
          original.release();  // a size the scan did not see: decode in full
        }
      }
    }
    if (original.empty()) {
      original = read_image(e.image, cv::IMREAD_COLOR, why);
      full = original.size();
    }
    if (original.empty()) {
      add_issue({e.image, "cannot decode image at load time" + (why.empty() ? "" : " (" + why + ")"), "sample not loaded"});
      throw Error("yolo_dataset '" + where_ + "': cannot decode image '" + e.image + "'" +
                  (why.empty() ? "" : ": " + why));
    }
    ResizedImage out;
    out.original_width = full.width;
    out.original_height = full.height;
    const cv::Size size = resized_size(full.width, full.height, imgsz_);
    if (size.width != original.cols || size.height != original.rows) {
      const bool enlarge = size.width > original.cols;
      const int interp = (enlarge || !shrink_area_) ? cv::INTER_LINEAR : cv::INTER_AREA;
      cv::resize(original, out.image, size, 0, 0, interp);
    } else {
      out.image = original;
    }
    if (!out.image.isContinuous()) out.image = out.image.clone();
    return out;
  }

  // Names how an image was decoded and shrunk: part of the caches' keys.
  std::string interp_name() const {
    return std::string(shrink_area_ ? "area" : "linear") + (decode_reduced_ ? "-reduced-jpeg" : "");
  }

  // Called on every configure: a new imgsz or interpolation empties the RAM cache (the disk
  // cache's keys include both).
  void configure_cache(const Params& params) {
    const std::string cache = params.get_string("cache");
    if (cache == "ram") {
      const json given = params.get_json("cache_budget_gb");
      const bool automatic = given.is_string();
      const auto budget = automatic ? automatic_cache_budget() : static_cast<std::uint64_t>(given.get<double>() * 1e9);
      if (cache_ == "ram" && cached_imgsz_ == imgsz_ && cached_interp_ == interp_name() &&
          cached_budget_ == budget) {
        return;
      }
      std::uint64_t need = 0;
      for (const auto& e : entries_) {
        const cv::Size s = resized_size(e.width, e.height, imgsz_);
        need += static_cast<std::uint64_t>(s.width) * s.height * 3;
      }
      if (need > budget) {
        // As Ultralytics: a cache that does not fit is not a reason to stop, only to read the
        // images from their files.
        YF_LOG_WARN("yolo_dataset '" + where_ + "': the RAM cache of " + std::to_string(entries_.size()) +
                    " images at imgsz " + std::to_string(imgsz_) + " needs " + gb_text(static_cast<double>(need)) +
                    (automatic ? ", more than the automatic budget of " + gb_text(static_cast<double>(budget)) +
                                     " (two thirds of the memory available)"
                               : ", more than cache_budget_gb's " + gb_text(static_cast<double>(budget))) +
                    "; not caching images (" + params.where() +
                    ".cache_budget_gb raises the budget; cache 'disk' keeps decoded images on disk)");
        ram_cache_.reset(0, 0);
        cached_imgsz_ = 0;
        cache_ = "none";
        return;
      }
      ram_cache_.reset(entries_.size(), budget);
      if (params.get_string("cache_fill") == "eager") fill_ram_cache();
      cached_imgsz_ = imgsz_;
      cached_interp_ = interp_name();
      cached_budget_ = budget;
      YF_LOG_INFO("yolo_dataset '" + where_ + "': RAM cache of up to " + gb_text(static_cast<double>(need)) + " (budget " +
                  gb_text(static_cast<double>(budget)) + (automatic ? ", automatic" : "") + ")");
    } else {
      ram_cache_.reset(0, 0);
      cached_imgsz_ = 0;
    }
    if (cache == "disk") {
      std::string dir = params.get_string("cache_dir");
      if (dir.empty()) dir = (fs::path(info_.root) / ".yoloflow_cache").string();
      if (dir != disk_cache_.dir()) disk_cache_.open(dir, params.where() + ".cache_dir");
    }
    cache_ = cache;
  }

  // Decodes every image into the RAM cache on a few threads; an image that fails to decode
  // is recorded by decode_resized() and left for load() to report again.
  void fill_ram_cache() {
    // OpenCV's own parallel loop rather than raw threads: with raw std::threads this
    // crashed (SIGSEGV) on the 16-core GPU machine, inside OpenCV calls that run their own
    // parallel backend; cv::parallel_for_ nests correctly (inner loops run serially).
    cv::parallel_for_(cv::Range(0, static_cast<int>(entries_.size())), [&](const cv::Range& r) {
      for (int i = r.start; i < r.end && !stop_requested(); ++i) {
        try {
          ram_cache_.put(static_cast<std::size_t>(i), decode_resized(static_cast<std::size_t>(i)));
        } catch (const std::exception&) {
          // recorded by decode_resized(); load() reports it again
        }
      }
    });
    throw_if_stop_requested("filling the RAM cache of yolo_dataset '" + where_ + "'");
  }

  void add_issue(DataIssue issue) {
    std::lock_guard<std::mutex> lock(issues_mutex_);
    issues_.push_back(std::move(issue));
  }

  void scan(const std::string& data, const std::string& split, const Selection& selection, const std::string& where) {
    DataYaml yaml = read_data_yaml(data);
    const auto split_it = yaml.splits.find(split);
    if (split_it == yaml.splits.end() || split_it->second.empty()) {
      throw InvalidInput("data.yaml '" + yaml.file + "' has no '" + split + "' split");
    }
    SplitListing listing = list_split(split_it->second, split, yaml.file);
    const int nc = static_cast<int>(yaml.names.size());
    for (const int c : selection.classes) {
      if (c < 0 || c >= nc) {
        throw InvalidInput(where + ".classes: class " + std::to_string(c) + " is not one of data.yaml '" + yaml.file +
                           "' (" + std::to_string(nc) + " classes: 0-" + std::to_string(nc - 1) + ")");
      }
    }
    if (selection.fraction < 1.0) {
      // As Ultralytics: the first round(n * fraction) of the sorted listing, an image listed
      // several times counted as often as it is listed; halves round to even, as Python rounds.
      std::size_t listed = 0;
      for (const auto r : listing.repeats) listed += r;
      std::size_t keep = static_cast<std::size_t>(std::nearbyint(static_cast<double>(listed) * selection.fraction));
      if (keep == 0) {
        throw InvalidInput(where + ".fraction: " + std::to_string(selection.fraction) + " of the " +
                           std::to_string(listed) + " images of split '" + split + "' is no image");
      }
      std::size_t images = 0;
      for (; images < listing.images.size() && keep > 0; ++images) {
        listing.repeats[images] = std::min(listing.repeats[images], keep);
        keep -= listing.repeats[images];
      }
      listing.images.resize(images);
      listing.repeats.resize(images);
    }

    // Check images and parse labels on a few threads: decoding dominates.
    struct Checked {
      ImageCheck image;
      LabelFile label;
    };
    std::vector<Checked> checked(listing.images.size());
    std::atomic<std::size_t> next{0};
    auto work = [&]() {
      // Nothing escapes a thread (an exception there would end the process): whatever one
      // image's check throws is that image's problem.
      for (std::size_t i = next++; i < checked.size() && !stop_requested(); i = next++) {
        try {
          checked[i].image = check_image_file(listing.images[i]);
          if (checked[i].image.problem.empty()) {
            checked[i].label = read_label_file(label_path_for(listing.images[i]), nc);
          }
        } catch (const std::bad_alloc&) {
          checked[i].image.problem = "unreadable file (more than the memory left to read it)";
        } catch (const std::exception& e) {
          checked[i].image.problem = std::string("unreadable file (") + e.what() + ")";
        }
      }
    };
    const unsigned threads =
        std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 8));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads && t < checked.size(); ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
    throw_if_stop_requested("checking the images and labels of the " + split + " split of data.yaml '" + yaml.file + "'");

    std::vector<DataIssue> issues = std::move(listing.issues);
    std::vector<Entry> entries;
    std::vector<std::size_t> sample_entries;
    std::set<std::string> expected_labels;
    std::size_t background = 0, missing_labels = 0, boxes = 0, max_boxes = 0, outlined = 0;
    for (const auto& issue : issues) expected_labels.insert(label_path_for(issue.path));
    for (std::size_t i = 0; i < checked.size(); ++i) {
      const std::string& image = listing.images[i];
      const std::string label_path = label_path_for(image);
      expected_labels.insert(label_path);
      Checked& c = checked[i];
      if (!c.image.problem.empty()) {
        issues.push_back({image, c.image.problem, "skipped image"});
        continue;
      }
      if (c.label.exists && !c.label.readable) {
        if (c.label.issues.empty()) c.label.issues.push_back({label_path, "unreadable label file", "skipped image"});
        for (auto& issue : c.label.issues) issues.push_back(std::move(issue));
        continue;
      }
      for (auto& issue : c.label.issues) issues.push_back(std::move(issue));
      if (!c.label.exists) {
        ++missing_labels;
        issues.push_back({image, "no label file (looked for " + label_path + ")",
                          "kept as background image"});
      }
      if (!selection.classes.empty()) {
        std::vector<bool> keep(c.label.boxes.size());
        for (std::size_t k = 0; k < keep.size(); ++k) keep[k] = selection.classes.count(c.label.boxes[k].cls) > 0;
        keep_instances(c.label.boxes, c.label.polygons, keep);
      }
      if (selection.single_cls) {
        for (auto& x : c.label.boxes) x.cls = 0;
      }
      if (c.label.boxes.empty()) ++background;
      boxes += c.label.boxes.size();
      boxes += c.label.boxes.size() * (listing.repeats[i] - 1);
      max_boxes = std::max(max_boxes, c.label.boxes.size());
      for (std::size_t k = 0; k + 1 < c.label.polygons.start.size(); ++k) {
        if (c.label.polygons.points(k) > 0) outlined += listing.repeats[i];
      }
      for (std::size_t r = 0; r < listing.repeats[i]; ++r) sample_entries.push_back(entries.size());
      entries.push_back({image, std::move(c.label.boxes), std::move(c.label.polygons), c.image.width, c.image.height});
    }
    for (const auto& dir : listing.label_dirs) {
      std::vector<std::string> orphans;
      WalkLimits one_level;
      one_level.recursive = false;
      WalkResult labels;
      try {
        labels = walk_folder(dir, one_level, "labels folder '" + dir + "'",
                             [](const std::string& f) { return fs::path(f).extension() == ".txt"; });
      } catch (const InvalidInput&) {
        continue;  // a labels folder gone since it was listed: its orphans are not looked for
      }
      for (const auto& f : labels.files) {
        const std::string p = fs::path(f).lexically_normal().string();
        if (!expected_labels.count(p) && !image_exists_for_label(p)) orphans.push_back(p);
      }
      std::sort(orphans.begin(), orphans.end());
      for (const auto& p : orphans) issues.push_back({p, "label file without image", "ignored"});
    }

    if (entries.empty()) {
      std::string listed;
      const std::size_t shown = std::min<std::size_t>(issues.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) {
        listed += "\n  " + issues[i].path + ": " + issues[i].problem + " -> " + issues[i].action;
      }
      if (issues.size() > shown) listed += "\n  ... and " + std::to_string(issues.size() - shown) + " more";
      throw InvalidInput("data.yaml '" + yaml.file + "': split '" + split + "' has no usable images (" +
                         std::to_string(listing.images.size()) + " image files found, " + std::to_string(issues.size()) +
                         " problem" + (issues.size() == 1 ? "" : "s") + (issues.empty() ? ")" : "):") + listed);
    }
    entries_ = std::move(entries);
    sample_entries_ = std::move(sample_entries);
    {
      std::lock_guard<std::mutex> lock(issues_mutex_);
      issues_ = std::move(issues);
    }
    // single_cls: one class, named as Ultralytics names it, so the model is built with one.
    if (selection.single_cls) yaml.names = {"item"};
    info_ = DatasetInfo{yaml.root, yaml.names, sample_entries_.size(), boxes, max_boxes};
    background_ = background;
    missing_labels_ = missing_labels;
    outlined_ = outlined;
    log_summary(split);
  }

  void log_summary(const std::string& split) const {
    const auto all = issues();
    std::map<std::string, std::size_t> by_category;
    std::size_t total = 0;
    for (const auto& i : all) {
      // A label file's "N more problems in this file" stands for the N it did not list.
      const std::size_t n = unlisted_count(i.problem);
      by_category[n > 0 ? "more problems in label files (not listed)" : category_of(i.problem)] += n > 0 ? n : 1;
      total += n > 0 ? n : 1;
    }
    std::ostringstream s;
    s << "yolo_dataset '" << where_ << "': " << split << " split of " << info_.root << ": "
      << info_.images << " samples of " << entries_.size() << " images (" << background_ << " background), " << info_.boxes
      << " boxes" << (outlined_ > 0 ? " (" + std::to_string(outlined_) + " with polygons)" : std::string()) << ", "
      << info_.names.size() << " classes";
    if (!all.empty()) {
      s << "; " << total << " data issues:";
      for (const auto& [cat, n] : by_category) s << " " << n << " " << cat << ";";
      const std::size_t shown = std::min<std::size_t>(all.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) {
        s << "\n  " << printable(all[i].path) << ": " << printable(all[i].problem) << " -> " << printable(all[i].action);
      }
      if (all.size() > shown) s << "\n  ... and " << (all.size() - shown) << " more";
    }
    if (info_.boxes == 0 && missing_labels_ == entries_.size() && !entries_.empty()) {
      // Not one label file: a wrong layout far more often than a dataset of background images.
      YF_LOG_WARN(s.str() << "\nyolo_dataset '" << where_ << "': no image of the " << split
                          << " split has a label file, so it trains on no boxes: labels are looked for "
                             "in a labels/ folder beside images/ (images/x.jpg -> labels/x.txt)");
      return;
    }
    const bool only_background = by_category.size() <= 1 && by_category.count("no label file") == by_category.size();
    if (only_background) {
      YF_LOG_INFO(s.str());
    } else {
      YF_LOG_WARN(s.str());
    }
  }

  int imgsz_ = 640;
  bool shrink_area_ = true;
  bool decode_reduced_ = false;
  std::string cache_ = "none";
  RamImageCache ram_cache_;
  std::atomic<bool> shared_pixels_{false};  // share_pixels(): the RAM cache hands out its own pixels
  int cached_imgsz_ = 0;
  std::string cached_interp_;
  std::uint64_t cached_budget_ = 0;
  DiskImageCache disk_cache_;
  std::string where_;
  std::string scanned_data_, scanned_split_;
  Selection selection_;
  std::vector<Entry> entries_;              // one per distinct image (what caches hold)
  std::vector<std::size_t> sample_entries_;  // sample -> entry; an image listed N times appears N times
  DatasetInfo info_;
  std::size_t background_ = 0, missing_labels_ = 0, outlined_ = 0;
  mutable std::mutex issues_mutex_;
  std::vector<DataIssue> issues_;
};

void register_yolo_dataset(Registrar& r) {
  r.add_source<YoloDataset>(
      "yolo_dataset", YoloDataset::schema(),
      "Reads an Ultralytics-layout dataset (data.yaml, images/, labels/); checks every image "
      "and label at configure time, skipping or fixing bad data with a counted issue.",
      gives(Field::Boxes | Field::Polygons));
}

}  // namespace
}  // namespace yoloflow::plugins::yolo

YOLOFLOW_PLUGIN("yolo_dataset", "1.0.0", yoloflow::plugins::yolo::register_yolo_dataset)
