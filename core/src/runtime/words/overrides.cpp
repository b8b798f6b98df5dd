// The command line's words expanded and applied to a pipeline document (see overrides.h).
#include "runtime/words/overrides.h"

#include <algorithm>

#include "runtime/pipeline/json_text.h"
#include "runtime/pipeline/override_path.h"
#include "runtime/words/shortcut_words.h"
#include "runtime/words/training_words.h"
#include "runtime/words/ultralytics_arguments.h"
#include "runtime/words/word_values.h"
#include "yoloflow/log.h"

namespace yoloflow::core {
namespace {

// A word given twice (epochs=3 ... epochs=5) is refused, as a key given twice in the file is:
// which one was meant is not for yoloflow to guess. The first is kept, so that the other
// problems are still found.
std::vector<std::string> without_repeated_words(const std::vector<std::string>& given, Diagnostics& out) {
  std::vector<std::string> kept;
  for (const auto& item : given) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const auto earlier = eq == std::string::npos || eq == 0
                             ? kept.end()
                             : std::find_if(kept.begin(), kept.end(), [&](const std::string& o) {
                                 return o.compare(0, key.size() + 1, key + "=") == 0;
                               });
    if (earlier != kept.end()) {
      out.push_back({key, "'" + key + "' is given twice on the command line: " + *earlier + ", then " + item +
                              "; give it once"});
      continue;
    }
    kept.push_back(item);
  }
  return kept;
}

// Every word as the path=value overrides it stands for. Ultralytics' words that train does not
// take but that ask for nothing (a saved run's arguments at their defaults, predict's settings)
// are taken, and named in one note.
std::vector<std::string> expanded_words(json& document, const std::vector<std::string>& words,
                                        const Registry& registry, Diagnostics& out) {
  std::vector<std::string> overrides;
  const bool training = !training_sink(document, registry).empty();
  std::string ignored;
  for (const auto& item : words) {
    const auto eq = item.find('=');
    if (training && eq != std::string::npos && eq > 0) {
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      const bool none = find_ultralytics_argument(key) != nullptr && is_ultralytics_none(value);  // not set: the default
      if (none || (!ultralytics_refusal(key, "train").empty() && ultralytics_word_asks_nothing(key, value, "train"))) {
        ignored += (ignored.empty() ? "" : " ") + item;
        continue;
      }
    }
    const auto expanded = eq == std::string::npos || eq == 0
                              ? std::vector<std::string>{}
                              : expand_shortcut(item.substr(0, eq), item.substr(eq + 1), document, words, registry, out);
    if (expanded.empty()) {
      overrides.push_back(item);
    } else {
      for (const auto& e : expanded) {
        // Two words for one defaulted component (box= cls=) write it out once.
        if (!e.empty() && std::find(overrides.begin(), overrides.end(), e) == overrides.end()) overrides.push_back(e);
      }
    }
  }
  if (!ignored.empty()) {
    YF_LOG_INFO(ultralytics_ignored_note("train", ignored));
  }
  return overrides;
}

}  // namespace

void apply_overrides(json& document, const std::vector<std::string>& overrides_given,
                     const Registry& registry, Diagnostics& out) {
  const std::vector<std::string> words = without_repeated_words(overrides_given, out);
  for (const auto& item : expanded_words(document, words, registry, out)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      out.push_back({item, "an override looks like path=value, e.g. epochs=3 or "
                           "stages.letterbox.params.auto=true"});
      continue;
    }
    const std::string key = item.substr(0, eq);
    // JSON, or the value as Ultralytics users write it (True, 1e-3, [0,2]), or the string
    // itself (`name=coco` means "coco").
    const json value = parse_word_value(item.substr(eq + 1));
    // 1e400 reads as infinity, which no setting takes and a document writes back as null.
    if (std::string where; !all_numbers_finite(value, key, where)) {
      out.push_back({where, item.substr(eq + 1) + " " + kNonFiniteNumber});
      continue;
    }
    apply_override(document, key, value, registry, out);
  }
  // As Ultralytics warns: optimizer=auto picks lr0 and momentum itself.
  if (const std::string warning = optimizer_auto_warning(document, words, registry); !warning.empty()) {
    YF_LOG_WARN(warning);
  }
}

}  // namespace yoloflow::core
