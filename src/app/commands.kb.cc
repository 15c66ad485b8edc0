// app/commands.kb.cc — the knowledge base's commands: `kb check`, `kb list`, `explain`
// and `site` (the static encyclopedia).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/commands.h"
#include "kb_check/kb_check.h"
#include "pipeline/pipeline.h"
#include "pipeline/terminal.h"
#include "base/escape.h"
#include "base/markdown.h"
#include "base/strings.h"
#include "base/wrap.h"
#include "kb/kb.h"
#include "report/format.h"
#include "site/site.h"

namespace ff::app {

namespace {

// Whether kb list's filters (--category, --framework, --phase, --tag) keep the entry.
bool kept_by_filters(const kb::Entry& e, const Options& opt) {
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  return (opt.filter_category.empty() || e.category == opt.filter_category) &&
         (opt.filter_framework.empty() || has(e.frameworks, opt.filter_framework)) &&
         (opt.filter_phase.empty() || e.phase == opt.filter_phase) &&
         (opt.filter_tag.empty() || has(e.tags, opt.filter_tag));
}

// kb list --tags: the tags of the entries the filters keep, most used first.
int print_tags(const kb::KnowledgeBase& kb, const Options& opt) {
  std::map<std::string, size_t> count;
  for (const auto& e : kb.entries)
    if (kept_by_filters(e, opt))
      for (const auto& t : e.tags) ++count[t];
  std::vector<std::pair<std::string, size_t>> tags(count.begin(), count.end());
  std::stable_sort(tags.begin(), tags.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (opt.format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& [t, n] : tags) j[t] = n;
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  } else {
    std::string out;
    for (const auto& [t, n] : tags) out += fmt::format("{:>4}  {}\n", n, escape_for_terminal(t));
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return tags.empty() ? 1 : 0;
}

// explain's page after the fix: where the verify command runs and what it shows, the
// transient/terminal rule, prevention, the FAQ and the code examples (md: a text field
// without its Markdown markers, escaped for the terminal).
template <typename Md>
std::string explain_page(const kb::Entry& entry, const Md& md) {
  const kb::Entry* e = &entry;
  auto t1 = [](const std::string& s) { return escape_for_terminal(s); };
  auto tn = [](const std::string& s) { return escape_for_terminal(s, true); };
  std::string out;
  // The reports' words for where it runs (they end in a colon, as a line before the command).
  const std::string where = report::detail::verify_where_text(e->verify_where);
  out += fmt::format("\nVerify{}\n", where.empty() ? "" : ": " + where.substr(0, where.size() - 1));
  // Code to paste is never wrapped (base/wrap.h kVerbatim).
  for (std::string_view line : split(trim(e->verify), '\n'))
    out += fmt::format("{}    {}\n", kVerbatim, tn(std::string(line)));
  if (!e->verify_expect.empty()) out += fmt::format("  expect: {}\n", md(e->verify_expect));
  if (!e->transience.empty() || !e->transience_recovers.empty()) {
    out += fmt::format("\nTransient or terminal: {}\n", t1(e->transience.empty() ? "see below" : e->transience));
    if (!e->transience_recovers.empty()) out += fmt::format("  recovers: {}\n", md(e->transience_recovers));
    if (!e->transience_stop.empty()) out += fmt::format("  stop: {}\n", md(e->transience_stop));
  }
  if (!e->prevention.empty()) {
    out += fmt::format("\nPrevention\n");
    for (const auto& p : e->prevention) out += fmt::format("  - {}\n", md(p));
  }
  if (!e->faq.empty()) {
    out += "\nFAQ\n";
    const kb::Faq& q = e->faq;
    for (auto [question, answer] : {std::pair{"Hardware or software?", &q.hardware_or_software},
                                    {"How long does the fix take?", &q.fix_time},
                                    {"Does it affect inference?", &q.inference},
                                    {"Cheapest way to confirm?", &q.cheapest_confirm},
                                    {"From 1 GPU to 1,000?", &q.scale},
                                    {"What to monitor?", &q.monitor}})
      if (!answer->empty()) out += fmt::format("  {}\n    {}\n", question, md(std::string(trim(*answer))));
    for (const auto& d : q.docs)
      out += fmt::format("  Documentation\n    {}{}\n", t1(d.url), d.note.empty() ? "" : "  (" + t1(d.note) + ")");
  }
  if (!e->code_examples.empty()) {
    out += "\nCode examples\n";
    for (const auto& [kind, code] : e->code_examples) {
      out += fmt::format("  {}:\n", t1(kind));
      for (std::string_view line : split(trim(code), '\n')) out += fmt::format("    {}\n", tn(std::string(line)));
    }
  }
  return out;
}

}  // namespace

int run_kb_check(const Options& opt) {
  auto loaded = load_or_say(opt, true, KbFields::kAll);
  if (!loaded) return 2;
  KbCheckReport rep = check_kb(*loaded->kb, *loaded->engine, opt.strict_pages);
  for (const auto& e : loaded->kb_errors) fmt::print("error: {}\n", escape_for_terminal(e.to_string()));
  for (const auto& e : loaded->engine->warnings()) fmt::print("warning: {}\n", escape_for_terminal(e.to_string()));
  for (const auto& p : rep.page_warnings) fmt::print("warning: {}\n", escape_for_terminal(p));
  for (const auto& p : rep.problems) fmt::print("error: {}\n", escape_for_terminal(p));
  size_t errors = loaded->kb_errors.size() + rep.problems.size();
  fmt::print("{} entries, {} patterns, {} examples checked, {} prefix formats; {} error(s)\n",
             loaded->kb->entries.size(), rep.patterns, rep.examples, loaded->kb->prefixes.size(), errors);
  std::map<std::string, int> per_cat;
  for (const auto& e : loaded->kb->entries) per_cat[e.category]++;
  std::string cats;
  for (const auto& c : kb::categories()) cats += fmt::format(" {}={}", c, per_cat[c]);
  fmt::print("categories:{}\n", cats);
  fmt::print("provenance: {} of {} patterns name their upstream source, {} carry a source_note\n", rep.sourced,
             rep.patterns, rep.noted);
  fmt::print("rules:\n");
  for (const auto& r : rep.rules)
    fmt::print("  {:<28} {:>5} checked, {:>4} failed{}\n", r.name, r.checked, r.failed,
               r.warned ? fmt::format(", {} warned (--kb entries; --strict fails them)", r.warned) : "");
  return errors == 0 ? 0 : 1;
}

// Over 80 lines: the filters' check, the filtering and the two layouts (a table that fits
// the terminal, or JSON) share the rows; split, each part would take them all as arguments.
int run_kb_list(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kAll);
  if (!loaded) return 2;
  // A filter value no entry has is a mistake, not an empty answer: say which values exist
  // (`--framework PyTorch`: the frameworks are written in lower case).
  {
    std::set<std::string> cats, fws, tags;
    for (const auto& e : loaded->kb->entries) {
      cats.insert(e.category);
      fws.insert(e.frameworks.begin(), e.frameworks.end());
      tags.insert(e.tags.begin(), e.tags.end());
    }
    bool bad = false;
    auto check = [&](const char* flag, const std::string& value, const std::set<std::string>& known) {
      if (value.empty() || known.count(value)) return;
      bad = true;
      std::vector<std::string> all(known.begin(), known.end());
      auto near = nearest_words(value, all, 3);
      std::string hint = near.empty() ? "" : fmt::format("; did you mean {}?", fmt::join(near, ", "));
      std::string listed =
          all.size() <= 40 ? fmt::format("\n  {} values: {}", flag, fmt::join(all, ", "))
                           : fmt::format("\n  ({} values; firstfault kb list --format json shows them)", all.size());
      fmt::print(stderr, "firstfault: no entry has {} '{}'{}{}\n", flag, escape_for_terminal(value), hint,
                 escape_for_terminal(listed, true));
    };
    check("--category", opt.filter_category, cats);
    check("--framework", opt.filter_framework, fws);
    check("--tag", opt.filter_tag, tags);
    if (bad) return 2;
  }
  if (opt.list_tags) return print_tags(*loaded->kb, opt);
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  std::vector<std::array<std::string, 4>> rows;
  size_t listed = 0;
  for (const auto& e : loaded->kb->entries) {
    if (!kept_by_filters(e, opt)) continue;
    ++listed;
    if (opt.format == "json") {
      arr.push_back({{"id", e.id},
                     {"title", e.title},
                     {"category", e.category},
                     {"phase", e.phase},
                     {"severity", e.severity},
                     {"frameworks", e.frameworks},
                     {"tags", e.tags}});
    } else {
      rows.push_back({escape_for_terminal(e.id), escape_for_terminal(e.category), escape_for_terminal(e.phase),
                      escape_for_terminal(e.title)});
    }
  }
  if (opt.format != "json") {
    // Columns as wide as their longest cell; on a terminal the title is cut to what is
    // left of its width, or, when too little is left, goes under the id.
    const size_t width = output_width(STDOUT_FILENO);
    size_t id_w = 0, cat_w = 0, phase_w = 0;
    for (const auto& r : rows) {
      id_w = std::max(id_w, display_width(r[0]));
      cat_w = std::max(cat_w, display_width(r[1]));
      phase_w = std::max(phase_w, display_width(r[2]));
    }
    const size_t fixed = id_w + cat_w + phase_w + 3;
    std::string out;
    for (const auto& r : rows) {
      auto pad = [](const std::string& c, size_t w) { return c + std::string(w - std::min(w, display_width(c)), ' '); };
      if (width == 0 || width >= fixed + 20) {
        std::string title = width == 0 ? r[3] : fit_width(r[3], width - fixed);
        out += pad(r[0], id_w) + " " + pad(r[1], cat_w) + " " + pad(r[2], phase_w) + " " + title + "\n";
      } else {
        out += fit_width(r[0], width) + "\n" + wrap_text("    " + r[1] + ", " + r[2] + ": " + r[3], width) + "\n";
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  // replace: a text that is not UTF-8 must not abort the dump (nlohmann throws by default).
  if (opt.format == "json")
    std::cout << arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  return listed > 0 ? 0 : 1;
}

namespace {

// One entry's page, as explain prints it, before wrapping.
std::string explain_one(const kb::Entry* e) {
  // An entry may come from a --kb directory someone else wrote: shown escaped, keeping the
  // line breaks of multi-line fields (t1: one line; explain_page keeps the rest).
  auto t1 = [](const std::string& s) { return escape_for_terminal(s); };
  // A text field's inline Markdown (kb/README.md) without its markers; code keeps its backticks.
  auto md = [](const std::string& s) { return escape_for_terminal(markdown_plain(s), true); };
  // Wrapped to the terminal like the report (a pipe gets whole lines).
  std::string out;
  out +=
      fmt::format("{}\n{}\n\ncategory: {}   phase: {}   frameworks: {}\n\n{}\n", t1(e->title), t1(e->id),
                  t1(e->category), t1(e->phase), t1(fmt::format("{}", fmt::join(e->frameworks, ", "))), md(e->summary));
  if (!e->symptoms.empty()) {
    out += fmt::format("\nSymptoms\n");
    for (const auto& s : e->symptoms) out += fmt::format("  - {}: {}\n", md(s.symptom), md(s.why));
  }
  out += fmt::format("\nRoot cause\n  {}\n\nFix\n", md(std::string(trim(e->root_cause))));
  for (size_t i = 0; i < e->fix.size(); ++i) out += fmt::format("  {}. {}\n", i + 1, md(e->fix[i]));
  out += explain_page(*e, md);
  out += fmt::format("\nPatterns\n");
  for (const auto& p : e->patterns) {
    out += fmt::format("  [{}] {}\n", kb::role_name(p.role), t1(p.literal.empty() ? p.regex : p.literal));
    for (const auto& src : p.sources)
      out += fmt::format("      source: {}{}\n", t1(site::source_label(src)), t1(site::source_versions(src)));
  }
  if (!e->references.empty()) {
    out += fmt::format("\nReferences\n");
    for (const auto& r : e->references)
      out += fmt::format("  {}{}\n", t1(r.url), r.note.empty() ? "" : "  (" + t1(r.note) + ")");
  }
  return out;
}

}  // namespace

int run_explain(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kAll);
  if (!loaded) return 2;
  const size_t width = output_width(STDOUT_FILENO);
  // Pages are separated by a line of dashes (as wide as the text, at most 72), so that a
  // reader of several pages, person or script, sees where one ends.
  const std::string rule(std::min<size_t>(width == 0 ? 72 : width, 72), '-');
  int rc = 0;
  size_t shown = 0;
  for (const auto& id : opt.entry_ids) {
    const kb::Entry* e = loaded->kb->find(id);
    if (!e) {
      std::vector<std::string> ids;
      for (const auto& x : loaded->kb->entries) ids.push_back(x.id);
      auto near = nearest_words(id, ids, 5);
      fmt::print(stderr, "firstfault: no entry with id '{}'{}\n", escape_for_terminal(id),
                 near.empty() ? "; firstfault kb list names them all, firstfault search WORDS finds them by text"
                              : fmt::format("; did you mean {}?",
                                            escape_for_terminal(fmt::format("{}", fmt::join(near, ", ")))));
      rc = 2;
      continue;
    }
    std::string out = (shown++ ? "\n" + rule + "\n\n" : "") + wrap_text(explain_one(e), width);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  return rc;
}

int run_site(const Options& opt) {
  kb::LoadOptions lo;
  lo.cache_dir = cache_dir(opt);
  kb::LoadResult r = kb::load_embedded(opt.kb_dirs, lo);
  print_errors(r.errors, "knowledge base");
  if (r.kb.entries.empty()) {
    fmt::print(stderr, "firstfault: the knowledge base has no usable entries\n");
    return 2;
  }
  site::SiteOptions so;
  so.generator = "firstfault " FF_VERSION;
  auto stats = site::generate(r.kb, opt.out_dir, so);
  if (!stats.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(stats.error().to_string()));
    return 2;
  }
  if (stats->js_patterns_skipped > 0)
    fmt::print(stderr,
               "firstfault: {} pattern(s) use RE2 syntax JavaScript cannot express; the site's search finds their "
               "entries by keywords only\n",
               stats->js_patterns_skipped);
  fmt::print("wrote {} files: {} entry pages, {} category pages, {} framework hubs, {} tag pages\nopen {}\n",
             stats->files, stats->entries, stats->categories, stats->frameworks, stats->tags,
             escape_for_terminal((std::filesystem::path(opt.out_dir) / "index.html").string()));
  return 0;
}

}  // namespace ff::app
