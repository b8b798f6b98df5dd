#pragma once
// Files named as Ultralytics users name them, fetched on first use: the released YOLO11
// weights (model=yolo11n.pt) into the weights folder. Each is fetched into NAME.part (resumed
// when a transfer was cut), checked, its SHA-256 logged, and only then renamed to NAME: a
// file under its final name is always complete and readable.
//
// Where files go (created when missing):
//   weights:  $YOLOFLOW_WEIGHTS_DIR,  else <cache>/weights
//   datasets: $YOLOFLOW_DATASETS_DIR, else <cache>/datasets
//   sources:  $YOLOFLOW_SOURCES_DIR,  else <cache>/sources (predict source=https://.../bus.jpg)
//   <cache>:  $XDG_CACHE_HOME/yoloflow, else ~/.cache/yoloflow
// From: $YOLOFLOW_ASSETS_URL (a mirror, or a test server), else Ultralytics' release assets
// https://github.com/ultralytics/assets/releases/download, with the release's folder after it.
#include <functional>
#include <string>

namespace yoloflow::core {

std::string weights_folder();
std::string datasets_folder();
std::string sources_folder();
std::string assets_base_url();

// yolo11{n,s,m,l,x}.pt and yolo11{n,s,m,l,x}-seg.pt: the names fetched.
bool is_released_weights_name(const std::string& name);
// <base>/v8.3.0/<name>
std::string released_weights_url(const std::string& name);

// Throws InvalidInput (one line, why) when the file at `path` is not what was asked for.
using FileCheck = std::function<void(const std::string& path)>;

// Fetches `url` to `dest` through `dest`.part: the whole transfer (resumed from the part's
// size), then `check` on the part, then the rename. Concurrent fetches of one file (the ranks
// of a distributed run) wait for each other and the later ones find it there. `hint` ends a
// failure's line with what the user can do instead ("put it in F by hand..."). Throws
// InvalidInput in one line naming the URL: offline, HTTP errors, a wrong size, a failed check
// (the part is removed then: fetching it again would only resume the same bytes).
void fetch_file(const std::string& url, const std::string& dest, const FileCheck& check, const std::string& hint);

// predict source=http(s)://host/path/NAME (Ultralytics' URL sources): the file fetched once into
// <sources>/<the URL's digest>/NAME (so that two URLs ending in the same name stay apart, and the
// same URL is fetched once) and its path returned. `check` reads the fetched file. Throws
// InvalidInput in one line naming the URL (offline, HTTP errors, a URL that names no file).
std::string locate_source_url(const std::string& url, const FileCheck& check);

// What model=VALUE means as a weights file: VALUE itself when it exists; for a released name
// given bare (no folder), the file in the weights folder, fetched there first when missing
// (`check` reads it whole). Anything else comes back as it is (the caller says it is missing).
std::string locate_weights(const std::string& value, const FileCheck& check);

}  // namespace yoloflow::core
