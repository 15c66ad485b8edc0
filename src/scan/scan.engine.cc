// scan.engine.cc — Engine: the KB's patterns compiled into one match::Database (with a
// warning per pattern a backend rejected), the prefix and source-name parsers and the
// metric aliases; what a source's name says about its rank and node.
#include "scan/scan.h"

namespace ff::scan {

Result<std::shared_ptr<const Engine>> Engine::create(const kb::KnowledgeBase& kb, const EngineOptions& options) {
  std::shared_ptr<Engine> e(new Engine(kb));
  std::vector<match::PatternSpec> specs;
  for (size_t i = 0; i < kb.entries.size(); ++i) {
    for (size_t j = 0; j < kb.entries[i].patterns.size(); ++j) {
      specs.push_back({static_cast<uint32_t>(e->refs_.size()), kb.entries[i].patterns[j].regex});
      e->refs_.push_back({i, j});
    }
  }
  match::CompileOptions mo;
  mo.cache_dir = options.cache_dir;
  mo.cache_key = kb.hash;
  mo.use_vectorscan = options.use_vectorscan;
  FF_TRY(e->db_, match::Database::compile(specs, mo));
  for (const auto& r : e->db_->rejected()) {
    if (r.cached) continue;  // said when the cache was written
    const auto& ref = e->refs_.at(r.id);
    const kb::Entry& entry = kb.entries[ref.entry];
    const kb::Pattern& p = entry.patterns[ref.pattern];
    e->warnings_.push_back(
        make_error(ErrorCode::kInvalidKb,
                   std::string(r.backend_name()) + " rejected the pattern (" + r.message + ")" +
                       (r.backend == match::Rejected::Backend::kVectorscan ? "; RE2 serves it, more slowly" : ""),
                   {entry.file, p.line, "patterns." + p.id}));
  }
  FF_TRY(e->prefixes_, record::PrefixParser::create(kb.prefixes, record::PrefixParser::Matchers::kFast, kb.glue));
  FF_TRY(e->source_names_, record::PrefixParser::create(kb.source_names));
  FF_TRY(e->identity_, record::LineIdentity::create(kb.identity, kb.rank_headers));
  e->aliases_ = metrics::Aliases::from_kb(kb.metric_specs);
  return std::shared_ptr<const Engine>(std::move(e));
}

record::Origin Engine::origin_of_source(std::string_view name) const {
  // The formats are anchored at the start of what they are given: try the whole name,
  // then every suffix that follows a '/'; the first that says something wins.
  std::vector<std::string_view> tails{name};
  for (size_t p = name.find('/'); p != std::string_view::npos; p = name.find('/', p + 1))
    tails.push_back(name.substr(p + 1));
  record::Origin o;
  for (std::string_view tail : tails) {
    record::Record rec;
    source_names_->parse(tail, rec);
    if (rec.rank >= 0 && o.rank < 0) o.rank = rec.rank;
    if (rec.local_rank >= 0 && o.local_rank < 0) o.local_rank = rec.local_rank;
    if (!rec.node.empty() && o.node.empty()) o.node = std::string(rec.node);
  }
  return o;
}

}  // namespace ff::scan
