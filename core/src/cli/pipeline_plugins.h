#pragma once
// The plugin folders and libraries a pipeline file records (its "plugin_path"), loaded before
// the pipeline is checked, by every command that reads a pipeline file (validate, run, train):
// what one of them accepts or refuses, the others do too.
#include <string>

#include "cli/cli.h"

namespace yoloflow::cli {

// Adds the paths `file`'s "plugin_path" lists (relative ones from the file's folder) to
// ctx.plugin_paths, before the first plugin is loaded. Nothing when the file cannot be read or
// lists none: loading the pipeline reports what is wrong with it, a path that does not exist too.
void add_recorded_plugin_paths(CliContext& ctx, const std::string& file);

}  // namespace yoloflow::cli
