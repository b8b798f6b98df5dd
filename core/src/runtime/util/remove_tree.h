#pragma once
// Deletes a folder tree, like std::filesystem::remove_all, which must not be called in this
// project: the PyTorch 2.11 wheel's libtorch.so exports a broken copy of it that interposes
// and crashes. A missing path is not an error; symbolic links are removed, not followed.
#include <string>

namespace yoloflow::core {

void remove_tree(const std::string& path);

}  // namespace yoloflow::core
