#include "app/commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "analyze/analyze.h"
#include "app/history.h"
#include "app/kb_check.h"
#include "app/perf.h"
#include "app/redaction.h"
#include "app/terminal.h"
#include "base/cache.h"
#include "base/escape.h"
#include "base/markdown.h"
#include "base/wrap.h"
#include "base/strings.h"
#include "kb/kb.h"
#include "record/record.h"
#include "report/editor.h"
#include "report/report.h"
#include "scan/scan.h"
#include "site/search_index.h"
#include "site/site.h"

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
  so.read.follow_symlinks = opt.follow_symlinks;
  so.only_host = opt.only_host;
  so.only_unit = opt.only_unit;
  so.threads = opt.threads;
  if (opt.chunk_bytes > 0) so.chunk_bytes = opt.chunk_bytes;
  if (opt.map_min > 0) {
    so.read.map_min_bytes = opt.map_min;
    so.read.map_quiet_seconds = 0;
  }
  so.progress = make_progress_bar(opt);
  return so;
}

void print_errors(const std::vector<Error>& errors, const char* what) {
  for (const auto& e : errors) fmt::print(stderr, "firstfault: {}: {}\n", what, escape_for_terminal(e.to_string()));
}

}  // namespace

Result<Loaded> load_everything(const Options& opt, bool quiet_kb_errors, KbFields fields) {
  Loaded l;
  kb::LoadOptions lo;
  lo.cache_dir = cache_dir(opt);
  lo.page_fields = fields == KbFields::kAll;
  kb::LoadResult r = kb::load_embedded(opt.kb_dirs, lo);
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
  for (const auto& s : stats.sources) out.push_back(s);  // its SourceSummary part
  return out;
}

// The analysis writes "Search the message: firstfault search '" + text + "'" (analyze.cc),
// the text unquoted inside: the text is all between the prefix and the last quote, and is
// quoted again here. (Quoting it where it is written, in analyze, is the better place.)
void quote_suggested_commands(analyze::Diagnosis& d) {
  if (!d.primary) return;
  static constexpr std::string_view kSearch = "Search the message: firstfault search '";
  for (std::string& step : d.primary->fix) {
    if (!starts_with(step, kSearch) || step.size() < kSearch.size() + 1 || step.back() != '\'') continue;
    const std::string text = step.substr(kSearch.size(), step.size() - kSearch.size() - 1);
    step = std::string(kSearch.substr(0, kSearch.size() - 1)) + shell_quote(text);
  }
}

// The diagnosis's verify step: the KB's command, then the re-check of the rerun's logs,
// each input one shell word however it is named.
void add_rerun_check(analyze::Diagnosis& d, const std::vector<std::string>& inputs) {
  if (!d.primary) return;
  std::string before;
  for (const auto& in : inputs) before += (before.empty() ? "" : " ") + shell_quote(in);
  std::string& v = d.primary->verify;
  v = std::string(trim(v));
  v += std::string(v.empty() ? "" : "\n") + "Then check that its signature (" + d.primary->fingerprint +
       ") is gone from the rerun:\n$ firstfault verify --before " + before + " --after NEW_LOGS";
}

// Writes a file the user named (-o) whole or not at all (base/cache.h), beside it. Returns
// the problem, or "" when written.
std::string write_output_file(const std::string& path, std::string_view bytes) {
  const std::filesystem::path target(path);
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : std::string(".");
  const int err = write_file_atomically(dir, path, {bytes}, true);
  return err == 0 ? std::string() : std::strerror(err);
}

