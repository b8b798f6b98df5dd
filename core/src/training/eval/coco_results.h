#pragma once
// Ultralytics' save_json for detection: the COCO results format that pycocotools and
// Ultralytics read, one object per detection: image_id (the file's stem, a number when it is
// one), file_name, category_id, bbox [x, y, w, h] in the original image's pixels (top-left
// corner), score; a segmentation model's detections also `segmentation`, the mask in COCO's
// compressed RLE ({"size": [h, w], "counts": "..."}, training/eval/mask_rle.h).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "training/eval/weights_validation.h"

namespace yoloflow::core {

// Whether `data_yaml`'s `split` is COCO's own val2017 or test-dev2017 list, as Ultralytics
// decides to number categories as COCO does (1..90 with gaps) instead of class + 1.
bool is_coco_split(const std::string& data_yaml, const std::string& split);

// COCO's category id of each of its 80 detection classes, in class order.
const std::vector<int>& coco80_category_ids();

// The detections as a COCO results list. `coco_ids`: category ids as COCO numbers them
// (coco80_category_ids), else class + 1.
nlohmann::ordered_json coco_results(const std::vector<OriginalImageDetections>& predictions, bool coco_ids);

}  // namespace yoloflow::core
