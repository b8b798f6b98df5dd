// `yoloflow describe NAME`: a component's parameters (type, default, range, doc) and ports.
#include <iostream>

#include "cli/cli.h"
#include "runtime/plugin/describe.h"
#include "yoloflow/error.h"

namespace yoloflow::cli {

void add_describe_command(CLI::App& app, CliContext& ctx, Action& selected) {
  auto* cmd = app.add_subcommand("describe", "Show a plugin component's parameters and ports");
  struct Opts {
    std::string name, kind;
    bool json = false, markdown = false, all = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("name", o->name, "Component name (see `yoloflow plugins`)");
  cmd->add_option("--kind", o->kind, "Kind, when several kinds use the name");
  cmd->add_flag("--json", o->json, "Print the schema as JSON");
  cmd->add_flag("--markdown", o->markdown, "Print Markdown (the docs are generated this way)");
  cmd->add_flag("--all", o->all, "Describe every loaded component");
  cmd->callback([&ctx, &selected, o] {
    selected = [&ctx, o]() -> int {
      auto& reg = ctx.plugins().registry();
      std::vector<const core::RegisteredComponent*> chosen;
      if (o->all) {
        chosen = reg.all();
      } else {
        if (o->name.empty()) throw InvalidInput("describe: give a component name, or --all");
        for (const auto* rc : reg.all()) {
          if (rc->info.name == o->name && (o->kind.empty() || o->kind == kind_name(rc->info.kind))) {
            chosen.push_back(rc);
          }
        }
        if (chosen.empty()) {
          std::vector<std::string> names;
          for (const auto* rc : reg.all()) names.push_back(rc->info.name);
          std::string msg = "describe: no component named '" + o->name + "'";
          const auto guess = closest_name(o->name, names);
          if (!guess.empty()) msg += "; did you mean '" + guess + "'?";
          msg += " (`yoloflow plugins` lists them)";
          throw InvalidInput(msg);
        }
      }
      if (o->json) {
        json arr = json::array();
        for (const auto* rc : chosen) arr.push_back(core::describe_json(*rc));
        std::cout << (arr.size() == 1 && !o->all ? arr[0] : arr).dump(2) << std::endl;
      } else {
        for (const auto* rc : chosen) {
          std::cout << (o->markdown ? core::describe_markdown(*rc) : core::describe_text(*rc));
          if (!o->markdown) std::cout << "\n";
        }
      }
      return kExitOk;
    };
  });
}

}  // namespace yoloflow::cli
