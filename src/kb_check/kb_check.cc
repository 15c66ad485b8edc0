#include "kb_check/kb_check.h"

#include <fmt/format.h>

#include <set>

#include "base/strings.h"
#include "match/match.h"
#include "record/record.h"

namespace ff::app {

LineWinner best_entry_for_line(const scan::Engine& engine, std::string_view message) {
  match::Scanner scanner(engine.db());
  std::vector<uint32_t> hits;
  scanner.scan(message, hits);
  LineWinner w;
  int best_prio = 0;
  size_t best_len = 0;
  for (uint32_t id : hits) {
    const auto& ref = engine.ref(id);
    const kb::Entry& e = engine.kb().entries[ref.entry];
    const kb::Pattern& p = e.patterns[ref.pattern];
    std::map<std::string, std::string> caps;
    std::pair<size_t, size_t> span{0, 0};
    engine.db().captures(id, message, &caps, &span);
    size_t len = span.second - span.first;
    w.all.push_back(e.id);
    bool better = w.entry_id.empty() || p.priority > best_prio ||
                  (p.priority == best_prio && (len > best_len || (len == best_len && e.id < w.entry_id)));
    if (better) {
      w.entry_id = e.id;
      w.pattern_id = p.id;
      w.captures = std::move(caps);
      best_prio = p.priority;
      best_len = len;
    }
  }
  return w;
}

// Over 80 lines: one pass over the entries runs the engine's rules (provenance, examples,
// negatives, links) on each entry with one scratch line and one scanner; the page rules
// are kb_lint.cc's check_pages.
KbCheckReport check_kb(const kb::KnowledgeBase& kb, const scan::Engine& engine, bool strict_pages) {
  KbCheckReport rep;
  rep.rules = {{"patterns.provenance"}, {"examples.win"}, {"negatives.no-match"}, {"links.exist"}, {"formats.samples"}};
  RuleCount &provenance = rep.rules[0], &wins = rep.rules[1], &negatives = rep.rules[2], &links = rep.rules[3],
            &samples = rep.rules[4];
  std::string clean;
  for (const auto& e : kb.entries) {
    rep.patterns += e.patterns.size();
    for (const auto& p : e.patterns) {
      ++provenance.checked;
      if (!p.sources.empty())
        ++rep.sourced;
      else if (!trim(p.source_note).empty())
        ++rep.noted;
      else if (++provenance.failed)
        rep.problems.push_back(
            fmt::format("{}:{}: {}: pattern '{}' has neither a source nor a source_note", e.file, p.line, e.id, p.id));
    }
    for (const auto& ex : e.examples) {
      ++rep.examples;
      ++wins.checked;
      bool ok = false;
      std::string why = "no line of the example matches any pattern of the entry";
      for (std::string_view line : split(ex.text, '\n')) {
        record::clean_line(line, clean);
        record::Record rec;
        engine.prefixes().parse(clean, rec);
        LineWinner w = best_entry_for_line(engine, rec.message);
        if (std::find(w.all.begin(), w.all.end(), e.id) == w.all.end()) continue;
        if (w.entry_id != e.id) {
          why =
              fmt::format("collision: the line is won by {} ({})", w.entry_id, std::string(trim(line)).substr(0, 100));
          continue;
        }
        bool caps_ok = true;
        for (const auto& [k, v] : ex.captures) {
          auto it = w.captures.find(k);
          if (it == w.captures.end() || it->second != v) {
            why = fmt::format("capture '{}' is '{}', expected '{}'", k, it == w.captures.end() ? "(none)" : it->second,
                              v);
            caps_ok = false;
          }
        }
        if (caps_ok) {
          ok = true;
          break;
        }
      }
      if (!ok && ++wins.failed)
        rep.problems.push_back(fmt::format("{}:{}: {}: example: {}", e.file, ex.line, e.id, why));
    }
    for (const auto& neg : e.negatives) {
      ++negatives.checked;
      record::clean_line(neg, clean);
      record::Record rec;
      engine.prefixes().parse(clean, rec);
      LineWinner w = best_entry_for_line(engine, rec.message);
      if (std::find(w.all.begin(), w.all.end(), e.id) != w.all.end() && ++negatives.failed)
        rep.problems.push_back(fmt::format("{}: {}: negative sample matches: {}", e.file, e.id, neg.substr(0, 100)));
    }
    for (const auto& l : e.lookalikes) {
      ++links.checked;
      if (!kb.find(l.id) && ++links.failed)
        rep.problems.push_back(fmt::format("{}: {}: lookalike entry '{}' does not exist", e.file, e.id, l.id));
    }
    if (!e.after_completion.empty()) {
      ++links.checked;
      if (!kb.find(e.after_completion) && ++links.failed)
        rep.problems.push_back(
            fmt::format("{}: {}: after_completion entry '{}' does not exist", e.file, e.id, e.after_completion));
    }
    for (const auto& r : e.related) {
      ++links.checked;
      if (!kb.find(r) && ++links.failed)
        rep.problems.push_back(fmt::format("{}: {}: related entry '{}' does not exist", e.file, e.id, r));
    }
  }
  samples.checked = kb.prefixes.size() + kb.source_names.size();
  for (const auto& bad : engine.prefixes().check_samples()) {
    ++samples.failed;
    rep.problems.push_back("formats: sample does not match: " + bad);
  }
  for (const auto& bad : engine.source_names().check_samples()) {
    ++samples.failed;
    rep.problems.push_back("formats/sources: sample does not match: " + bad);
  }
  check_pages(kb, rep, strict_pages);
  check_names(kb, rep, strict_pages);
  return rep;
}

}  // namespace ff::app
