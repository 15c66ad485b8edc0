// pipeline/pipeline.diagnose.cc — `diagnose`: a job's events into a Diagnosis (shared with
// watch, lsp, serve and the scheduler commands), rendered in every format; `rules`.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "analyze/analyze.h"
#include "pipeline/pipeline.h"
#include "history/history.h"
#include "pipeline/redaction.h"
#include "pipeline/terminal.h"
#include "base/escape.h"
#include "base/strings.h"
#include "base/wrap.h"
#include "report/editor.h"
#include "report/format.h"
#include "report/report.h"
#include "scan/scan.h"
#include "site/search_index.h"
#include "site/site.h"

namespace ff::app {

std::vector<analyze::SourceSummary> summarise_sources(const scan::JobStats& stats) {
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
  v += std::string(v.empty() ? "" : "\n") + std::string(report::detail::kRerunCheck) + d.primary->fingerprint +
       ") is gone from the rerun:\n$ firstfault verify --before " + before + " --after NEW_LOGS";
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

namespace {

// The entries closest to a message by the search's ranking, each with the share of the
// message's distinct words (site::tokenize) that it holds.
std::vector<analyze::JobNumbers::NearEntry> nearest_entries(const kb::KnowledgeBase& kb,
                                                            const site::KeywordIndex& index, std::string_view text) {
  std::vector<analyze::JobNumbers::NearEntry> out;
  std::vector<std::string> words = site::tokenize(text);
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
  if (words.size() < 3) return out;  // too few words to say anything is close
  for (const auto& hit : index.search(text)) {
    if (out.size() >= 5) break;
    const kb::Entry& e = kb.entries[hit.entry];
    if (e.category == "healthy" || e.severity == "info") continue;
    out.push_back({e.id, static_cast<double>(hit.terms.size()) / static_cast<double>(words.size())});
  }
  return out;
}

}  // namespace

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
  for (const auto& s : stats.sources) {
    numbers.lines_with_rank += s.lines_with_rank;
    numbers.lines_with_time += s.lines_with_time;
    numbers.traceback_starts += s.traceback_starts;
  }
  // The long-tail guess asks for the closest entries by words: the encyclopedia's search
  // over the loaded KB, its index built only when a failure line no entry names is the primary.
  std::optional<site::KeywordIndex> index;
  numbers.nearest_entries = [&](std::string_view text) {
    if (!index) index.emplace(*loaded.kb);
    return nearest_entries(*loaded.kb, *index, text);
  };
  analyze::Diagnosis& d = job.d;
  d = analyze::diagnose(events, summarise_sources(stats), *loaded.kb, numbers);
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
  auto loaded = load_or_say(opt, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
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
  if (format == "json")
    return redactor ? add_redaction_json(report::render_json(d), *redactor) : report::render_json(d);
  // --site-url: where an entry's encyclopedia page is, for the html and sarif reports' links.
  std::function<std::string(const std::string&)> entry_link = opt.entry_link;
  if (!entry_link && !opt.site_url.empty()) {
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
  // The history (history/history.h): kept, and a recurring failure said on stderr.
  if (!job.nothing_read && !opt.no_history) {
    if (std::string again = remember_diagnosis(job.d, "diagnose", opt.inputs); !again.empty())
      // Wrapped to stderr's width like the report (COLUMNS, else the terminal's; a pipe: one line).
      fmt::print(stderr, "{}\n",
                 wrap_text("firstfault: seen before: " + escape_for_terminal(again) + " (firstfault history)",
                           output_width(STDERR_FILENO)));
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
    to.color = use_colour(opt, !to_file && isatty(STDOUT_FILENO));
    to.verbose = opt.verbose;
    to.width = to_file ? 0 : output_width(STDOUT_FILENO);
    to.rows = to_file ? 0 : output_rows(STDOUT_FILENO);
    to.brief = opt.brief;
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
    fmt::print(stderr, "firstfault: wrote {} ({})\n", escape_for_terminal(opt.output),
               analyze::verdict_name(d.verdict));
  } else if (opt.no_pager || opt.format != "text" || !show_in_pager(rendered, output_rows(STDOUT_FILENO))) {
    std::cout << rendered;
  }
  std::cout.flush();
  return analyze::verdict_exit_code(d.verdict);
}

}  // namespace ff::app
