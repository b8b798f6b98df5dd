#pragma once
// `model=` as Ultralytics users write it on `yoloflow train`: an architecture (`yolo11s`,
// or its yaml, `yolo11s.yaml`) or a weights file to start from (`yolo11n.pt` of Ultralytics'
// releases, the best.pt of an earlier run). A file gives both the architecture and the initial
// weights, as `yolo train model=yolo11n.pt` does; its image size is the default, as
// Ultralytics keeps a checkpoint's imgsz.
#include <string>
#include <vector>

namespace yoloflow::core {

// `overrides` with every `model=` word rewritten into the overrides it stands for:
//   model=yolo11s.yaml  -> model=yolo11s (a name that is no file: Ultralytics' packaged yaml)
//   model=DIR/my.yaml   -> the architecture the file describes (training/model/model_yaml.h),
//                          or refused naming its line
//   model=FILE.pt       -> model=<its architecture> weights=<FILE, absolute> [imgsz=<its imgsz>]
//                          (no weights= with pretrained=False: the architecture from scratch)
// (imgsz only where no imgsz= is given). A file is anything ending in .pt or .pth, or an existing
// file: an Ultralytics checkpoint or a yoloflow one (both say their architecture); a plain
// state dict does not, and is refused with what to write instead. Other words stay as they are.
// Throws InvalidInput in one line naming the word.
std::vector<std::string> expand_model_words(const std::vector<std::string>& overrides);

}  // namespace yoloflow::core
