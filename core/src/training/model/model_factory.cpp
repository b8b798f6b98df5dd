// Architecture names -> configured model components (see model_factory.h).
#include "training/model/model_factory.h"

#include "yoloflow/error.h"

namespace yoloflow::core {

std::unique_ptr<Model> create_model(const Registry& registry, const std::string& architecture, int nc,
                                    const json& extra) {
  const RegisteredComponent* rc = registry.find(Kind::Model, architecture);
  json params = extra.is_object() ? extra : json::object();
  if (!rc && architecture.size() > 1) {
    // "yolo11n": plugin "yolo11" with scale "n".
    const auto base = architecture.substr(0, architecture.size() - 1);
    const auto* cand = registry.find(Kind::Model, base);
    const auto* scale = cand ? cand->info.schema.find("scale") : nullptr;
    if (scale) {
      const auto letter = architecture.substr(architecture.size() - 1);
      for (const auto& c : scale->enum_choices) {
        if (c == letter) {
          rc = cand;
          params["scale"] = letter;
        }
      }
    }
  }
  if (!rc) {
    std::string known;
    for (const auto& n : registry.names(Kind::Model)) {
      const auto* r = registry.find(Kind::Model, n);
      const auto* scale = r->info.schema.find("scale");
      if (scale) {
        for (const auto& c : scale->enum_choices) known += (known.empty() ? "" : ", ") + n + c;
      } else {
        known += (known.empty() ? "" : ", ") + n;
      }
    }
    throw InvalidInput("unknown model '" + architecture + "' (known: " + (known.empty() ? "none loaded" : known) + ")");
  }
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
