// A pipeline read, its command line's words applied, validated and resolved (see pipeline_loading.h).
#include "runtime/words/pipeline_loading.h"

#include <filesystem>

#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/pipeline_validation.h"
#include "runtime/util/file_checks.h"
#include "runtime/words/overrides.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

LoadedPipeline load_pipeline(const std::string& path, const std::vector<std::string>& overrides,
                             const Registry& registry) {
  LoadedPipeline result;
  std::string text;
  try {
    text = read_regular_file(path, kMaxPipelineBytes, "pipeline");
  } catch (const Error& e) {
    result.diagnostics.push_back({"", e.what()});
    return result;
  }
  const std::filesystem::path abs = std::filesystem::absolute(path).lexically_normal();
  return parse_pipeline(text, abs.parent_path().string(), overrides, registry, abs.string());
}

LoadedPipeline parse_pipeline(const std::string& text, const std::string& base_dir,
                              const std::vector<std::string>& overrides, const Registry& registry,
                              const std::string& file) {
  LoadedPipeline result;
  json doc;
  if (!read_pipeline_document(text, doc, result.diagnostics)) return result;
  apply_overrides(doc, overrides, registry, result.diagnostics);
  validate_pipeline(doc, base_dir, registry, file, result);
  return result;
}

}  // namespace yoloflow::core
