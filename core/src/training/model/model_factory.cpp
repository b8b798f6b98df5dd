// Architecture names -> configured model components (see model_factory.h).
#include "training/model/model_factory.h"

#include "runtime/pipeline/architecture_name.h"
#include "yoloflow/error.h"

namespace yoloflow::core {

std::unique_ptr<Model> create_model(const Registry& registry, const std::string& architecture, int nc,
                                    const json& extra) {
  const auto name = parse_architecture(registry, architecture);
  if (!name) {
    const std::string known = known_architectures(registry);
    throw InvalidInput("unknown model '" + architecture + "' (known: " + (known.empty() ? "none loaded" : known) + ")");
  }
  const RegisteredComponent* rc = registry.find(Kind::Model, name->plugin);
  json params = extra.is_object() ? extra : json::object();
  params.update(architecture_params(*name));
  if (nc > 0) params["nc"] = nc;
  Diagnostics diags;
  rc->info.schema.validate(params, "model", diags, nullptr, "model '" + architecture + "'");
  if (!diags.empty()) throw InvalidInput(diags.front().path + ": " + diags.front().message);
  auto model = registry.create_as<Model>(Kind::Model, rc->info.name, "model");
  StageContext ctx;
  ctx.node = "model";
  model->configure(Params(rc->info.schema.resolve(params), "model"), ctx);
  return model;
}

}  // namespace yoloflow::core
