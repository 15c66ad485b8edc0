// controls/controls.cc — `firstfault diff` (what differs from a healthy run) and
// `firstfault verify` (did the fix work), built on templates and fingerprints.
#include "controls/controls.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <set>
#include <unordered_set>

#include "analyze/analyze.h"
#include "kb_check/kb_check.h"
#include "pipeline/pipeline.h"
#include "pipeline/redaction.h"
#include "base/escape.h"
#include "base/strings.h"
#include "io/io.h"
#include "record/record.h"
#include "report/report.h"
#include "template/template.h"

namespace ff::app {

namespace {

using nlohmann::ordered_json;

// Mines the templates of a job: every line, prefixes peeled, into one miner.
class MiningSink : public io::ByteSink {
 public:
  MiningSink(const scan::Engine& engine, template_::TemplateMiner& miner) : engine_(engine), miner_(miner) {}
  void begin(const io::SourceInfo& info) override {
    source_ = static_cast<uint32_t>(names.size());
    names.push_back(info.name);
    framer_ = record::LineFramer();
  }
  void data(std::string_view chunk) override {
    framer_.feed(chunk, [this](const record::RawLine& l) { on_line(l); });
  }
  void end(const io::SourceInfo&, const Status&) override {
    framer_.finish([this](const record::RawLine& l) { on_line(l); });
  }
  std::vector<std::string> names;
  // Template id of each line is not kept (memory); the first line of each template is.

