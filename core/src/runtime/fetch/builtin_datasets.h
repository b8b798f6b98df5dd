#pragma once
// data=coco8.yaml and the other small datasets Ultralytics' users name without a file: the
// dataset is fetched once as a zip into the datasets folder (runtime/fetch/named_assets.h),
// unpacked beside it, and its data.yaml written there, naming the unpacked folder.
#include <string>
#include <vector>

namespace yoloflow::core {

// coco8.yaml, coco8-seg.yaml, coco128.yaml, coco128-seg.yaml.
bool is_builtin_dataset_name(const std::string& name);

// What data=VALUE means: VALUE itself when it is a file there or names a folder; for a built-in
// name, the data.yaml in the datasets folder, the dataset fetched and unpacked first when missing.
// Throws InvalidInput in one line (offline: the URL, and where to put the zip by hand).
std::string locate_dataset(const std::string& value);

// `overrides` with each data=NAME of a built-in dataset that is no file here replaced by
// data=<its data.yaml in the datasets folder> (fetched first when missing).
std::vector<std::string> expand_data_words(const std::vector<std::string>& overrides);

}  // namespace yoloflow::core
