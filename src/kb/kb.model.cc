// kb/kb.model.cc — the model's names and fixed lists, and the id index.
#include "kb/kb.h"
#include "kb/kb_internal.h"

namespace ff::kb {

const char* role_name(Role role) {
  switch (role) {
    case Role::kRoot: return "root";
    case Role::kCollateral: return "collateral";
    case Role::kSymptom: return "symptom";
    case Role::kContext: return "context";
    case Role::kCompletion: return "completion";
  }
  return "root";
}

const char* precedence_name(Precedence p) {
  switch (p) {
    case Precedence::kHardware: return "hardware";
    case Precedence::kRoot: return "root";
    case Precedence::kWeak: return "weak";
    case Precedence::kCollateral: return "collateral";
    case Precedence::kNone: return "none";
  }
  return "none";
}

const std::vector<std::string>& categories() {
  static const std::vector<std::string> kCats = {
      "gpu-memory",    "host-memory",   "numerical", "communication", "hardware",    "cuda-runtime", "checkpoint",
      "configuration", "data-pipeline", "launcher",  "storage",       "compilation", "model-code",   "hang"};
  return kCats;
}

const std::vector<std::string>& phases() {
  static const std::vector<std::string> kPhases = {
      "startup",    "data-loading", "forward", "backward", "optimizer-step", "checkpoint", "communication",
      "evaluation", "shutdown",     "serving", "any"};
  return kPhases;
}

const Entry* KnowledgeBase::find(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : &entries[it->second];
}

void Loader::index(KnowledgeBase& kb) {
  kb.by_id_.clear();
  for (size_t i = 0; i < kb.entries.size(); ++i) kb.by_id_[kb.entries[i].id] = i;
}

void Loader::add(KnowledgeBase& kb, Entry e) {
  auto it = kb.by_id_.find(e.id);
  if (it != kb.by_id_.end()) {
    kb.entries[it->second] = std::move(e);  // an override replaces the entry with the same id
  } else {
    kb.by_id_[e.id] = kb.entries.size();
    kb.entries.push_back(std::move(e));
  }
}

}  // namespace ff::kb
