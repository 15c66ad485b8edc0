#include "app/commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "app/kb_check.h"
#include "base/strings.h"
#include "kb/kb.h"
#include "report/report.h"
#include "scan/scan.h"

namespace ff::app {

namespace {

std::string cache_dir(const Options& opt) {
  if (opt.no_cache) return {};
  if (const char* d = std::getenv("FIRSTFAULT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/firstfault";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/firstfault";
  return {};
}

scan::ScanOptions scan_options(const Options& opt) {
  scan::ScanOptions so;
  if (opt.max_bytes > 0) so.read.max_total_bytes = opt.max_bytes;
  return so;
}

void print_errors(const std::vector<Error>& errors, const char* what) {
  for (const auto& e : errors) fmt::print(stderr, "firstfault: {}: {}\n", what, e.to_string());
}

}  // namespace

Result<Loaded> load_everything(const Options& opt, bool quiet_kb_errors) {
  Loaded l;
  kb::LoadOptions lo;
  lo.cache_dir = cache_dir(opt);
  kb::LoadResult r = kb::load(kb::embedded_files(), opt.kb_dirs, lo);
  if (!quiet_kb_errors) print_errors(r.errors, "knowledge base");
  l.kb_errors = std::move(r.errors);
  l.kb = std::make_unique<kb::KnowledgeBase>(std::move(r.kb));
  if (l.kb->entries.empty()) return make_error(ErrorCode::kInvalidKb, "the knowledge base has no usable entries");
  scan::EngineOptions eo;
  eo.cache_dir = cache_dir(opt);
  FF_TRY(l.engine, scan::Engine::create(*l.kb, eo));
  if (!quiet_kb_errors) print_errors(l.engine->warnings(), "knowledge base");
  return l;
}

std::vector<analyze::SourceSummary> summarize_sources(const scan::JobStats& stats) {
  std::vector<analyze::SourceSummary> out;
  for (const auto& s : stats.sources) {
    out.push_back({s.name, s.encoding, s.bytes, s.lines, s.events, s.ok, s.error, s.ranks, s.rank_node, s.pid_rank});
  }
  return out;
}

int run_diagnose(const Options& opt) {
  auto t0 = std::chrono::steady_clock::now();
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", loaded.error().to_string());
    return 2;
  }
  scan::CollectSink sink;
  scan::JobStats stats = scan::scan_job(*loaded->engine, opt.inputs, sink, scan_options(opt));
  for (const auto& e : stats.errors) fmt::print(stderr, "firstfault: {}\n", e.to_string());
  analyze::Diagnosis d = analyze::diagnose(sink.events, summarize_sources(stats), *loaded->kb);
  for (const auto& e : stats.errors) d.errors.push_back(e.to_string());
  d.notes = stats.notes;
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stats.sources.empty()) {
    fmt::print(stderr, "firstfault: nothing could be read; no diagnosis\n");
    if (opt.format == "json") {
      d.verdict = "unknown";
      std::cout << report::render_json(d);
    }
    return 2;
  }
  if (opt.format == "json") {
    std::cout << report::render_json(d);
  } else {
    report::TextOptions to;
    const char* no_color = std::getenv("NO_COLOR");
    to.color = opt.color == "always" || (opt.color == "auto" && isatty(STDOUT_FILENO) && !(no_color && *no_color));
    to.verbose = opt.verbose;
    std::cout << report::render_text(d, to);
  }
  std::cout.flush();
  return d.verdict == "healthy" ? 0 : 1;
}

namespace {

class JsonlSink : public scan::EventSink {
 public:
  JsonlSink(const scan::JobStats& stats, bool jsonl) : stats_(stats), jsonl_(jsonl) {}
  void event(const record::Event& e) override {
    std::string source = e.source < stats_.sources.size() ? stats_.sources[e.source].name : "";
    if (!jsonl_) {
      std::string who = e.rank >= 0 ? fmt::format("rank {}", e.rank) : "-";
      std::cout << fmt::format("{}:{}\t{}\t{}\t{}\t{}\n", source, e.line, who,
                               e.entry_id.empty() ? record::event_kind_name(e.kind) : e.entry_id,
                               e.kind == record::EventKind::kPattern ? kb::role_name(e.role) : "-", e.text);
      return;
    }
    nlohmann::ordered_json j;
    j["source"] = source;
    j["line"] = e.line;
    j["kind"] = record::event_kind_name(e.kind);
    j["rank"] = e.rank >= 0 ? nlohmann::ordered_json(e.rank) : nlohmann::ordered_json(nullptr);
    j["local_rank"] = e.local_rank >= 0 ? nlohmann::ordered_json(e.local_rank) : nlohmann::ordered_json(nullptr);
    j["node"] = e.node.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.node);
    j["pid"] = e.pid >= 0 ? nlohmann::ordered_json(e.pid) : nlohmann::ordered_json(nullptr);
    j["gpu"] = e.gpu >= 0 ? nlohmann::ordered_json(e.gpu) : nlohmann::ordered_json(nullptr);
    j["time"] = e.time_text.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.time_text);
    j["level"] = e.level ? nlohmann::ordered_json(std::string(1, e.level)) : nlohmann::ordered_json(nullptr);
    j["entry"] = e.entry_id.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.entry_id);
    j["pattern"] = e.pattern_id.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e.pattern_id);
    j["role"] = e.kind == record::EventKind::kPattern ? nlohmann::ordered_json(kb::role_name(e.role))
                                                      : nlohmann::ordered_json(nullptr);
    if (!e.exc_type.empty()) j["exception_type"] = e.exc_type;
    if (!e.captures.empty()) j["captures"] = e.captures;
    if (e.in_launcher_summary) j["launcher_summary"] = true;
    j["text"] = e.text;
    std::cout << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }

 private:
  const scan::JobStats& stats_;
  bool jsonl_;
};

}  // namespace

