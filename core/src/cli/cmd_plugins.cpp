// `yoloflow plugins`: what is loaded, from where, and what was refused and why. A refused
// library makes the exit code 3 (kExitPluginError), so scripts notice; --allow-refused keeps 0.
#include <iomanip>
#include <iostream>

#include "cli/cli.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_plugins_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("plugins", "List loaded plugin components (name, kind, version, file) "
                                            "and every library that was refused, with the reason");
  auto json_out = std::make_shared<bool>(false);
  auto allow_refused = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "Print JSON instead of a table");
  cmd->add_flag("--allow-refused", *allow_refused, "Exit 0 even when a library was refused");
  cmd->callback([&ctx, &selected, json_out, allow_refused] {
    selected = [&ctx, json_out, allow_refused]() -> int {
      auto& pm = ctx.plugins();
      bool refused = false;
      for (const auto& r : pm.reports()) refused |= !r.loaded;
      const int code = refused && !*allow_refused ? kExitPluginError : kExitOk;
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
                                       {"summary", rc->info.summary}});
        }
        out["refused"] = json::array();
        for (const auto& r : pm.reports()) {
          if (!r.loaded) out["refused"].push_back({{"file", r.path}, {"reason", r.reason}});
        }
        std::cout << out.dump(2) << std::endl;
        return code;
      }
      std::cout << std::left << std::setw(22) << "NAME" << std::setw(14) << "KIND" << std::setw(10)
                << "VERSION" << "FILE\n";
      for (const auto* rc : pm.registry().all()) {
        std::cout << std::left << std::setw(22) << rc->info.name << std::setw(14)
                  << kind_name(rc->info.kind) << std::setw(10) << rc->plugin_version << rc->file
                  << "\n";
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
      if (code != kExitOk) std::cerr << "error: a plugin library was refused (listed above); --allow-refused exits 0" << std::endl;
      return code;
    };
  });
}

}  // namespace yoloflow::cli
