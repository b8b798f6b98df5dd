#pragma once
// The one check of every run and file name a user gives yoloflow (project=, name=, a
// pipeline's "name", --run-dir, --out, --resume): made before anything is created, so a
// refused name leaves the disk as it was. A NUL byte would cut the name short where the
// system reads it (another file is written than the one named, or a loop finds its folder
// taken forever), a control character makes a file name that cannot be typed or shown, an
// empty path means no file, and `..` lets a name that belongs under a folder land outside it.
#include <string>

namespace yoloflow::core {

// A path to a file or folder: refused (InvalidInput, exit 2, naming `word` and why) when
// empty, or when it holds a NUL byte or a control character.
void check_path_word(const std::string& word, const std::string& value);

// A name that is put under a folder (runs/<name>, project/<name>): a path word that is also
// relative and never leaves that folder through "..".
void check_name_word(const std::string& word, const std::string& value);

}  // namespace yoloflow::core