bool diagnose_loaded(const Loaded& loaded, const Options& opt, const ScanFn& scan_fn,
                     const std::vector<std::string>& names, DiagnosedJob& job) {
  auto t0 = std::chrono::steady_clock::now();
  scan::CollectSink sink;
  scan::JobStats stats = scan_fn(*loaded.engine, sink);
  if (!diagnose_events(loaded, opt, sink.events, stats, names, job)) return false;
  job.d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

bool diagnose_events(const Loaded& loaded, const Options& opt, const std::vector<record::Event>& events,
                     const scan::JobStats& stats, const std::vector<std::string>& names, DiagnosedJob& job) {
  auto t0 = std::chrono::steady_clock::now();
  // --redact: the analysis runs on the original text; what is shown is redacted.
  std::optional<redact::Redactor>& redactor = job.redactor;
  std::vector<Error> errors = stats.errors;
  if (opt.redact && !start_redactor(redactor, events, errors)) return false;
  analyze::JobNumbers numbers;
  numbers.series = &stats.series;
  numbers.aliases = &loaded.engine->metric_aliases();
  numbers.last_time_us = stats.last_time_us;
  numbers.last_time_clock = stats.last_time_clock;
  for (const auto& e : errors) numbers.unread.push_back(e.to_string());
  analyze::Diagnosis& d = job.d;
  d = analyze::diagnose(events, summarize_sources(stats), *loaded.kb, numbers);
  d.notes.insert(d.notes.end(), stats.notes.begin(), stats.notes.end());
  quote_suggested_commands(d);
  add_rerun_check(d, names);
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (redactor) redact_diagnosis(d, *redactor);
  job.nothing_read = stats.sources.empty();
  job.input_errors = std::move(errors);
  return true;
}

int diagnose_job(const Options& opt, DiagnosedJob& job) {
  auto loaded = load_everything(opt, false, KbFields::kDiagnosis);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
  const scan::ScanOptions so = scan_options(opt);
  const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
    return scan::scan_job(engine, opt.inputs, sink, so);
  };
  if (!diagnose_loaded(*loaded, opt, scan_fn, opt.inputs, job)) return 2;
  for (const auto& e : job.input_errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  return 0;
}

// What nothing read gives: no verdict, and why.
void mark_nothing_read(analyze::Diagnosis& d) {
  d.verdict = analyze::VerdictKind::kUnknown;
  d.reasons = {{"input.none-read", "no input could be read", {}}};
}

std::string render_report(DiagnosedJob& job, const std::string& format, const Options& opt) {
  analyze::Diagnosis& d = job.d;
  std::optional<redact::Redactor>& redactor = job.redactor;
  if (format == "json") return redactor ? add_redaction_json(report::render_json(d), *redactor) : report::render_json(d);
  // --site-url: where an entry's encyclopedia page is, for the html and sarif reports' links.
  std::function<std::string(const std::string&)> entry_link;
  if (!opt.site_url.empty()) {
    std::string base = opt.site_url;
    if (base.back() != '/') base += '/';
    entry_link = [base](const std::string& id) { return base + "entries/" + site::slug(id) + ".html"; };
  }
  if (format == "html") {
    report::HtmlOptions ho;
    ho.generator = "firstfault " FF_VERSION;
    ho.entry_link = entry_link;
    return report::render_html(d, ho);
  }
  if (format == "vimgrep") return report::render_vimgrep(d);
  if (format == "sarif") {
    report::SarifOptions so;
    so.version = FF_VERSION;
    so.entry_link = entry_link;
    return report::render_sarif(d, so);
  }
  report::MarkdownOptions mo;
  mo.generator = "firstfault " FF_VERSION;
  std::string out = report::render_markdown(d, mo);
  if (redactor) out += "\n" + redaction_line(*redactor);
  return out;
}

int run_diagnose(const Options& opt) {
  DiagnosedJob job;
  if (int rc = diagnose_job(opt, job); rc != 0) return rc;
  // The history (app/history.h): kept, and a recurring failure said on stderr.
  if (!job.nothing_read && !opt.no_history) {
    if (std::string again = remember_diagnosis(job.d, "diagnose", opt.inputs); !again.empty())
      fmt::print(stderr, "firstfault: seen before: {} (firstfault history)\n", escape_for_terminal(again));
  }
  return print_diagnosis(job, opt);
}

int print_diagnosis(DiagnosedJob& job, const Options& opt) {
  analyze::Diagnosis& d = job.d;
  std::optional<redact::Redactor>& redactor = job.redactor;
  if (job.nothing_read) {
    fmt::print(stderr, "firstfault: nothing could be read; no diagnosis\n");
    if (opt.format == "json") {
      mark_nothing_read(d);
      std::cout << report::render_json(d);
    }
    return 2;
  }
  std::string rendered;
  const bool to_file = !opt.output.empty() && opt.output != "-";
  if (opt.format == "json" || opt.format == "html" || opt.format == "markdown" || opt.format == "md" ||
      opt.format == "vimgrep" || opt.format == "sarif") {
    rendered = render_report(job, opt.format == "md" ? "markdown" : opt.format, opt);
  } else {
    report::TextOptions to;
    const char* no_color = std::getenv("NO_COLOR");
    const bool tty = !to_file && isatty(STDOUT_FILENO);
    to.color = opt.color == "always" || (opt.color == "auto" && tty && !(no_color && *no_color));
    to.verbose = opt.verbose;
    to.width = to_file ? 0 : output_width(STDOUT_FILENO);
    to.rows = to_file ? 0 : output_rows(STDOUT_FILENO);
    rendered = report::render_text(d, to);
    if (redactor) rendered += redaction_line(*redactor);
  }
  if (to_file) {
    // Written whole or not at all: a temporary file next to it, renamed over it.
    if (std::string problem = write_output_file(opt.output, rendered); !problem.empty()) {
      fmt::print(stderr, "firstfault: cannot write the report {}: {}\n", escape_for_terminal(opt.output),
                 escape_for_terminal(problem));
      return 2;
    }
    fmt::print(stderr, "firstfault: wrote {} ({})\n", escape_for_terminal(opt.output), analyze::verdict_name(d.verdict));
  } else {
    std::cout << rendered;
  }
  std::cout.flush();
  return analyze::verdict_exit_code(d.verdict);
}

#ifndef FF_HAVE_SERVE
int run_serve(const Options&) {
  fmt::print(stderr,
             "firstfault: this build has no web server: the portable build links everything statically, and Debian "
             "ships cpp-httplib only as a shared library. Build from source with libcpp-httplib-dev installed (make "
             "run), or use firstfault diagnose --format html.\n");
  return 2;
}
#endif

int run_rules(const Options& opt) {
  const auto& rules = analyze::rules();
  if (opt.format == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (size_t i = 0; i < rules.size(); ++i)
      arr.push_back({{"order", i + 1}, {"name", rules[i].name}, {"what", rules[i].what}});
    std::cout << arr.dump(2) << "\n";
    return 0;
  }
  std::string out;
  for (size_t i = 0; i < rules.size(); ++i) out += fmt::format("{:>2}. {:<32} {}\n", i + 1, rules[i].name, rules[i].what);
  out = wrap_text(out, output_width(STDOUT_FILENO));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

namespace {

class JsonlSink : public scan::EventSink {
 public:
  JsonlSink(const scan::JobStats& stats, bool jsonl) : stats_(stats), jsonl_(jsonl) {}
  void event(const record::Event& e) override {
    std::string source = e.source < stats_.sources.size() ? stats_.sources[e.source].name : "";
    if (!jsonl_) {
      std::string who = e.rank >= 0 ? fmt::format("rank {}", e.rank) : "-";
      // A terminal's, most likely: the name and the line are shown escaped (issue 14).
      std::cout << fmt::format("{}:{}\t{}\t{}\t{}\t{}\n", escape_for_terminal(source), e.line, who,
                               escape_for_terminal(e.entry_id.empty() ? record::event_kind_name(e.kind) : e.entry_id),
                               e.kind == record::EventKind::kPattern ? kb::role_name(e.role) : "-",
                               escape_for_terminal(e.text));
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
  auto loaded = load_everything(opt, false, KbFields::kDiagnosis);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
  // Source names are known once scan_job returns; collect, then print.
  scan::CollectSink collect;
  scan::JobStats stats = scan::scan_job(*loaded->engine, opt.inputs, collect, scan_options(opt));
  if (opt.redact) {
    std::optional<redact::Redactor> redactor;
    if (!start_redactor(redactor, collect.events, stats.errors)) return 2;
    redact_events(collect.events, *redactor);
    for (auto& s : stats.sources) s.name = redactor->apply(s.name);
  }
  JsonlSink out(stats, opt.format != "text");
  for (const auto& e : collect.events) out.event(e);
  for (const auto& e : stats.errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  if (stats.sources.empty()) return 2;
  return collect.events.empty() ? 0 : 1;
}

int run_kb_check(const Options& opt) {
  auto loaded = load_everything(opt, true);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
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

int run_kb_list(const Options& opt) {
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
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
      std::string listed = all.size() <= 40 ? fmt::format("\n  {} values: {}", flag, fmt::join(all, ", "))
                                            : fmt::format("\n  ({} values; firstfault kb list --format json shows them)", all.size());
      fmt::print(stderr, "firstfault: no entry has {} '{}'{}{}\n", flag, escape_for_terminal(value), hint,
                 escape_for_terminal(listed, true));
    };
    check("--category", opt.filter_category, cats);
    check("--framework", opt.filter_framework, fws);
    check("--tag", opt.filter_tag, tags);
    if (bad) return 2;
  }
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  std::vector<std::array<std::string, 4>> rows;
  size_t listed = 0;
  for (const auto& e : loaded->kb->entries) {
    if (!opt.filter_category.empty() && e.category != opt.filter_category) continue;
    if (!opt.filter_framework.empty() &&
        std::find(e.frameworks.begin(), e.frameworks.end(), opt.filter_framework) == e.frameworks.end())
      continue;
    if (!opt.filter_phase.empty() && e.phase != opt.filter_phase) continue;
    if (!opt.filter_tag.empty() && std::find(e.tags.begin(), e.tags.end(), opt.filter_tag) == e.tags.end()) continue;
    ++listed;
    if (opt.format == "json") {
      arr.push_back({{"id", e.id}, {"title", e.title}, {"category", e.category}, {"phase", e.phase},
                     {"severity", e.severity}, {"frameworks", e.frameworks}, {"tags", e.tags}});
    } else {
      rows.push_back({escape_for_terminal(e.id), escape_for_terminal(e.category), escape_for_terminal(e.phase),
                      escape_for_terminal(e.title)});
    }
  }
  if (opt.list_tags) {
    std::map<std::string, size_t> count;
    for (const auto& e : loaded->kb->entries) {
      if (!opt.filter_category.empty() && e.category != opt.filter_category) continue;
      if (!opt.filter_framework.empty() &&
          std::find(e.frameworks.begin(), e.frameworks.end(), opt.filter_framework) == e.frameworks.end())
        continue;
      if (!opt.filter_phase.empty() && e.phase != opt.filter_phase) continue;
      for (const auto& t : e.tags) ++count[t];
    }
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
  if (opt.format == "json") std::cout << arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  return listed > 0 ? 0 : 1;
}

int run_explain(const Options& opt) {
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
  const kb::Entry* e = loaded->kb->find(opt.entry_id);
  if (!e) {
    std::vector<std::string> ids;
    for (const auto& x : loaded->kb->entries) ids.push_back(x.id);
    auto near = nearest_words(opt.entry_id, ids, 5);
    fmt::print(stderr, "firstfault: no entry with id '{}'{}\n", escape_for_terminal(opt.entry_id),
               near.empty() ? "; firstfault kb list names them all, firstfault search WORDS finds them by text"
                            : fmt::format("; did you mean {}?", escape_for_terminal(fmt::format("{}", fmt::join(near, ", ")))));
    return 2;
  }
  // An entry may come from a --kb directory someone else wrote: shown escaped, keeping the
  // line breaks of multi-line fields (t1: one line, tn: several).
  auto t1 = [](const std::string& s) { return escape_for_terminal(s); };
  auto tn = [](const std::string& s) { return escape_for_terminal(s, true); };
  // A text field's inline Markdown (kb/README.md) without its markers; code keeps its backticks.
  auto md = [](const std::string& s) { return escape_for_terminal(markdown_plain(s), true); };
  // Wrapped to the terminal like the report (a pipe gets whole lines).
  std::string out;
  out += fmt::format("{}\n{}\n\ncategory: {}   phase: {}   frameworks: {}\n\n{}\n", t1(e->title), t1(e->id), t1(e->category),
             t1(e->phase), t1(fmt::format("{}", fmt::join(e->frameworks, ", "))), md(e->summary));
  if (!e->symptoms.empty()) {
    out += fmt::format("\nSymptoms\n");
    for (const auto& s : e->symptoms) out += fmt::format("  - {}: {}\n", md(s.symptom), md(s.why));
  }
  out += fmt::format("\nRoot cause\n  {}\n\nFix\n", md(std::string(trim(e->root_cause))));
  for (size_t i = 0; i < e->fix.size(); ++i) out += fmt::format("  {}. {}\n", i + 1, md(e->fix[i]));
  static const std::map<std::string, std::string> kWhere = {
      {"shell", "in a shell on the node, after the fix"},
      {"rerun", "rerun a few steps of the job with the fix"},
      {"in-process", "add these lines to the training script"}};
  auto where = kWhere.find(e->verify_where);
  out += fmt::format("\nVerify{}\n", where == kWhere.end() ? "" : ": " + where->second);
  for (std::string_view line : split(trim(e->verify), '\n')) out += fmt::format("    {}\n", tn(std::string(line)));
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
  out += fmt::format("\nPatterns\n");
  for (const auto& p : e->patterns) {
    out += fmt::format("  [{}] {}\n", kb::role_name(p.role), t1(p.literal.empty() ? p.regex : p.literal));
    for (const auto& src : p.sources)
      out += fmt::format("      source: {}{}\n", t1(site::source_label(src)), t1(site::source_versions(src)));
  }
  if (!e->references.empty()) {
    out += fmt::format("\nReferences\n");
    for (const auto& r : e->references) out += fmt::format("  {}{}\n", t1(r.url), r.note.empty() ? "" : "  (" + t1(r.note) + ")");
  }
  out = wrap_text(out, output_width(STDOUT_FILENO));
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

namespace {

// One ranked search result.
struct SearchResult {
  size_t entry = 0;
  std::string match;  // "pattern" or "keywords"
  std::string why;
  size_t line = 0;    // pattern: the (1-based) line of the query it matched
  std::string pattern;
  std::map<std::string, std::string> captures;
  double score = 0;   // keywords: BM25
  std::vector<std::string> terms;
};

// Ranks the entries for a pasted text, as the encyclopedia's search does
// (src/site/assets/search.js): per line, after cleaning and peeling prefixes, the entry
// that wins the line by pattern, then the other entries that matched (in KB order), then
// every other entry by keyword relevance (site::KeywordIndex).
std::vector<SearchResult> rank_search(const Loaded& loaded, const site::KeywordIndex& index, std::string_view text) {
  const kb::KnowledgeBase& kb = *loaded.kb;
  const scan::Engine& engine = *loaded.engine;
  std::unordered_map<std::string_view, size_t> index_of;
  for (size_t i = 0; i < kb.entries.size(); ++i) index_of.emplace(kb.entries[i].id, i);

  std::vector<SearchResult> results;
  std::set<size_t> seen;
  std::vector<std::pair<size_t, size_t>> also;  // (entry, line)
  std::string messages;
  std::string clean;
  std::vector<std::string_view> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    record::clean_line(lines[i], clean);
    record::Record rec;
    engine.prefixes().parse(clean, rec);
    if (trim(rec.message).empty()) continue;
    if (!messages.empty()) messages += '\n';
    messages += rec.message;
    LineWinner w = best_entry_for_line(engine, rec.message);
    if (w.entry_id.empty()) continue;
    size_t d = index_of.at(w.entry_id);
    if (seen.insert(d).second) {
      SearchResult r;
      r.entry = d;
      r.match = "pattern";
      r.why = fmt::format("pattern {} matches line {}", w.pattern_id, i + 1);
      r.line = i + 1;
      r.pattern = w.pattern_id;
      r.captures = w.captures;
      results.push_back(std::move(r));
    }
    std::set<size_t> others;
    for (const auto& id : w.all)
      if (id != w.entry_id) others.insert(index_of.at(id));
    for (size_t o : others) also.emplace_back(o, i + 1);
  }
  for (const auto& [d, line] : also) {
    if (!seen.insert(d).second) continue;
    SearchResult r;
    r.entry = d;
    r.match = "pattern";
    r.why = fmt::format("also matches line {} (a more specific entry wins it)", line);
    r.line = line;
    results.push_back(std::move(r));
  }
  for (auto& hit : index.search(messages)) {
    if (!seen.insert(hit.entry).second) continue;
    SearchResult r;
    r.entry = hit.entry;
    r.match = "keywords";
    std::vector<std::string> top(hit.terms.begin(), hit.terms.begin() + std::min<size_t>(5, hit.terms.size()));
    r.why = fmt::format("keywords: {}", fmt::join(top, ", "));
    r.score = hit.score;
    r.terms = std::move(hit.terms);
    results.push_back(std::move(r));
  }
  return results;
}

nlohmann::ordered_json results_json(const kb::KnowledgeBase& kb, std::string_view text,
                                    const std::vector<SearchResult>& results, size_t total) {
  nlohmann::ordered_json j;
  j["query"] = text;
  j["total"] = total;
  auto& arr = j["results"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    const SearchResult& r = results[i];
    const kb::Entry& e = kb.entries[r.entry];
    nlohmann::ordered_json o;
    o["rank"] = i + 1;
    o["id"] = e.id;
    o["title"] = e.title;
    o["category"] = e.category;
    o["phase"] = e.phase;
    o["frameworks"] = e.frameworks;
    o["match"] = r.match;
    o["why"] = r.why;
    if (r.match == "pattern") {
      o["line"] = r.line;
      if (!r.pattern.empty()) o["pattern"] = r.pattern;
      if (!r.captures.empty()) o["captures"] = r.captures;
    } else {
      o["score"] = r.score;
      o["terms"] = r.terms;
    }
    arr.push_back(std::move(o));
  }
  return j;
}

}  // namespace

nlohmann::ordered_json search_json(const Loaded& loaded, const site::KeywordIndex& index, std::string_view text,
                                   size_t limit) {
  std::vector<SearchResult> results = rank_search(loaded, index, text);
  const size_t total = results.size();
  if (limit > 0 && results.size() > limit) results.resize(limit);
  return results_json(*loaded.kb, text, results, total);
}

int run_search(const Options& opt) {
  std::string text;
  if (opt.words.size() == 1 && opt.words[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    for (size_t i = 0; i < opt.words.size(); ++i) text += (i ? " " : "") + opt.words[i];
  }
  auto loaded = load_everything(opt, false);
  if (!loaded.ok()) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(loaded.error().to_string()));
    return 2;
  }
  const kb::KnowledgeBase& kb = *loaded->kb;
  const site::KeywordIndex index(kb);
  std::vector<SearchResult> results = rank_search(*loaded, index, text);
  const size_t total = results.size();
  if (opt.limit > 0 && results.size() > opt.limit) results.resize(opt.limit);

  if (opt.format == "json") {
    std::cout << results_json(kb, text, results, total).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << "\n";
  } else if (results.empty()) {
    fmt::print(stderr, "firstfault: no entry matches; try other words (firstfault kb list shows them all)\n");
  } else {
    // A table when the terminal is wide enough for it (or the output is not a terminal),
    // else one block per result: the id and category, then the title and why, wrapped.
    const size_t width = output_width(STDOUT_FILENO);
    size_t id_w = 2;
    for (const auto& r : results) id_w = std::max(id_w, display_width(escape_for_terminal(kb.entries[r.entry].id)));
    const size_t fixed = 4 + id_w + 1 + 15 + 45;
    std::string out;
    if (width == 0 || width >= fixed + 24) {
      out += fmt::format("{:<3} {:<{}} {:<14} {:<44} {}\n", "#", "ID", id_w, "CATEGORY", "TITLE", "WHY");
      for (size_t i = 0; i < results.size(); ++i) {
        const SearchResult& r = results[i];
        const kb::Entry& e = kb.entries[r.entry];
        std::string why = escape_for_terminal(r.why);
        if (width) why = fit_width(why, width - fixed);
        out += fmt::format("{:<3} {:<{}} {:<14} {:<44} {}\n", i + 1, escape_for_terminal(e.id), id_w,
                           escape_for_terminal(e.category), fit_width(escape_for_terminal(e.title), 44), why);
      }
    } else {
      for (size_t i = 0; i < results.size(); ++i) {
        const SearchResult& r = results[i];
        const kb::Entry& e = kb.entries[r.entry];
        out += wrap_text(fmt::format("{:<3} {}  [{}]\n    {}\n    {}\n", i + 1, escape_for_terminal(e.id),
                                     escape_for_terminal(e.category), escape_for_terminal(e.title),
                                     escape_for_terminal(r.why)),
                         width);
      }
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (total > results.size()) fmt::print("({} more; --limit 0 shows all)\n", total - results.size());
  }
  return results.empty() ? 1 : 0;
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
  fmt::print("wrote {} files: {} entry pages, {} framework hubs, {} tag pages\nopen {}\n", stats->files,
             stats->entries, stats->frameworks, stats->tags,
             escape_for_terminal((std::filesystem::path(opt.out_dir) / "index.html").string()));
  return 0;
}

}  // namespace ff::app
