#include "report/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "base/strings.h"
#include "base/wrap.h"
#include "report/format.h"

namespace ff::report {

using analyze::Diagnosis;
using analyze::Evidence;
using analyze::Progress;
using analyze::RankSource;
using analyze::VerdictKind;
using analyze::verdict_name;
using analyze::verdict_exit_code;
using analyze::rank_source_name;
using nlohmann::ordered_json;

namespace {

using detail::plural;
using detail::ranks_text;

ordered_json evidence_json(const Evidence& e) {
  ordered_json j;
  j["source"] = e.source;
  j["line"] = e.line;
  j["rank"] = e.rank ? ordered_json(*e.rank) : ordered_json(nullptr);
  j["node"] = e.node.empty() ? ordered_json(nullptr) : ordered_json(e.node);
  j["time"] = e.time.empty() ? ordered_json(nullptr) : ordered_json(e.time);
  j["time_iso"] = e.time_iso.empty() ? ordered_json(nullptr) : ordered_json(e.time_iso);
  j["text"] = e.text;
  return j;
}

template <typename T>
ordered_json opt(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json str_or_null(const std::string& s) { return s.empty() ? ordered_json(nullptr) : ordered_json(s); }

// JSON has no NaN or infinity: non-finite numbers are written as strings.
ordered_json num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// [[step, value], ...], built as arrays directly: a brace list per point goes through
// json_ref and the initializer-list constructor's "is this an object?" scan, which cost
// more than the rest of the report (thousands of points).
template <class Points>
ordered_json points_json(const Points& points) {
  ordered_json::array_t out;
  out.reserve(points.size());
  for (const auto& [s, v] : points) {
    ordered_json::array_t p;
    p.reserve(2);
    p.emplace_back(num(s));
    p.emplace_back(num(v));
    out.emplace_back(std::move(p));
  }
  return ordered_json(std::move(out));
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \n\t"), e = s.find_last_not_of(" \n\t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

const char* const kSchema = "firstfault.diagnosis/2";

// Over 80 lines: the JSON contract (docs/json-output.md) field by field, in the order the
// document lists them, so one can be checked against the other.
std::string render_json(const Diagnosis& d, int indent) {
  ordered_json j;
  j["schema"] = kSchema;
  j["verdict"] = verdict_name(d.verdict);
  j["exit_code"] = verdict_exit_code(d.verdict);
  j["reasons"] = ordered_json::array();
  for (const auto& r : d.reasons) {
    ordered_json rj;
    rj["rule"] = r.rule;
    rj["text"] = r.text;
    rj["source"] = r.evidence ? ordered_json(r.evidence->source) : ordered_json(nullptr);
    rj["line"] = r.evidence ? ordered_json(r.evidence->line) : ordered_json(nullptr);
    rj["evidence"] = r.evidence ? ordered_json(r.evidence->text) : ordered_json(nullptr);
    j["reasons"].push_back(std::move(rj));
  }
  if (d.primary) {
    const auto& p = *d.primary;
    ordered_json pj;
    pj["id"] = p.id;
    pj["title"] = p.title;
    pj["category"] = p.category;
    pj["confidence"] = p.confidence;
    pj["rank"] = opt(p.rank);
    pj["local_rank"] = opt(p.local_rank);
    pj["node"] = str_or_null(p.node);
    pj["gpu"] = opt(p.gpu);
    pj["time"] = str_or_null(p.time);
    pj["time_iso"] = str_or_null(p.time_iso);
    pj["rank_source"] = str_or_null(p.rank_source);
    pj["rank_rule"] =
        p.rank_how == RankSource::kNone ? ordered_json(nullptr) : ordered_json(rank_source_name(p.rank_how));
    pj["exception_type"] = str_or_null(p.exception_type);
    pj["basis"] = p.basis;
    if (p.wrapper_line) {
      ordered_json w;
      w["id"] = p.wrapper_id;
      w["evidence"] = evidence_json(*p.wrapper_line);
      pj["wrapper"] = w;
    } else {
      pj["wrapper"] = nullptr;
    }
    if (p.basis == "guess") {
      ordered_json g;
      g["from"] = p.guess_from;
      g["evidence"] = str_or_null(p.guess_evidence);
      g["closest"] = ordered_json::array();
      for (const auto& n : p.closest)
        g["closest"].push_back({{"id", n.id}, {"title", n.title}, {"category", n.category}, {"share", n.score}});
      pj["guess"] = g;
    } else {
      pj["guess"] = nullptr;
    }
    pj["node_source"] = str_or_null(p.node_source);
    pj["fingerprint"] = str_or_null(p.fingerprint);
    if (p.hang) {
      ordered_json h;
      h["op"] = str_or_null(p.hang->op);
      h["seq"] = p.hang->seq >= 0 ? ordered_json(p.hang->seq) : ordered_json(nullptr);
      h["timeout_ms"] = p.hang->timeout_ms > 0 ? ordered_json(p.hang->timeout_ms) : ordered_json(nullptr);
      h["started"] = str_or_null(p.hang->started);
      h["timed_out_ranks"] = p.hang->timed_out;
      h["suspect_ranks"] = p.hang->suspects;
      h["reasoning"] = str_or_null(p.hang->reasoning);
      h["ranks_with_progress"] = p.hang->ranks_with_progress;
      h["last_progress"] = ordered_json::array();
      for (const auto& r : p.hang->last)
        h["last_progress"].push_back(
            {{"rank", r.rank}, {"step", num(r.step)}, {"state", str_or_null(r.state)}, {"line", evidence_json(r.line)}});
      pj["hang"] = h;
    } else {
      pj["hang"] = nullptr;
    }
    pj["evidence"] = ordered_json::array();
    for (const auto& e : p.evidence) pj["evidence"].push_back(evidence_json(e));
    auto frame_json = [](const analyze::Frame& f) {
      ordered_json fj;
      fj["file"] = f.file;
      fj["line"] = f.line;
      fj["function"] = str_or_null(f.function);
      return fj;
    };
    pj["traceback"] = ordered_json::array();
    for (const auto& f : p.traceback) pj["traceback"].push_back(frame_json(f));
    pj["traceback_frames_dropped"] = p.traceback_dropped;
    pj["user_frame"] = p.user_frame ? frame_json(*p.user_frame) : ordered_json(nullptr);
    pj["context_before"] = ordered_json::array();
    for (const auto& l : p.context_before) pj["context_before"].push_back({{"line", l.line}, {"text", l.text}});
    pj["summary"] = p.summary;
    pj["root_cause"] = p.root_cause;
    std::string fix;
    for (size_t i = 0; i < p.fix.size(); ++i) fix += (i ? "\n" : "") + std::to_string(i + 1) + ". " + p.fix[i];
    pj["fix"] = fix;
    pj["fix_steps"] = p.fix;
    if (p.fix_at) {
      pj["fix_at"] = {{"step", num(p.fix_at->step)}, {"what", p.fix_at->what}, {"line", evidence_json(p.fix_at->line)}};
    } else {
      pj["fix_at"] = nullptr;
    }
    pj["verify"] = p.verify;
    if (!p.verify_where.empty()) pj["verify_where"] = p.verify_where;
    if (!p.verify_expect.empty()) pj["verify_expect"] = p.verify_expect;
    pj["references"] = p.references;
    j["primary"] = pj;
  } else {
    j["primary"] = nullptr;
  }
  j["collateral"] = ordered_json::array();
  for (const auto& c : d.collateral) {
    ordered_json cj;
    cj["id"] = c.id;
    cj["title"] = c.title;
    cj["category"] = c.category;
    cj["ranks"] = c.ranks;
    cj["nodes"] = c.nodes;
    cj["count"] = c.count;
    cj["explained_by"] = str_or_null(c.explained_by);
    cj["fingerprint"] = str_or_null(c.fingerprint);
    cj["first"] = evidence_json(c.first);
    j["collateral"].push_back(cj);
  }
  j["hypotheses"] = ordered_json::array();
  for (const auto& h : d.hypotheses) {
    ordered_json hj;
    hj["id"] = h.id;
    hj["title"] = h.title;
    hj["category"] = h.category;
    hj["confidence"] = h.confidence;
    hj["why"] = h.why;
    hj["evidence"] = ordered_json::array();
    for (const auto& e : h.evidence) hj["evidence"].push_back(evidence_json(e));
    hj["separate_by"] = h.separate_by;
    j["hypotheses"].push_back(hj);
  }
  j["timeline"] = ordered_json::array();
  for (const auto& t : d.timeline) {
    ordered_json tj;
    tj["time"] = str_or_null(t.time);
    tj["id"] = t.id;
    tj["role"] = t.role;
    tj["ranks"] = t.ranks;
    tj["nodes"] = t.nodes;
    tj["count"] = t.count;
    tj["source"] = t.source;
    tj["line"] = t.line;
    tj["text"] = t.text;
    j["timeline"].push_back(tj);
  }
  j["symptoms"] = ordered_json::array();
  for (const auto& s : d.symptoms) {
    ordered_json sj;
    sj["id"] = s.id;
    sj["title"] = s.title;
    sj["category"] = s.category;
    sj["rank"] = opt(s.rank);
    sj["evidence"] = evidence_json(s.evidence.at(0));
    j["symptoms"].push_back(sj);
  }
  ordered_json series;
  series["metrics"] = ordered_json::object();
  for (const auto& m : d.series) {
    ordered_json mj;
    mj["count"] = m.count;
    mj["ranks"] = m.ranks;
    mj["min"] = num(m.min);
    mj["max"] = num(m.max);
    mj["first"] = {{"step", num(m.first_step)}, {"value", num(m.first_value)}};
    mj["last"] = {{"step", num(m.last_step)}, {"value", num(m.last_value)}};
    mj["points_rank"] = m.points_rank && *m.points_rank >= 0 ? ordered_json(*m.points_rank) : ordered_json(nullptr);
    mj["points"] = points_json(m.points);
    mj["per_rank"] = ordered_json::array();
    for (const auto& rp : m.per_rank) mj["per_rank"].push_back({{"rank", rp.rank}, {"points", points_json(rp.points)}});
    series["metrics"][m.name] = std::move(mj);
  }
  series["verdicts"] = ordered_json::array();
  for (const auto& v : d.verdicts) {
    ordered_json vj;
    vj["id"] = v.id;
    vj["verdict"] = v.verdict;
    vj["metric"] = v.metric;
    vj["step"] = v.step ? num(*v.step) : ordered_json(nullptr);
    vj["rank"] = opt(v.rank);
    vj["summary"] = v.summary;
    vj["evidence"] = ordered_json::array();
    for (const auto& e : v.evidence) vj["evidence"].push_back(evidence_json(e));
    series["verdicts"].push_back(std::move(vj));
  }
  j["series"] = std::move(series);
  ordered_json inputs;
  inputs["lines"] = d.lines;
  inputs["bytes"] = d.bytes;
  inputs["sources"] = ordered_json::array();
  for (const auto& s : d.sources) {
    ordered_json sj;
    sj["name"] = s.name;
    sj["encoding"] = s.encoding;
    sj["bytes"] = s.bytes;
    sj["lines"] = s.lines;
    sj["events"] = s.events;
    sj["ok"] = s.ok;
    sj["error"] = str_or_null(s.error);
    inputs["sources"].push_back(sj);
  }
  inputs["errors"] = d.errors;
  inputs["notes"] = d.notes;
  j["inputs"] = inputs;
  const Progress& pg = d.progress;
  ordered_json progress;
  progress["ranks"] = pg.ranks;
  progress["last_step"] = opt(pg.last_step);
  progress["min_last_step"] = opt(pg.min_last_step);
  progress["total"] = opt(pg.total);
  progress["last_time"] = str_or_null(pg.last_time);
  progress["failed_at_step"] = opt(pg.failed_at);
  progress["completed"] = pg.completed;
  progress["completion"] = ordered_json::array();
  for (const auto& e : pg.completion)
    progress["completion"].push_back({{"source", e.source}, {"line", e.line}, {"text", e.text}});
  j["progress"] = std::move(progress);
  j["recovered"] = ordered_json::array();
  for (const auto& r : d.recovered) {
    j["recovered"].push_back({{"id", r.id},
                              {"rank", opt(r.rank)},
                              {"steps_after", r.steps_after},
                              {"source", r.evidence.source},
                              {"line", r.evidence.line},
                              {"text", r.evidence.text}});
  }
  return j.dump(indent, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

// Over 80 lines: the first screen is laid out as one piece (verdict, first failure, decisive
// line, fix, verify) because how many fix steps it shows depends on the rows the rest takes;
// the sections after it follow in the order they print.
std::string render_text(const Diagnosis& d, const TextOptions& o) {
  auto paint = [&](const char* code, const std::string& s) {
    return o.color ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  };
  // Everything below that comes from a log, a file name or a KB file goes through one of
  // these before it is shown (issue 14: nothing in a log reaches the terminal raw). `ml`
  // keeps the line breaks of multi-line KB text (a summary, a fix, the verify step).
  auto t = [](const std::string& s) { return escape_for_terminal(s); };
  auto ml = [](const std::string& s) { return escape_for_terminal(s, true); };
  // What could not be read: shown even in a brief report (a verdict from part of the input).
  auto input_problems = [&] {
    std::string b;
    for (const auto& e : d.errors) b += fmt::format("\n{} {}", paint("1;33", "input problem:"), t(e));
    if (!d.errors.empty()) b += "\n";
    return b;
  };
  std::string out;
  std::string verdict_colour = d.verdict == VerdictKind::kFailed    ? "1;31"
                               : d.verdict == VerdictKind::kHealthy ? "1;32"
                                                                    : "1;33";
  const std::string upper = t(detail::verdict_upper(d.verdict));
  if (d.primary) {
    const auto& p = *d.primary;
    out += fmt::format("{}  {}  [{}]\n", paint(verdict_colour.c_str(), upper), paint("1", t(p.title)), t(p.category));
    const std::string where = t(detail::where_text(p));
    out += fmt::format("first failure: {}   (confidence {:.2f})\n", where, p.confidence);
    if (!p.evidence.empty()) {
      const auto& e = p.evidence[0];
      // The file:line whole (terminals make it clickable; a break before the colon would not be).
      out += fmt::format("{}  {}:{}\n  {} {}\n", kVerbatim, t(e.source), e.line, paint("1;31", ">"), t(e.text));
    }
    if (detail::says_rank_source(p)) out += fmt::format("  (rank from {})\n", t(p.rank_source));
    if (p.user_frame) {
      out += fmt::format("  in your code: {}:{}", t(p.user_frame->file), p.user_frame->line);
      if (!p.user_frame->function.empty()) out += fmt::format(" in {}", t(p.user_frame->function));
      out += "\n";
    }
    if (p.hang) {
      const auto& h = *p.hang;
      std::string what = h.op.empty() ? "a collective" : t(h.op);
      if (h.seq >= 0) what += fmt::format(" SeqNum={}", h.seq);
      out += fmt::format("  stuck collective: {}", what);
      if (!h.started.empty()) out += fmt::format(", started about {}", t(h.started));
      if (h.timeout_ms > 0) out += fmt::format(" (timeout {} s)", h.timeout_ms / 1000);
      out += fmt::format("; {} rank{} timed out", h.timed_out.size(), h.timed_out.size() == 1 ? "" : "s");
      if (!h.suspects.empty())
        out += fmt::format("; suspect rank{} {}", h.suspects.size() == 1 ? "" : "s", ranks_text(h.suspects));
      out += "\n";
      // The first suspect's own last line (the decisive line above is another rank's
      // timeout); each rank's last step follows the first screen (issue 33 item 4).
      if (!h.last.empty() && h.last.front().state == "suspect") {
        const auto& l = h.last.front().line;
        out += fmt::format("{}  rank {}'s last progress line, {}:{}\n  {} {}\n", kVerbatim, h.last.front().rank,
                           t(l.source), l.line, paint("1;33", ">"), t(l.text));
      }
    }
    // The fix and the command that verifies it come right after the decisive line, so the
    // answer fits the first screen of a terminal; the explanation follows. When the steps
    // of the fix would push the verify command off the screen, the later steps go below it.
    auto fix_block = [&](size_t shown) {
      if (p.fix.empty()) return std::string();
      std::string b = fmt::format("\n{}\n", paint("1", "Fix"));
      if (p.fix_at) b += fmt::format("  In this log: {} ({}:{}).\n", t(p.fix_at->what), t(p.fix_at->line.source),
                                     p.fix_at->line.line);
      for (size_t i = 0; i < shown; ++i) b += fmt::format("  {}. {}\n", i + 1, ml(p.fix[i]));
      if (shown < p.fix.size())
        b += fmt::format("  ({} more step{} below)\n", p.fix.size() - shown, p.fix.size() - shown == 1 ? "" : "s");
      return b;
    };
    std::string verify_block;
    if (!p.verify.empty()) {
      verify_block = fmt::format("\n{}\n", paint("1", "Verify"));
      const std::string where = detail::verify_where_text(p.verify_where);
      if (!where.empty()) verify_block += fmt::format("  {}\n", where);
      const std::string verify = ml(trimmed(p.verify));
      // Code to paste is never wrapped (a break inside a quoted string or between a
      // variable and its command changes what runs); the terminal folds a long line.
      bool code = true;  // until diagnose's re-check of the rerun (detail::kRerunCheck)
      for (auto line : split(verify, '\n')) {
        if (starts_with(line, detail::kRerunCheck)) code = false;
        verify_block += line.empty() ? std::string("\n")
                                     : fmt::format("{}  {}\n", code ? std::string(1, kVerbatim) : std::string(), line);
      }
      if (!p.verify_expect.empty()) verify_block += fmt::format("  Expect: {}\n", ml(trimmed(p.verify_expect)));
    }
    size_t shown = p.fix.size();
    if (o.rows > 1 && o.width > 0 && !o.verbose) {
      auto rows_of = [&](const std::string& s) {
        const std::string w = wrap_text(s, o.width);
        return static_cast<size_t>(std::count(w.begin(), w.end(), '\n'));
      };
      while (shown > 1 && rows_of(out + fix_block(shown) + verify_block) > o.rows - 1) --shown;
    }
    out += fix_block(shown) + verify_block;
    if (o.brief) return wrap_text(out + input_problems(), o.width);
    if (shown < p.fix.size()) {
      out += fmt::format("\n{}\n", paint("1", "Fix, the other steps"));
      for (size_t i = shown; i < p.fix.size(); ++i) out += fmt::format("  {}. {}\n", i + 1, ml(p.fix[i]));
    }
    // A hang: where each rank was when the job stopped moving (issue 33 item 4).
    if (p.hang && !p.hang->last.empty()) {
      const auto& h = *p.hang;
      out += fmt::format("\n{} ({} rank{} printed progress)\n", paint("1", "Last progress, by rank"),
                         h.ranks_with_progress, h.ranks_with_progress == 1 ? "" : "s");
      for (const auto& row : detail::hang_rows(h, o.verbose ? analyze::Hang::kMaxRankRows : 8)) {
        if (row.line == nullptr) {
          out += fmt::format("  {} more\n", detail::ranks_label(row.ranks));
          continue;
        }
        out += fmt::format("{}  {:<12} step {:<6} {:<24} {}:{}{}\n", kVerbatim, detail::ranks_label(row.ranks),
                           fmt::format("{:g}", row.step), t(row.line->time), t(row.line->source), row.line->line,
                           row.state.empty() ? "" : "  " + row.state);
      }
    }
    if (!p.summary.empty()) out += fmt::format("\n{}\n{}\n", paint("1", "What happened"), ml(trimmed(p.summary)));
    if (!p.root_cause.empty()) out += fmt::format("\n{}\n{}\n", paint("1", "Root cause"), ml(trimmed(p.root_cause)));
  } else {
    // No failure: the verdict says how much that means, and its reasons say why.
    out += fmt::format("{}  no failure found in {}\n", paint(verdict_colour.c_str(), upper), plural(d.lines, "line"));
    for (const auto& r : d.reasons) {
      out += fmt::format("  - {}\n", t(r.text));
      if (r.evidence)
        out += fmt::format("    {}:{}  {}\n", t(r.evidence->source), r.evidence->line, t(r.evidence->text));
    }
  }
  if (o.brief) return wrap_text(out + input_problems(), o.width);
  if (d.primary && d.reasons.size() > 1) {
    for (size_t i = 1; i < d.reasons.size(); ++i) out += fmt::format("  note: {}\n", t(d.reasons[i].text));
  }
  if (!d.collateral.empty()) {
    std::string origin = d.primary && d.primary->rank ? fmt::format(" on rank {}", *d.primary->rank) : "";
    out += fmt::format("\n{}\n", paint("1", d.primary ? "Collateral, explained by the " + t(d.primary->title) + origin
                                                      : std::string("Other errors")));
    size_t shown = 0;
    for (const auto& c : d.collateral) {
      if (!o.verbose && shown++ >= 8) {
        out += fmt::format("  ... {} more (--verbose)\n", d.collateral.size() - 8);
        break;
      }
      std::string ranks = c.ranks.empty() ? ""
                                          : fmt::format(" on {} rank{} ({})", c.ranks.size(),
                                                        c.ranks.size() > 1 ? "s" : "", ranks_text(c.ranks));
      std::string nodes = c.nodes.size() > 1 ? fmt::format(", {} nodes", c.nodes.size()) : "";
      out += fmt::format("  - {} x{}{}{}\n", t(c.title), c.count, ranks, nodes);
    }
  }
  if (!d.hypotheses.empty()) {
    out += fmt::format("\n{}\n", paint("1", "Other candidates"));
    for (const auto& h : d.hypotheses) {
      out +=
          fmt::format("  - {} [{}]: {}\n", t(h.title), t(h.category), h.evidence.empty() ? "" : t(h.evidence[0].text));
    }
  }
  if (!d.verdicts.empty()) {
    out += fmt::format("\n{}\n", paint("1", "Numbers"));
    for (const auto& v : d.verdicts) out += fmt::format("  - {}\n", t(v.summary));
  }
  if (!d.symptoms.empty()) {
    out += fmt::format("\n{}\n", paint("1", "Warnings and symptoms"));
    for (const auto& s : d.symptoms) out += fmt::format("  - {}\n", t(s.title));
  }
  if (d.timeline.size() > 1) {
    out += fmt::format("\n{}\n", paint("1", "Timeline"));
    size_t n = 0;
    for (const auto& e : d.timeline) {
      if (!o.verbose && n++ >= 10) break;
      std::string ranks = e.ranks.empty() ? "-" : ranks_text(e.ranks);
      out += fmt::format("  {:<26} {:<10} ranks {:<10} x{:<4} {}\n", e.time.empty() ? "(no time)" : t(e.time),
                         t(e.role), ranks, e.count, t(e.id));
    }
  }
  out += input_problems();
  if (o.verbose) {
    for (const auto& n : d.notes) out += fmt::format("note: {}\n", t(n));
  }
  out += fmt::format("\n{}, {} read in {:.3f} s\n", plural(d.lines, "line"), plural(d.sources.size(), "source"),
                     d.seconds);
  return wrap_text(out, o.width);
}

}  // namespace ff::report
