// analyze.verdict.cc — steps 5 to 7: the numbers (series summaries and their verdicts), progress per rank and
// the verdict with its reasons.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "analyze/analyze_internal.h"
#include "base/strings.h"
#include "template/template.h"

namespace ff::analyze::detail {

namespace {

// Short series summaries for the report: per metric over all ranks, with the points of
// one rank (the lowest) so the JSON stays small enough to plot.
void summarise_series(const metrics::SeriesSet& set, const metrics::Aliases& aliases, std::vector<MetricSummary>& out) {
  std::map<metrics::MetricId, size_t> index;
  struct RankSeries {
    int rank;
    double max;
    const metrics::Series* series;
  };
  std::map<size_t, std::vector<RankSeries>> ranks_of;  // metric (index in out) -> its ranks
  for (const auto& [key, s] : set.all()) {
    auto [it, fresh] = index.emplace(key.first, out.size());
    if (fresh) {
      MetricSummary m;
      m.name = aliases.name(key.first);
      m.min = s.min;
      m.max = s.max;
      m.first_step = s.first.step;
      m.first_value = s.first.value;
      out.push_back(std::move(m));
    }
    MetricSummary& m = out[it->second];
    m.count += s.count;
    const bool others = key.second == metrics::SeriesSet::kOtherRanks;
    m.ranks += others ? set.other_ranks() : 1;
    if (s.has_finite) {
      m.min = std::min(m.min, s.min);
      m.max = std::max(m.max, s.max);
    }
    if (s.last.step >= m.last_step) {
      m.last_step = s.last.step;
      m.last_value = s.last.value;
    }
    if (!others && s.has_finite) ranks_of[it->second].push_back({key.second, s.max, &s});
    if (!others && (!m.points_rank || key.second < *m.points_rank)) {
      m.points_rank = key.second;
      m.points.clear();
      size_t stride = std::max<size_t>(1, s.points.size() / 200);
      for (size_t i = 0; i < s.points.size(); i += stride) m.points.emplace_back(s.points[i].step, s.points[i].value);
    }
  }
  for (auto& [i, ranks] : ranks_of) {
    if (ranks.size() < 2) continue;
    std::sort(ranks.begin(), ranks.end(), [](const RankSeries& a, const RankSeries& b) { return a.rank < b.rank; });
    std::vector<RankSeries> keep(ranks.begin(), ranks.begin() + std::min(ranks.size(), MetricSummary::kPlotRanks));
    if (ranks.size() > keep.size()) {  // the highest rank series is kept in place of the last low one
      auto top = std::max_element(ranks.begin(), ranks.end(),
                                  [](const RankSeries& a, const RankSeries& b) { return a.max < b.max; });
      if (std::none_of(keep.begin(), keep.end(), [&](const RankSeries& k) { return k.rank == top->rank; }))
        keep.back() = *top;
    }
    for (const auto& r : keep) {
      MetricSummary::RankPoints rp;
      rp.rank = r.rank;
      const auto& pts = r.series->points;
      const size_t stride = std::max<size_t>(1, pts.size() / 60);
      for (size_t k = 0; k < pts.size(); k += stride) rp.points.emplace_back(pts[k].step, pts[k].value);
      out[i].per_rank.push_back(std::move(rp));
    }
  }
}

}  // namespace

namespace {

// The words of a finding the numbers make (no error line says so): from the KB entry of
// that id when there is one (a --kb entry may supply them), else the defaults here.
struct SeriesWords {
  const char* id;
  const char* title;
  const char* summary;
  std::vector<std::string> fix;
  const char* verify;
};

const SeriesWords& words_for(const std::string& verdict_id) {
  static const SeriesWords kLossScale{
      "series.loss-scale-terminal",
      "Dynamic loss scale collapsed (from the numbers in the log)",
      "No error line says so, but the fp16 loss scale only falls this far when gradients overflow at every step.",
      {"Find the first step where the loss or grad norm grew; lower the learning rate or add warm-up and gradient "
       "clipping.",
       "Switch to bf16 if the hardware supports it."},
      "Rerun and check that the loss scale recovers after warm-up (firstfault reports it as transient)."};
  static const SeriesWords kNonFinite{
      "series.non-finite",
      "Training numbers became NaN or infinite (from the numbers in the log)",
      "No error line says so, but the run's own progress lines show the value non-finite to the last one logged: "
      "the weights stop training (or are corrupted) from there.",
      {"Resume from a checkpoint saved before the first non-finite step.",
       "Lower the learning rate or add warm-up and gradient clipping; with fp16, prefer bf16 or check the loss "
       "scaler."},
      "Rerun from the checkpoint and check that loss and grad norm stay finite past the step named here."};
  static const SeriesWords kSkipped{
      "series.skipped-iterations",
      "Every iteration is skipped (from the numbers in the log)",
      "No error line says so, but the framework counts every iteration of its last logging intervals as skipped: "
      "the gradients overflow or are non-finite at each step, so the weights no longer change.",
      {"Resume from a checkpoint saved before the skips began.",
       "Lower the learning rate or add warm-up and gradient clipping; with fp16, prefer bf16."},
      "Rerun from the checkpoint and check that the number of skipped iterations returns to 0."};
  if (verdict_id == "loss-scale") return kLossScale;
  if (verdict_id == "skipped") return kSkipped;
  return kNonFinite;
}

Finding series_finding(Ctx& c, const Verdict& v) {
  const SeriesWords& w = words_for(v.id);
  const kb::Entry* e = c.kb.find(w.id);
  Finding f;
  f.id = w.id;
  f.title = e ? e->title : w.title;
  f.category = "numerical";
  f.role = "root";
  f.confidence = 0.7;
  f.evidence = v.evidence;
  if (v.rank) f.rank = v.rank;
  // No KB entry can hold it yet (an entry needs a pattern a real program prints), so
  // the words are here unless a --kb entry of this id supplies them.
  f.summary = v.summary + ". " + (e ? e->summary : std::string(w.summary));
  if (e) {
    f.root_cause = e->root_cause;
    f.fix = e->fix;
    f.verify = e->verify;
    f.verify_where = e->verify_where;
    f.verify_expect = e->verify_expect;
    for (const auto& r : e->references) f.references.push_back(r.url);
  } else {
    f.fix = w.fix;
    f.verify = w.verify;
  }
  f.fingerprint = template_::fingerprint(f.id, "");
  return f;
}

}  // namespace

// Step 5, numbers: a terminal loss scale, a loss or grad norm that ends non-finite, or
// every iteration skipped confirms a numerical primary, or makes one when no error line
// says so; a transient loss scale is a note.
void read_numbers(Ctx& c) {
  if (!c.numbers.series || !c.numbers.aliases) return;
  Diagnosis& d = c.d;
  d.verdicts =
      judge_series(*c.numbers.series, *c.numbers.aliases, c.sources, c.numbers.last_time_us, c.numbers.last_time_clock);
  summarise_series(*c.numbers.series, *c.numbers.aliases, d.series);
  const Verdict* terminal = nullptr;
  const Verdict* nonfinite = nullptr;
  const Verdict* transient = nullptr;
  const Verdict* ends = nullptr;  // a loss or grad norm non-finite to the end, every iteration skipped
  for (const auto& v : d.verdicts) {
    if (v.id == "loss-scale" && v.verdict == "terminal") terminal = &v;
    if (v.id == "loss-scale" && v.verdict == "transient") transient = &v;
    if (v.id == "non-finite") nonfinite = &v;
    if (!ends && (v.id == "ends-non-finite" || v.id == "skipped" || v.id == "nan-iterations")) ends = &v;
  }
  // Where a numerical failure began, for the fix: the first non-finite value, else the
  // loss scale's floor, else a value non-finite to the end, else a spike.
  const Verdict* began = nonfinite ? nonfinite : terminal ? terminal : ends;
  if (!began) {
    auto spike = std::find_if(d.verdicts.begin(), d.verdicts.end(),
                              [](const Verdict& v) { return v.id == "loss-spike" && v.step; });
    if (spike != d.verdicts.end()) began = &*spike;
  }
  auto say_fix_at = [&] {
    if (!d.primary || d.primary->category != "numerical" || !began || !began->step) return;
    d.primary->fix_at = Finding::FixAt{*began->step, began->summary,
                                       began->evidence.empty() ? Evidence{} : began->evidence.front()};
  };
  if (d.primary) {
    say_fix_at();
    if (c.on(Rule::kSeriesConfirm) && d.primary->category == "numerical" && (terminal || nonfinite)) {
      d.primary->confidence = std::max(d.primary->confidence, 0.95);
      const Verdict& v = terminal ? *terminal : *nonfinite;
      for (const auto& e : v.evidence) d.primary->evidence.push_back(e);
    }
    return;
  }
  if (terminal && c.on(Rule::kSeriesTerminalLossScale)) {
    d.primary = series_finding(c, *terminal);
    d.primary->rank.reset();  // (the loss scale is all-reduced: the rank with most points says nothing)
  } else if (ends && c.on(Rule::kSeriesEndsNonFinite)) {
    d.primary = series_finding(c, *ends);
    d.primary->confidence = 0.6;
  } else if (transient) {
    d.notes.push_back(transient->summary + ": normal for dynamic loss scaling at warm-up.");
  }
  if (!d.primary && nonfinite && !ends)
    d.notes.push_back(nonfinite->summary + ", finite again after it: an overflowing step that was skipped.");
  say_fix_at();
}

namespace {

std::string fmt_step(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

}  // namespace

// Step 6, progress: how far the run got: progress lines per rank, the stated total, completion lines.
void read_progress(Ctx& c) {
  Progress& p = c.d.progress;
  if (c.numbers.series) {
    const auto& lp = c.numbers.series->last_progress();
    int64_t last_us = INT64_MIN;
    if (const uint64_t others = c.numbers.series->other_ranks(); others > 0) {
      c.d.notes.push_back(std::to_string(others) + " ranks past the first " +
                          std::to_string(metrics::SeriesSet::kMaxRanks) +
                          " are summarised together in the series and the progress (a bound on memory; the steps of "
                          "each are not kept)");
    }
    for (const auto& [r, pt] : lp) {
      p.ranks += r == metrics::SeriesSet::kOtherRanks ? static_cast<int>(c.numbers.series->other_ranks()) : 1;
      if (!p.last_step || pt.step > *p.last_step) p.last_step = pt.step;
      if (!p.min_last_step || pt.step < *p.min_last_step) p.min_last_step = pt.step;
      last_us = std::max(last_us, pt.time_us);
    }
    if (last_us != INT64_MIN) p.last_time = format_time(last_us, c.numbers.last_time_clock);
    if (c.numbers.aliases && c.numbers.aliases->step_total() != metrics::kNoMetric) {
      for (const auto& [key, s] : c.numbers.series->all()) {
        if (key.first == c.numbers.aliases->step_total() && s.has_finite && (!p.total || s.last.value > *p.total))
          p.total = s.last.value;
      }
    }
    if (c.primary && !lp.empty()) {
      auto it = lp.find(c.rank);
      p.failed_at = it != lp.end() ? it->second.step : *p.last_step;
      // A numerical failure the series did not see begin (a script that stops at its first
      // NaN prints no NaN progress line): the failing rank's last step is where to look.
      Finding* f = c.d.primary ? &*c.d.primary : nullptr;
      // (No rank, as when all ranks failed alike: the rank that got furthest.)
      auto at = it != lp.end() ? it : std::max_element(lp.begin(), lp.end(), [](const auto& a, const auto& b) {
        return a.second.step < b.second.step;
      });
      if (f && f->category == "numerical" && !f->fix_at && at != lp.end()) {
        const metrics::Point& pt = at->second;
        f->fix_at = Finding::FixAt{pt.step, "the last progress line before the failure is at step " + fmt_step(pt.step),
                                   progress_evidence(c.numbers, at->first, pt, c.sources)};
      }
    }
  }
  for (const Event* e : c.completions) {
    if (p.completion.size() >= kTuning.max_completion_evidence) break;
    p.completion.push_back(to_evidence(*e, c.sources));
  }
  bool final_step = p.total && p.min_last_step && *p.min_last_step >= *p.total;
  p.completed = (!c.completions.empty() && c.on(Rule::kVerdictHealthyCompletion)) ||
                (final_step && c.on(Rule::kVerdictHealthyFinalStep));
}

namespace {

std::string ranks_phrase(int n) { return n == 1 ? "1 rank" : std::to_string(n) + " ranks"; }

// What was not read, one reason each (a failed verdict keeps them as notes).
void add_unread_reasons(Ctx& c) {
  for (const auto& u : c.numbers.unread)
    c.d.reasons.push_back({rule_name(Rule::kVerdictIncompleteInput), "not read: " + u, {}});
}

// No failure, and known warnings: named as benign here, with the first one's line.
bool add_warnings_reason(Ctx& c) {
  Diagnosis& d = c.d;
  if (!c.on(Rule::kVerdictIncompleteWarnings) || d.symptoms.empty()) return false;
  std::string names;
  size_t n = 0;
  for (const auto& s : d.symptoms) {
    if (++n > 3) {
      names += fmt_step(static_cast<double>(d.symptoms.size() - 3)) + " more";
      break;
    }
    names += s.title + " (" + s.id + ")" + (n < d.symptoms.size() ? "; " : "");
  }
  d.reasons.push_back({rule_name(Rule::kVerdictIncompleteWarnings),
                       "no failure in this excerpt; the warnings in it are known and benign here: " + names,
                       d.symptoms.front().evidence.empty()
                           ? std::nullopt
                           : std::optional<Evidence>(d.symptoms.front().evidence.front())});
  return true;
}

// No event and no progress line, but lines only a job's log has: what they are, in words.
std::string log_lines_phrase(const JobNumbers& n) {
  std::string out;
  auto add = [&](uint64_t k, const char* what) {
    if (k == 0) return;
    out += (out.empty() ? "" : ", ") + fmt_step(static_cast<double>(k)) + " " + what;
  };
  add(n.traceback_starts,
      n.traceback_starts == 1 ? "traceback or launcher summary" : "tracebacks or launcher summaries");
  add(n.lines_with_rank, n.lines_with_rank == 1 ? "line with a rank prefix" : "lines with a rank prefix");
  add(n.lines_with_time, n.lines_with_time == 1 ? "timestamped log line" : "timestamped log lines");
  return out;
}

}  // namespace

// Step 7, the verdict, by the first rule that holds, with its reasons.
// Long because it is the verdict rules of step 7 in their documented order, the first
// that holds deciding; split up, that order would be spread over several functions.
void decide_verdict(Ctx& c) {
  Diagnosis& d = c.d;
  const Progress& p = d.progress;
  if (d.primary) {
    d.verdict = VerdictKind::kFailed;
    Reason r{"diagnosis.primary", "the first failure: " + d.primary->title, d.primary->evidence.front()};
    d.reasons.push_back(std::move(r));
    add_unread_reasons(c);
    return;
  }
  for (const auto& rec : d.recovered) {
    std::string who = rec.rank ? "rank " + std::to_string(*rec.rank) : std::string("the run");
    d.reasons.push_back({rule_name(Rule::kRecovered),
                         who + " recovered from " + rec.id + ": " + fmt_step(rec.steps_after) + " more steps",
                         rec.evidence});
  }
  // Degraded: the run went on, with sustained harm. An advisory line is a note: the
  // symptom lines of a fatal entry seen without its failure (DeepSpeed's "untested
  // optimizer, proceed with caution" when the config allows it) do not count.
  if (c.on(Rule::kVerdictDegradedSymptoms)) {
    for (const auto& s : d.symptoms) {
      const kb::Entry* e = c.kb.find(s.id);
      if (e && e->severity == "error") {
        d.verdict = VerdictKind::kDegraded;
        d.reasons.push_back({rule_name(Rule::kVerdictDegradedSymptoms), "an error-severity warning: " + s.title,
                             s.evidence.empty() ? std::nullopt : std::optional<Evidence>(s.evidence.front())});
      }
    }
  }
  // Errors recovered from that keep coming: the run after the last one is no longer than
  // the stretch they came over. A few retried errors followed by a long run are notes.
  double first = 0, last = 1e300;
  for (const auto& rec : d.recovered) first = std::max(first, rec.steps_after), last = std::min(last, rec.steps_after);
  if (c.on(Rule::kVerdictDegradedRecovered) && d.recovered.size() >= 2 && last <= first - last) {
    d.verdict = VerdictKind::kDegraded;
    d.reasons.push_back({rule_name(Rule::kVerdictDegradedRecovered),
                         std::to_string(d.recovered.size()) +
                             " errors were recovered from and they keep coming (the last " + fmt_step(last) +
                             " steps before the end)",
                         {}});
  }
  if (c.on(Rule::kVerdictDegradedSeries)) {
    for (const auto& v : d.verdicts) {
      if (v.id == "straggler" || v.id == "throughput") {
        d.verdict = VerdictKind::kDegraded;
        d.reasons.push_back({rule_name(Rule::kVerdictDegradedSeries), v.summary,
                             v.evidence.empty() ? std::nullopt : std::optional<Evidence>(v.evidence.front())});
      }
    }
  }
  if (d.verdict == VerdictKind::kDegraded) return;
  if (c.on(Rule::kVerdictIncompleteInput) && !c.numbers.unread.empty()) {
    d.verdict = VerdictKind::kIncomplete;
    add_unread_reasons(c);
    return;
  }
  if (c.on(Rule::kVerdictHealthyCompletion) && !c.completions.empty()) {
    d.verdict = VerdictKind::kHealthy;
    d.reasons.push_back({rule_name(Rule::kVerdictHealthyCompletion), "the run reports its completion",
                         to_evidence(*c.completions.back(), c.sources)});
    return;
  }
  std::string at = p.last_time.empty() ? "" : " at " + p.last_time;
  if (c.on(Rule::kVerdictHealthyFinalStep) && p.total && p.min_last_step && *p.min_last_step >= *p.total) {
    d.verdict = VerdictKind::kHealthy;
    d.reasons.push_back({rule_name(Rule::kVerdictHealthyFinalStep),
                         "reached the final step " + fmt_step(*p.total) + "/" + fmt_step(*p.total) + " on " +
                             (p.ranks > 1 ? "all " : "") + ranks_phrase(p.ranks) + at,
                         {}});
    return;
  }
  if (c.on(Rule::kVerdictIncompleteShort) && p.last_step) {
    d.verdict = VerdictKind::kIncomplete;
    std::string step = p.min_last_step && *p.min_last_step != *p.last_step
                           ? "steps " + fmt_step(*p.min_last_step) + " to " + fmt_step(*p.last_step)
                           : "step " + fmt_step(*p.last_step);
    if (p.total) step += "/" + fmt_step(*p.total);
    d.reasons.push_back({rule_name(Rule::kVerdictIncompleteShort),
                         "no failure, but the log stops short of the run's end: last progress: " + step + at + " on " +
                             (p.ranks > 1 ? "all " : "") + ranks_phrase(p.ranks),
                         {}});
    add_warnings_reason(c);
    return;
  }
  if (c.on(Rule::kVerdictIncompleteLogLines) && c.events.empty() && !p.last_step) {
    const std::string lines = log_lines_phrase(c.numbers);
    if (!lines.empty()) {
      d.verdict = VerdictKind::kIncomplete;
      d.reasons.push_back({rule_name(Rule::kVerdictIncompleteLogLines),
                           "no failure in this excerpt that any entry names, but it reads as a job's log: " + lines,
                           {}});
      return;
    }
  }
  if (c.on(Rule::kVerdictUnknownEmpty) && c.events.empty() && !p.last_step) {
    d.verdict = VerdictKind::kUnknown;
    d.reasons.push_back(
        {rule_name(Rule::kVerdictUnknownEmpty),
         d.lines == 0 ? "the input is empty" : "nothing in the input reads as a training or serving log",
         {}});
    return;
  }
  d.verdict = VerdictKind::kIncomplete;
  if (add_warnings_reason(c)) return;
  d.reasons.push_back({"verdict.incomplete-excerpt", "the log shows neither a failure nor the run's end", {}});
}

}  // namespace ff::analyze::detail
