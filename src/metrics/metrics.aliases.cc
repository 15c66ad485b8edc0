// metrics.aliases.cc — Aliases: the metric names, keys and units of
// kb/formats/metrics.yaml in an open-addressing table that looks at a key's length and
// three bytes (the lookup runs for every number of every progress line).
#include "base/strings.h"
#include "metrics/metrics.h"

namespace ff::metrics {

namespace {

inline char lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// The hash looks at the length and three bytes only: keys are few, the comparison
// that follows is exact, and the lookup runs for every number of every progress line.
inline uint32_t hash_key(std::string_view k) {
  if (k.empty()) return 1;
  uint32_t h = static_cast<uint32_t>(k.size()) * 0x9e3779b1u;
  h ^= static_cast<unsigned char>(k[0]) * 0x85ebca6bu;
  h ^= static_cast<unsigned char>(k[k.size() - 1]) * 0xc2b2ae35u;
  h ^= static_cast<unsigned char>(k[k.size() / 2]) * 0x27d4eb2fu;
  return (h ^ (h >> 15)) | 1;  // never 0
}

inline uint32_t hash_key_lower(std::string_view k) {
  if (k.empty()) return 1;
  uint32_t h = static_cast<uint32_t>(k.size()) * 0x9e3779b1u;
  h ^= static_cast<unsigned char>(lower_ascii(k[0])) * 0x85ebca6bu;
  h ^= static_cast<unsigned char>(lower_ascii(k[k.size() - 1])) * 0xc2b2ae35u;
  h ^= static_cast<unsigned char>(lower_ascii(k[k.size() / 2])) * 0x27d4eb2fu;
  return (h ^ (h >> 15)) | 1;
}

}  // namespace

void Aliases::Table::grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  for (const Slot& s : old) {
    if (s.key == UINT32_MAX) continue;
    size_t i = s.hash & (slots_.size() - 1);
    while (slots_[i].key != UINT32_MAX) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = s;
  }
}

void Aliases::Table::insert(std::string_view key, MetricId id, double scale) {
  if (find(key)) return;  // as std::map::emplace: the first one stays
  if ((keys_.size() + 1) * 2 > slots_.size()) grow();
  uint32_t h = hash_key(key);
  size_t i = h & (slots_.size() - 1);
  while (slots_[i].key != UINT32_MAX) i = (i + 1) & (slots_.size() - 1);
  keys_.emplace_back(key);
  slots_[i] = Slot{h, static_cast<uint32_t>(keys_.size() - 1), {id, scale}};
}

// The probe of find() and find_lower(): the key compared as given, or lower-cased byte by
// byte.
template <bool kLower>
const std::pair<MetricId, double>* Aliases::Table::probe(std::string_view key) const {
  if (slots_.empty()) return nullptr;
  const uint32_t h = kLower ? hash_key_lower(key) : hash_key(key);
  for (size_t i = h & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
    const Slot& s = slots_[i];
    if (s.key == UINT32_MAX) return nullptr;
    if (s.hash != h) continue;
    const std::string& k = keys_[s.key];
    if (k.size() != key.size()) continue;
    bool same = true;
    for (size_t j = 0; j < k.size() && same; ++j) same = (kLower ? lower_ascii(key[j]) : key[j]) == k[j];
    if (same) return &s.value;
  }
}

const std::pair<MetricId, double>* Aliases::Table::find(std::string_view key) const { return probe<false>(key); }

const std::pair<MetricId, double>* Aliases::Table::find_lower(std::string_view key) const { return probe<true>(key); }

MetricId Aliases::key_any_case(std::string_view key) const {
  auto* v = keys_.find_lower(key);
  return v ? v->first : kNoMetric;
}

MetricId Aliases::by_key_any_case(std::string_view key) const {
  auto* v = keys_.find_lower(key);
  return v ? static_cast<MetricId>(v->first & ~kEventKey) : kNoMetric;
}

Aliases Aliases::from_kb(const std::vector<kb::MetricSpec>& specs) {
  Aliases a;
  for (const auto& s : specs) {
    MetricId id = static_cast<MetricId>(a.names_.size());
    a.names_.push_back(s.name);
    if (s.name == "step") a.step_ = id;
    for (const auto& k : s.keys) {
      std::string lk = to_lower(k);
      a.keys_.insert(lk, id, 1.0);
      a.max_key_ = std::max(a.max_key_, lk.size());
    }
    for (const auto& k : s.event_keys) {
      std::string lk = to_lower(k);
      a.keys_.insert(lk, static_cast<MetricId>(id | kEventKey), 1.0);
      a.max_key_ = std::max(a.max_key_, lk.size());
    }
    for (const auto& u : s.units) a.units_.insert(u.unit, id, u.scale);
  }
  a.loss_ = a.id("loss");
  for (const auto& s : specs) {
    if (s.total_of == "step" && a.step_ != kNoMetric) a.step_total_ = a.id(s.name);
  }
  if (const auto* u = a.units_.find("")) a.has_empty_unit_ = true, a.empty_unit_ = *u;
  return a;
}

MetricId Aliases::by_key(std::string_view key) const {
  auto* v = keys_.find(key);
  return v ? static_cast<MetricId>(v->first & ~kEventKey) : kNoMetric;
}

MetricId Aliases::by_unit(std::string_view unit) const {
  auto* v = units_.find(unit);
  return v ? v->first : kNoMetric;
}

double Aliases::unit_scale(std::string_view unit) const {
  auto* v = units_.find(unit);
  return v ? v->second : 1.0;
}

MetricId Aliases::id(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<MetricId>(i);
  }
  return kNoMetric;
}

}  // namespace ff::metrics
