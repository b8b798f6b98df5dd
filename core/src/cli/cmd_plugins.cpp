// `yoloflow plugins`: what is loaded, from where, and what was refused and why. Listing is what
// the command is for: it succeeds (0) when it could list everything, refused libraries included
// (they are the answer, not a failure of the command). --strict makes a refused library exit 3
// (kExitPluginError), for scripts that check an installation.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli/cli.h"
#include "runtime/plugin/stage_flow.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_plugins_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("plugins", "List loaded plugin components (name, kind, version, file, annotation "
                                            "fields) and every library that was refused, with the reason");
  auto json_out = std::make_shared<bool>(false);
  auto strict = std::make_shared<bool>(false);
  auto allow_refused = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON instead of a table");
  auto* strict_flag =
      cmd->add_flag("--strict", *strict, "Exit 3 when a library in the plugin folders was refused (checks an installation)");
  cmd->add_flag("--allow-refused", *allow_refused,
                "Exit 0 even when a library was refused: the default, kept for scripts written for earlier versions")
      ->excludes(strict_flag);
  cmd->callback([&ctx, &selected, json_out, strict] {
    selected = [&ctx, json_out, strict]() -> int {
      auto& pm = ctx.plugins();
      bool refused = false;
      for (const auto& r : pm.reports()) refused |= !r.loaded;
      const int code = refused && *strict ? kExitPluginError : kExitOk;
      if (*json_out) {
        json out;
        out["search_dirs"] = pm.search_dirs();
        out["components"] = json::array();
        for (const auto* rc : pm.registry().all()) {
          out["components"].push_back({{"name", rc->info.name},
                                       {"kind", kind_name(rc->info.kind)},
                                       {"plugin", rc->plugin},
                                       {"version", rc->plugin_version},
                                       {"file", rc->file},
                                       {"summary", rc->info.summary},
                                       {"fields", core::annotation_contract_text(rc->info)}});
        }
        out["refused"] = json::array();
        for (const auto& r : pm.reports()) {
          if (!r.loaded) out["refused"].push_back({{"file", r.path}, {"reason", r.reason}});
        }
        std::cout << out.dump(2) << std::endl;
        return code;
      }
      // The annotation fields last, after the file: scripts read the first four columns.
      std::size_t file_width = 4;
      for (const auto* rc : pm.registry().all()) file_width = std::max(file_width, rc->file.size());
      std::cout << std::left << std::setw(22) << "NAME" << std::setw(14) << "KIND" << std::setw(10) << "VERSION"
                << std::setw(static_cast<int>(file_width + 2)) << "FILE" << "FIELDS\n";
      for (const auto* rc : pm.registry().all()) {
        const std::string fields = core::annotation_contract_text(rc->info);
        std::cout << std::left << std::setw(22) << rc->info.name << std::setw(14) << kind_name(rc->info.kind)
                  << std::setw(10) << rc->plugin_version;
        if (fields.empty()) {
          std::cout << rc->file << "\n";
        } else {
          std::cout << std::setw(static_cast<int>(file_width + 2)) << rc->file << fields << "\n";
        }
      }
      bool any_refused = false;
      for (const auto& r : pm.reports()) {
        if (r.loaded) continue;
        if (!any_refused) std::cout << "\nRefused:\n";
        any_refused = true;
        std::cout << "  " << r.path << ": " << r.reason << "\n";
      }
      std::cout << "\nSearched: ";
      for (std::size_t i = 0; i < pm.search_dirs().size(); ++i) {
        std::cout << (i ? ", " : "") << pm.search_dirs()[i];
      }
      std::cout << std::endl;
      if (code != kExitOk) std::cerr << "error: a plugin library was refused (listed above; --strict)" << std::endl;
      return code;
    };
  });
}

}  // namespace yoloflow::cli
