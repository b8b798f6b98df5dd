#include "runtime/plugin/stage_flow.h"

namespace yoloflow::core {

StageFlow stage_flow(Kind kind) {
  switch (kind) {
    case Kind::Source: return {nullptr, "samples"};
    case Kind::Augmentation: return {"samples", "samples"};
    case Kind::Batcher: return {"samples", "batches"};
    case Kind::Sink: return {"batches", nullptr};
    default: return {nullptr, nullptr};
  }
}

AnnotationContract annotation_contract(const ComponentInfo& info) {
  if (info.contract.declared) return info.contract;
  switch (info.kind) {
    case Kind::Source: return gives(Field::Boxes);
    case Kind::Augmentation:
    case Kind::Batcher: return keeps(Field::Boxes);
    case Kind::Loss:
    case Kind::Evaluator: return needs(Field::Boxes);
    default: return {};
  }
}

std::string annotation_contract_text(const ComponentInfo& info) {
  const AnnotationContract c = annotation_contract(info);
  // The word each kind is about comes first, even when its set is empty ("keeps nothing").
  bool gives_first = false, keeps_first = false, needs_first = false;
  switch (info.kind) {
    case Kind::Source: gives_first = true; break;
    case Kind::Augmentation:
    case Kind::Batcher: keeps_first = true; break;
    case Kind::Sink:
    case Kind::Loss:
    case Kind::Evaluator: needs_first = true; break;
    default:
      if (!info.contract.declared) return {};
  }
  std::string out;
  auto part = [&](const char* word, Fields fields, bool always) {
    if (fields.empty() && !always) return;
    out += (out.empty() ? "" : "; ") + std::string(word) + " " + fields.names();
  };
  if (gives_first) part("gives", c.gives, true);
  if (keeps_first) part("keeps", c.keeps, true);
  if (needs_first) part("needs", c.needs, true);
  if (!gives_first) part("gives", c.gives, false);
  if (!keeps_first) part("keeps", c.keeps, false);
  if (!needs_first) part("needs", c.needs, false);
  // A kind whose default is nothing (a sink) says nothing more; the others say it is assumed.
  const AnnotationContract none;
  if (!info.contract.declared && !(c.gives == none.gives && c.keeps == none.keeps && c.needs == none.needs)) {
    out += " (the default: it declares none)";
  }
  return out;
}

}  // namespace yoloflow::core