int run_events(const Options& opt) {
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", loaded.error().to_string());
    return 2;
  }
  // Source names are known once scan_job returns; collect, then print.
  scan::CollectSink collect;
  scan::JobStats stats = scan::scan_job(*loaded->engine, opt.inputs, collect, scan_options(opt));
  JsonlSink out(stats, opt.format != "text");
  for (const auto& e : collect.events) out.event(e);
  for (const auto& e : stats.errors) fmt::print(stderr, "firstfault: {}\n", e.to_string());
  if (stats.sources.empty()) return 2;
  return collect.events.empty() ? 0 : 1;
}

int run_kb_check(const Options& opt) {
  auto loaded = load_everything(opt, true);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", loaded.error().to_string());
    return 2;
  }
  KbCheckReport rep = check_kb(*loaded->kb, *loaded->engine);
  for (const auto& e : loaded->kb_errors) fmt::print("error: {}\n", e.to_string());
  for (const auto& e : loaded->engine->warnings()) fmt::print("warning: {}\n", e.to_string());
  for (const auto& p : rep.problems) fmt::print("error: {}\n", p);
  size_t errors = loaded->kb_errors.size() + rep.problems.size();
  fmt::print("{} entries, {} patterns, {} examples checked, {} prefix formats; {} error(s)\n",
             loaded->kb->entries.size(), rep.patterns, rep.examples, loaded->kb->prefixes.size(), errors);
  std::map<std::string, int> per_cat;
  for (const auto& e : loaded->kb->entries) per_cat[e.category]++;
  std::string cats;
  for (const auto& c : kb::categories()) cats += fmt::format(" {}={}", c, per_cat[c]);
  fmt::print("categories:{}\n", cats);
  return errors == 0 ? 0 : 1;
}

int run_kb_list(const Options& opt) {
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", loaded.error().to_string());
    return 2;
  }
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& e : loaded->kb->entries) {
    if (!opt.filter_category.empty() && e.category != opt.filter_category) continue;
    if (!opt.filter_framework.empty() &&
        std::find(e.frameworks.begin(), e.frameworks.end(), opt.filter_framework) == e.frameworks.end())
      continue;
    if (opt.format == "json") {
      arr.push_back({{"id", e.id}, {"title", e.title}, {"category", e.category}, {"phase", e.phase},
                     {"frameworks", e.frameworks}, {"tags", e.tags}});
    } else {
      fmt::print("{:<50} {:<14} {}\n", e.id, e.category, e.title);
    }
  }
  if (opt.format == "json") std::cout << arr.dump(2) << "\n";
  return 0;
}

int run_explain(const Options& opt) {
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", loaded.error().to_string());
    return 2;
  }
  const kb::Entry* e = loaded->kb->find(opt.entry_id);
  if (!e) {
    fmt::print(stderr, "firstfault: no entry with id '{}' (see: firstfault kb list)\n", opt.entry_id);
    return 2;
  }
  fmt::print("{}\n{}\n\ncategory: {}   phase: {}   frameworks: {}\n\n{}\n", e->title, e->id, e->category, e->phase,
             fmt::join(e->frameworks, ", "), e->summary);
  if (!e->symptoms.empty()) {
    fmt::print("\nSymptoms\n");
    for (const auto& s : e->symptoms) fmt::print("  - {}: {}\n", s.symptom, s.why);
  }
  fmt::print("\nRoot cause\n  {}\n\nFix\n", e->root_cause);
  for (size_t i = 0; i < e->fix.size(); ++i) fmt::print("  {}. {}\n", i + 1, e->fix[i]);
  fmt::print("\nVerify\n  {}\n", e->verify);
  if (!e->prevention.empty()) {
    fmt::print("\nPrevention\n");
    for (const auto& p : e->prevention) fmt::print("  - {}\n", p);
  }
  fmt::print("\nPatterns\n");
  for (const auto& p : e->patterns)
    fmt::print("  [{}] {}\n", kb::role_name(p.role), p.literal.empty() ? p.regex : p.literal);
  if (!e->references.empty()) {
    fmt::print("\nReferences\n");
    for (const auto& r : e->references) fmt::print("  {}{}\n", r.url, r.note.empty() ? "" : "  (" + r.note + ")");
  }
  return 0;
}

}  // namespace ff::app
