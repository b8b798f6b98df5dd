#pragma once
// A weights file named as Ultralytics users name it (model=yolo11n.pt, --weights yolo11n.pt):
// the file there when it exists, else the one in the weights folder, else Ultralytics' released
// file fetched into that folder (runtime/fetch/named_assets.h). A fetched file is kept only
// once the safe reader has read it whole as an Ultralytics YOLO11 checkpoint.
#include <string>

namespace yoloflow::core {

// The path to read for `value`; `value` itself when it is no released name and no file (the
// caller says it is missing). Throws InvalidInput in one line when a fetch fails (the URL, and
// where to put the file by hand) or the fetched file is unusable.
std::string locate_weights_file(const std::string& value);

// Throws InvalidInput unless `path` reads whole as an Ultralytics YOLO11 checkpoint.
void check_released_weights(const std::string& path);

}  // namespace yoloflow::core
