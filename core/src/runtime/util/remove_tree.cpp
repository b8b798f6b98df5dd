#include "runtime/util/remove_tree.h"

#include <ftw.h>

#include <cstdio>

namespace yoloflow::core {

void remove_tree(const std::string& path) {
  // Depth-first (FTW_DEPTH): a folder's entries go before it.
  nftw(path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

}  // namespace yoloflow::core