 private:
  void on_line(const record::RawLine& raw) {
    record::clean_line(raw.bytes, clean_);
    record::Record rec;
    engine_.prefixes().parse(clean_, rec);
    std::string_view msg = trim(rec.message);
    if (msg.empty()) return;
    miner_.add(msg, {source_, raw.number});
  }
  const scan::Engine& engine_;
  template_::TemplateMiner& miner_;
  record::LineFramer framer_;
  std::string clean_;
  uint32_t source_ = 0;
};

struct Mined {
  template_::TemplateMiner miner;
  std::vector<std::string> names;
  std::vector<Error> errors;
};

Mined mine(const scan::Engine& engine, const std::vector<std::string>& inputs, bool follow_symlinks) {
  Mined m;
  MiningSink sink(engine, m.miner);
  io::ReadOptions ro;
  ro.follow_symlinks = follow_symlinks;
  io::InputReport rep = io::read_inputs(inputs, sink, ro);
  m.names = std::move(sink.names);
  m.errors = std::move(rep.errors);
  return m;
}

}  // namespace

analyze::Diagnosis diagnose_inputs(const Loaded& loaded, const std::vector<std::string>& inputs,
                                   std::function<bool(std::string_view)> seen_in_control, bool* read_anything,
                                   bool follow_symlinks) {
  scan::CollectSink sink;
  scan::ScanOptions so;
  so.read.follow_symlinks = follow_symlinks;
  scan::JobStats stats = scan::scan_job(*loaded.engine, inputs, sink, so);
  for (const auto& e : stats.errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  analyze::JobNumbers numbers;
  numbers.series = &stats.series;
  numbers.aliases = &loaded.engine->metric_aliases();
  numbers.last_time_us = stats.last_time_us;
  numbers.last_time_clock = stats.last_time_clock;
  numbers.seen_in_control = std::move(seen_in_control);
  for (const auto& e : stats.errors) numbers.unread.push_back(e.to_string());
  for (const auto& s : stats.sources) {
    numbers.lines_with_rank += s.lines_with_rank;
    numbers.lines_with_time += s.lines_with_time;
    numbers.traceback_starts += s.traceback_starts;
  }
  analyze::Diagnosis d = analyze::diagnose(sink.events, summarise_sources(stats), *loaded.kb, numbers);
  d.notes.insert(d.notes.end(), stats.notes.begin(), stats.notes.end());
  quote_suggested_commands(d);
  if (read_anything) *read_anything = !stats.sources.empty();
  return d;
}

// Over 80 lines: the diff is a report written top to bottom (both runs mined, the first
// departure, new and changed templates, fingerprints, then text or JSON), each part using
// what the ones above found.
int run_diff(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
  Mined failed = mine(*loaded->engine, opt.inputs, opt.follow_symlinks);
  Mined control = mine(*loaded->engine, opt.control, opt.follow_symlinks);
  std::optional<redact::Redactor> redactor;  // --redact: what is shown, after the analysis
  if (opt.redact && !start_redactor(redactor, {}, failed.errors)) return 2;
  if (redactor) redact_errors(control.errors, *redactor);
  for (const auto& e : failed.errors) fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  for (const auto& e : control.errors)
    fmt::print(stderr, "firstfault: control: {}\n", escape_for_terminal(e.to_string()));
  if (failed.names.empty() || control.names.empty()) {
    fmt::print(stderr, "firstfault: diff needs readable logs on both sides\n");
    return 2;
  }
  // Control templates, by masked text (Drain's <*> merges differ per run, so compare the
  // masked first lines as well as the template texts).
  std::unordered_set<std::string> control_texts;
  for (const auto& t : control.miner.templates()) {
    control_texts.insert(t.text);
    control_texts.insert(template_::mask(t.first_text));
  }
  auto in_control = [&](std::string_view line) { return control_texts.count(template_::mask(trim(line))) > 0; };
  std::unordered_map<std::string, uint64_t> control_counts;
  for (const auto& t : control.miner.templates()) control_counts[t.text] += t.count;

  struct Row {
    const template_::Template* t;
    double rate_failed, rate_control;
  };
  std::vector<const template_::Template*> fresh;
  std::vector<Row> changed;
  double fl = std::max<double>(1, double(failed.miner.lines())),
         cl = std::max<double>(1, double(control.miner.lines()));
  for (const auto& t : failed.miner.templates()) {
    bool known = control_texts.count(t.text) || control_texts.count(template_::mask(t.first_text));
    if (!known) {
      fresh.push_back(&t);
      continue;
    }
    auto it = control_counts.find(t.text);
    if (it == control_counts.end()) continue;
    double rf = double(t.count) / fl, rc = double(it->second) / cl;
    if ((rf > 5 * rc || rc > 5 * rf) && std::max(t.count, it->second) >= 10) changed.push_back({&t, rf, rc});
  }
  auto by_position = [](const template_::Template* a, const template_::Template* b) {
    return std::tie(a->first.source, a->first.line) < std::tie(b->first.source, b->first.line);
  };
  std::sort(fresh.begin(), fresh.end(), by_position);
  // The failure's own lines first: new lines the KB recognises as a failure or that are a
  // traceback's exception line; then the other new lines. Traceback frames and carets are
  // hidden (counted): they repeat what the exception line says.
  std::vector<const template_::Template*> own, other;
  size_t frames = 0;
  for (const auto* t : fresh) {
    std::string_view text = trim(t->first_text);
    bool frame = starts_with(text, "File \"") || text.find_first_not_of("^~ ") == std::string_view::npos;
    std::string type, msg;
    LineWinner w = best_entry_for_line(*loaded->engine, text);
    const kb::Entry* e = w.entry_id.empty() ? nullptr : loaded->kb->find(w.entry_id);
    bool failure_line =
        (e && (e->severity == "fatal" || e->severity == "error")) || record::parse_exception_line(text, type, msg);
    if (failure_line)
      own.push_back(t);
    else if (frame)
      ++frames;
    else
      other.push_back(t);
  }
  fresh = own;
  fresh.insert(fresh.end(), other.begin(), other.end());
  std::sort(changed.begin(), changed.end(), [](const Row& a, const Row& b) {
    return std::abs(std::log((a.rate_failed + 1e-9) / (a.rate_control + 1e-9))) >
           std::abs(std::log((b.rate_failed + 1e-9) / (b.rate_control + 1e-9)));
  });

  // The first line of the failed run that the control never printed (frames included).
  const template_::Template* first_departure = nullptr;
  for (const auto& t : failed.miner.templates()) {
    bool known = control_texts.count(t.text) || control_texts.count(template_::mask(t.first_text));
    if (!known && (!first_departure || by_position(&t, first_departure))) first_departure = &t;
  }
  analyze::Diagnosis d = diagnose_inputs(*loaded, opt.inputs, in_control, nullptr, opt.follow_symlinks);
  // The control must be a healthy run, or its lines are not noise: say so first.
  analyze::Diagnosis control_d = diagnose_inputs(*loaded, opt.control, {}, nullptr, opt.follow_symlinks);
  const bool control_healthy = control_d.verdict == analyze::VerdictKind::kHealthy;
  std::string control_warning;
  if (!control_healthy) {
    control_warning = fmt::format("the control run is not healthy ({}", analyze::verdict_name(control_d.verdict));
    if (control_d.primary)
      control_warning += ": " + control_d.primary->title;
    else if (!control_d.reasons.empty())
      control_warning += ": " + control_d.reasons.front().text;
    control_warning += "); lines it shares with the failed run may be part of the failure";
  }
  // The failure's own decisive line first among the new lines.
  if (d.primary && !d.primary->evidence.empty()) {
    std::string want = template_::mask(trim(d.primary->evidence[0].text));
    auto it = std::find_if(fresh.begin(), fresh.end(),
                           [&](const template_::Template* t) { return template_::mask(trim(t->first_text)) == want; });
    if (it != fresh.end()) std::rotate(fresh.begin(), it, it + 1);
  }
  // New lines shortly before the failure, in the same source, are evidence for it.
  if (d.primary && !d.primary->evidence.empty()) {
    // A copy: the push_back below reallocates evidence (heap-use-after-free found by ASan).
    const analyze::Evidence dec = d.primary->evidence[0];
    for (const auto* t : fresh) {
      std::string src = t->first.source < failed.names.size() ? failed.names[t->first.source] : "";
      if (src != dec.source || t->first.line >= dec.line || dec.line - t->first.line > 200) continue;
      analyze::Evidence e;
      e.source = src;
      e.line = t->first.line;
      e.text = "(new compared with the control) " + sanitize_utf8(t->first_text);
      d.primary->evidence.push_back(std::move(e));
      if (d.primary->evidence.size() >= 10) break;
    }
  }
  if (redactor) {
    redact_diagnosis(d, *redactor);
    control_warning = redactor->apply(control_warning);
  }
  size_t limit = opt.limit > 0 ? static_cast<size_t>(opt.limit) : 20;
  auto name_of = [&](const template_::Template* t) {
    return t->first.source < failed.names.size() ? failed.names[t->first.source] : std::string();
  };
  if (opt.format == "json") {
    ordered_json j;
    j["schema"] = "firstfault.diff/1";
    j["failed_lines"] = failed.miner.lines();
    j["control_lines"] = control.miner.lines();
    j["new_templates"] = ordered_json::array();
    for (size_t i = 0; i < fresh.size() && i < limit * 5; ++i) {
      const auto* t = fresh[i];
      j["new_templates"].push_back({{"template", t->text},
                                    {"count", t->count},
                                    {"source", name_of(t)},
                                    {"line", t->first.line},
                                    {"first", sanitize_utf8(t->first_text)}});
    }
    j["new_templates_total"] = fresh.size();
    j["failure_lines"] = own.size();
    j["hidden_traceback_frames"] = frames;
    j["rate_changes"] = ordered_json::array();
    for (size_t i = 0; i < changed.size() && i < limit; ++i) {
      j["rate_changes"].push_back({{"template", changed[i].t->text},
                                   {"per_10k_lines_failed", changed[i].rate_failed * 1e4},
                                   {"per_10k_lines_control", changed[i].rate_control * 1e4}});
    }
    if (first_departure) {
      j["first_departure"] = {{"source", name_of(first_departure)},
                              {"line", first_departure->first.line},
                              {"text", sanitize_utf8(first_departure->first_text)}};
    } else {
      j["first_departure"] = nullptr;
    }
    j["control_verdict"] = analyze::verdict_name(control_d.verdict);
    j["control_warning"] = control_warning.empty() ? ordered_json(nullptr) : ordered_json(control_warning);
    j["diagnosis"] = ordered_json::parse(report::render_json(d));
    if (redactor) {
      redact_json(j, *redactor);
      j["redaction"] = redaction_object(*redactor);
    }
    std::cout << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  } else {
    std::string out;
    if (!control_warning.empty()) out += "WARNING: " + escape_for_terminal(control_warning) + "\n\n";
    out += fmt::format("{} lines in the failed run, {} in the control; {} templates are new in the failed run\n\n",
                       failed.miner.lines(), control.miner.lines(), fresh.size());
    if (first_departure) {
      out += fmt::format("First departure from the control:\n  {}:{}\n  > {}\n\n",
                         escape_for_terminal(name_of(first_departure)), first_departure->first.line,
                         escape_for_terminal(first_departure->first_text));
    }
    if (!fresh.empty()) {
      out += fmt::format(
          "New in the failed run (absent from the control): the failure's own lines first ({}), then the "
          "rest, each in order of first appearance{}:\n",
          own.size(), frames ? fmt::format("; {} traceback frame lines hidden", frames) : "");
      for (size_t i = 0; i < fresh.size() && i < limit; ++i) {
        out += fmt::format("  {:>5}x  {}:{}  {}\n", fresh[i]->count, escape_for_terminal(name_of(fresh[i])),
                           fresh[i]->first.line, escape_for_terminal(fresh[i]->first_text.substr(0, 160)));
      }
      if (fresh.size() > limit) out += fmt::format("  ... {} more (--limit)\n", fresh.size() - limit);
    }
    if (!changed.empty()) {
      out += "\nRates that changed sharply (per 10,000 lines, failed vs control):\n";
      for (size_t i = 0; i < changed.size() && i < limit; ++i) {
        out += fmt::format("  {:>8.1f} vs {:<8.1f} {}\n", changed[i].rate_failed * 1e4, changed[i].rate_control * 1e4,
                           escape_for_terminal(changed[i].t->text.substr(0, 140)));
      }
    }
    report::TextOptions to;
    to.color = use_colour(opt, isatty(STDOUT_FILENO));
    out += "\nDiagnosis of the failed run (lines the control also prints are treated as noise):\n\n";
    out += report::render_text(d, to);
    std::cout << (redactor ? redactor->apply(out) + redaction_line(*redactor) : out);
  }
  if (!control_healthy) {
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(control_warning));
    return 3;
  }
  return fresh.empty() && d.verdict == analyze::VerdictKind::kHealthy ? 0 : 1;
}

// Over 80 lines: like run_diff, a report written top to bottom over what both runs gave.
int run_verify(const Options& opt) {
  auto loaded = load_or_say(opt, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
  bool read_before = false, read_after = false;
  analyze::Diagnosis before = diagnose_inputs(*loaded, opt.inputs, {}, &read_before, opt.follow_symlinks);
  analyze::Diagnosis after = diagnose_inputs(*loaded, opt.control, {}, &read_after, opt.follow_symlinks);
  if (!read_before || !read_after) {
    fmt::print(stderr, "firstfault: verify needs readable logs for --before and --after\n");
    return 2;
  }
  std::optional<redact::Redactor> redactor;  // --redact: both diagnoses are made, then redacted
  std::vector<Error> no_errors;
  if (opt.redact && !start_redactor(redactor, {}, no_errors)) return 2;
  if (redactor) {
    redact_diagnosis(before, *redactor);
    redact_diagnosis(after, *redactor);
  }
  // Outcome: the original failure's fingerprint gone, still there, or replaced.
  std::string outcome, detail;
  std::string before_fp = before.primary ? before.primary->fingerprint : "";
  std::set<std::string> after_fps;
  if (after.primary) after_fps.insert(after.primary->fingerprint);
  for (const auto& c : after.collateral) after_fps.insert(c.fingerprint);
  bool original_present = !before_fp.empty() && after_fps.count(before_fp);
  bool new_failure =
      after.verdict == analyze::VerdictKind::kFailed && (!after.primary || after.primary->fingerprint != before_fp);
  // Fixed needs the rerun to get past the point where the original failed: its own
  // completion, or a later step. A rerun cut off before it proves nothing.
  const analyze::Progress& pb = before.progress;
  const analyze::Progress& pa = after.progress;
  auto step = [](double v) { return fmt::format("{}", v); };
  bool got_past = pa.completed || (pa.last_step && pb.failed_at && *pa.last_step > *pb.failed_at);
  if (!before.primary) {
    outcome = "nothing-to-verify";
    detail = "the --before logs show no failure";
  } else if (original_present) {
    outcome = "still-failing";
    detail = "the original failure (" + before.primary->id + ") is still in the rerun";
  } else if (new_failure) {
    outcome = "replaced";
    detail = "the original failure is gone, but the rerun fails differently: " + after.primary->id;
  } else if (!after.errors.empty()) {
    outcome = "inconclusive";
    detail = "part of the rerun's logs was not read (" + after.errors.front() + ")";
  } else if (got_past) {
    outcome = "fixed";
    detail = "the original failure (" + before.primary->id + ") and its signature are gone, and the rerun " +
             (pa.completed ? std::string("completed")
                           : "got past step " + step(*pb.failed_at) + " (to step " + step(*pa.last_step) + ")") +
             "; the rerun is " + analyze::verdict_name(after.verdict);
  } else {
    outcome = "inconclusive";
    if (pa.last_step && pb.failed_at)
      detail = "the signature is gone, but the rerun stops at step " + step(*pa.last_step) +
               "; the original failed at step " + step(*pb.failed_at);
    else if (pa.last_step)
      detail = "the signature is gone, but the rerun stops at step " + step(*pa.last_step) +
               " without completing, and the original's failing step is not known";
    else
      detail = std::string("the signature is gone, but the rerun shows neither progress nor completion (") +
               analyze::verdict_name(after.verdict) + ")";
  }
  // Collateral of the original that is gone or remains.
  std::vector<std::string> collateral_gone, collateral_left;
  for (const auto& c : before.collateral) {
    (after_fps.count(c.fingerprint) ? collateral_left : collateral_gone).push_back(c.id);
  }
  // Verdict changes on the numbers.
  std::vector<std::string> number_changes;
  for (const auto& vb : before.verdicts) {
    for (const auto& va : after.verdicts) {
      if (va.id == vb.id && va.verdict != vb.verdict)
        number_changes.push_back(vb.id + ": " + vb.verdict + " -> " + va.verdict + " (" + va.summary + ")");
    }
  }
  int rc = outcome == "fixed" ? 0 : outcome == "nothing-to-verify" ? 2 : outcome == "inconclusive" ? 3 : 1;
  if (opt.format == "json") {
    ordered_json j;
    j["schema"] = "firstfault.verify/1";
    j["outcome"] = outcome;
    j["detail"] = detail;
    j["before"] = {{"verdict", analyze::verdict_name(before.verdict)},
                   {"failed_at_step", pb.failed_at ? ordered_json(*pb.failed_at) : ordered_json(nullptr)},
                   {"id", before.primary ? ordered_json(before.primary->id) : ordered_json(nullptr)},
                   {"fingerprint", before_fp.empty() ? ordered_json(nullptr) : ordered_json(before_fp)}};
    j["after"] = {{"verdict", analyze::verdict_name(after.verdict)},
                  {"last_step", pa.last_step ? ordered_json(*pa.last_step) : ordered_json(nullptr)},
                  {"completed", pa.completed},
                  {"id", after.primary ? ordered_json(after.primary->id) : ordered_json(nullptr)},
                  {"fingerprint", after.primary ? ordered_json(after.primary->fingerprint) : ordered_json(nullptr)}};
    j["collateral_gone"] = collateral_gone;
    j["collateral_left"] = collateral_left;
    j["number_changes"] = number_changes;
    if (redactor) {
      redact_json(j, *redactor);
      j["redaction"] = redaction_object(*redactor);
    }
    std::cout << j.dump(2, ' ', false, ordered_json::error_handler_t::replace) << "\n";
  } else {
    std::string word = outcome == "fixed"           ? "FIXED"
                       : outcome == "still-failing" ? "STILL FAILING"
                       : outcome == "replaced"      ? "REPLACED"
                       : outcome == "inconclusive"  ? "INCONCLUSIVE"
                                                    : "NOTHING TO VERIFY";
    // Ids, titles and summaries may come from a --kb directory, summaries quote the logs:
    // each line is shown escaped (issue 14).
    auto t = [&](const std::string& s) { return escape_for_terminal(redactor ? redactor->apply(s) : s); };
    std::cout << t(fmt::format("{}  {}", word, detail)) << "\n";
    if (before.primary)
      std::cout << t(fmt::format("  before: {} [{}] fingerprint {}", before.primary->title, before.primary->category,
                                 before_fp))
                << "\n";
    std::cout << t(fmt::format("  after:  {}", after.primary ? after.primary->title + " [" + after.primary->category +
                                                                   "] fingerprint " + after.primary->fingerprint
                                                             : std::string(analyze::verdict_name(after.verdict))))
              << "\n";
    if (!collateral_gone.empty())
      std::cout << t(fmt::format("  collateral gone: {}", fmt::join(collateral_gone, ", "))) << "\n";
    if (!collateral_left.empty())
      std::cout << t(fmt::format("  collateral still there: {}", fmt::join(collateral_left, ", "))) << "\n";
    for (const auto& n : number_changes) std::cout << t("  numbers: " + n) << "\n";
    if (redactor) std::cout << redaction_line(*redactor);
  }
  return rc;
}

}  // namespace ff::app
