#pragma once
// Text from users and their files (paths, file names, class names, keys) made safe to print.
// A name may hold any byte but '/' and NUL: a newline would split a message into a forged
// second line, ESC sequences would recolour, move or clear the terminal, a carriage return
// would overwrite the line. Printed, each such character is spelled out as C/JSON escape:
// "\n", "\r", "\t", "\x1b", "\u0085"; bytes that are no UTF-8 as "\xNN". A backslash is left
// as it is, so escaping text twice changes nothing more (printable(printable(s)) ==
// printable(s)), and any path without such characters prints unchanged.
#include <string>
#include <string_view>

#include "yoloflow/export.h"

namespace yoloflow {

// Every control character escaped, line breaks too: for a name put into a message.
YOLOFLOW_SDK_API std::string printable(std::string_view text);

// The same, but a '\n' or '\t' stays what it is: for a whole message whose line breaks and
// tabs are its own (the logger and the CLI's error line pass every message through this, so
// no terminal control reaches the screen from any message, whoever made it).
YOLOFLOW_SDK_API std::string printable_lines(std::string_view text);

}  // namespace yoloflow
