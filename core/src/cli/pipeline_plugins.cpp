#include "cli/pipeline_plugins.h"

#include <algorithm>
#include <filesystem>

#include "runtime/pipeline/json_text.h"
#include "runtime/util/file_checks.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_recorded_plugin_paths(CliContext& ctx, const std::string& file) {
  namespace fs = std::filesystem;
  if (file.empty() || !core::not_a_regular_file(file).empty()) return;
  std::string text;
  try {
    text = core::read_regular_file(file, core::kMaxPipelineBytes, "pipeline");
  } catch (const Error&) {
    return;
  }
  json doc;
  Diagnostics ignored;
  if (!core::parse_json_text(text, doc, ignored) || !doc.is_object() || !doc.contains("plugin_path")) return;
  const json& list = doc["plugin_path"];
  if (!list.is_array()) return;
  const fs::path dir = fs::absolute(file).parent_path();
  for (const auto& e : list) {
    if (!e.is_string() || e.get<std::string>().empty()) continue;
    const fs::path p(e.get<std::string>());
    const std::string path = (p.is_absolute() ? p : dir / p).lexically_normal().string();
    if (std::find(ctx.plugin_paths.begin(), ctx.plugin_paths.end(), path) == ctx.plugin_paths.end()) {
      ctx.plugin_paths.push_back(path);
    }
  }
}

}  // namespace yoloflow::cli
