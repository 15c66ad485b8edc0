// Trend verdicts over metric series: transient vs terminal loss scale, bounded vs
// unbounded grad norm, the first non-finite value, a loss or grad norm that ends
// non-finite, every iteration skipped, loss spikes, per-rank step-time
// outliers, a stall at the end of the log, a throughput drop.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analyze/analyze.h"

namespace ff::analyze {

namespace {

using metrics::Point;
using metrics::Series;

Evidence point_evidence(const Point& p, const std::string& text, const std::vector<SourceSummary>& sources, int rank) {
  Evidence e;
  e.source = p.source < sources.size() ? sources[p.source].name : "";
  e.line = p.line;
  if (rank >= 0) e.rank = rank;
  e.text = text;
  return e;
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::vector<double> finite_values(const std::vector<Point>& pts, size_t from, size_t to) {
  std::vector<double> out;
  for (size_t i = from; i < to && i < pts.size(); ++i) {
    if (std::isfinite(pts[i].value)) out.push_back(pts[i].value);
  }
  return out;
}

std::string fmt_num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

// The series of one metric to judge: the rank with the most points (ranks usually agree
// on loss scale and grad norm, which are all-reduced).
const Series* main_series(const metrics::SeriesSet& set, metrics::MetricId id, int* rank_out) {
  const Series* best = nullptr;
  for (const auto& [key, s] : set.all()) {
    if (key.first != id) continue;
    if (!best || s.count > best->count) {
      best = &s;
      *rank_out = key.second;
    }
  }
  return best;
}

}  // namespace

// Long because each verdict (loss scale, non-finite, skipped, grad norm, spike, straggler,
// stall, throughput) is a short block over the same series and the same evidence helper, in the
// order the report lists them; FIXME: one function per verdict would read better.
std::vector<Verdict> judge_series(const metrics::SeriesSet& set, const metrics::Aliases& aliases,
                                  const std::vector<SourceSummary>& sources, int64_t last_time_us,
                                  record::Clock last_time_clock) {
  std::vector<Verdict> out;
  if (set.empty()) return out;
  int rank = -1;

  // Loss scale: a few halvings that recover are normal; halving to the floor is not.
  if (const Series* s = main_series(set, aliases.id("loss_scale"), &rank); s && s->count >= 3 && s->has_finite) {
    const auto& pts = s->points;
    bool dropped = false, recovered = false;
    for (size_t i = 1; i < pts.size(); ++i) {
      if (pts[i].value < pts[i - 1].value)
        dropped = true;
      else if (dropped && pts[i].value > pts[i - 1].value)
        recovered = true;
    }
    dropped = dropped || s->min < s->first.value;
    Verdict v;
    v.id = "loss-scale";
    v.metric = "loss_scale";
    if (rank >= 0) v.rank = rank;
    bool at_floor =
        s->last.value <= 1.0 || (s->last.value == s->min && s->max / std::max(s->min, 1e-30) >= 256 && !recovered);
    // Already at the floor when the log starts (an excerpt of a run past its collapse):
    // the scale cannot drop further, and the grad norm or loss is non-finite on every
    // step shown to the end, so every step overflows and is skipped.
    const Series* overflowing = nullptr;
    if (!dropped && s->last.value <= 1.0) {
      int r = -1;
      for (const char* m : {"grad_norm", "loss"}) {
        const Series* o = main_series(set, aliases.id(m), &r);
        if (o && o->has_nonfinite && !std::isfinite(o->last.value) && o->count >= 3 &&
            std::none_of(o->points.begin(), o->points.end(),
                         [&](const Point& p) { return p.step >= o->first_nonfinite.step && std::isfinite(p.value); })) {
          overflowing = o;
          break;
        }
      }
    }
    if (overflowing) {
      v.verdict = "terminal";
      v.step = overflowing->first_nonfinite.step;
      v.summary = fmt::format(
          "loss scale terminal: at its floor of {} with non-finite gradients on every step from {} "
          "to {}, the last logged",
          fmt_num(s->last.value), fmt_num(overflowing->first_nonfinite.step), fmt_num(overflowing->last.step));
      v.evidence.push_back(point_evidence(s->min_point, s->min_text, sources, rank));
    } else if (!dropped) {
      v.verdict = "stable";
      v.summary = fmt::format("loss scale stable at {}", fmt_num(s->last.value));
    } else if (at_floor) {
      v.verdict = "terminal";
      v.step = s->min_point.step;
      v.summary = fmt::format("loss scale terminal: halved from {} to {} by step {} and never recovered",
                              fmt_num(s->max), fmt_num(s->min), fmt_num(s->min_point.step));
      v.evidence.push_back(point_evidence(s->min_point, s->min_text, sources, rank));
    } else {
      v.verdict = "transient";
      v.step = s->min_point.step;
      v.summary = fmt::format("loss scale transient: dipped to {} at step {} and recovered to {}", fmt_num(s->min),
                              fmt_num(s->min_point.step), fmt_num(s->last.value));
      v.evidence.push_back(point_evidence(s->min_point, s->min_text, sources, rank));
    }
    out.push_back(std::move(v));
  }

  // The first non-finite value of any metric, across ranks.
  {
    const Series* first = nullptr;
    int first_rank = -1;
    metrics::MetricId first_id = metrics::kNoMetric;
    for (const auto& [key, s] : set.all()) {
      if (!s.has_nonfinite) continue;
      const Point& p = s.first_nonfinite;
      if (!first || p.step < first->first_nonfinite.step ||
          (p.step == first->first_nonfinite.step && p.line < first->first_nonfinite.line &&
           p.source == first->first_nonfinite.source)) {
        first = &s;
        first_rank = key.second;
        first_id = key.first;
      }
    }
    if (first) {
      Verdict v;
      v.id = "non-finite";
      v.verdict = "first";
      v.metric = aliases.name(first_id);
      v.step = first->first_nonfinite.step;
      if (first_rank >= 0) v.rank = first_rank;
      v.summary = fmt::format("first non-finite value: {} = {} at step {}{}", v.metric,
                              fmt_num(first->first_nonfinite.value), fmt_num(first->first_nonfinite.step),
                              first_rank >= 0 ? fmt::format(" on rank {}", first_rank) : "");
      v.evidence.push_back(point_evidence(first->first_nonfinite, first->nonfinite_text, sources, first_rank));
      out.push_back(std::move(v));
    }
  }

  // A loss or grad norm that ends non-finite: the last value logged is nan or inf (a
  // non-finite value followed by finite ones is an overflowing step that was skipped).
  // The evidence is where the final non-finite run began when the kept points show it.
  for (const char* name : {"loss", "grad_norm"}) {
    const metrics::MetricId id = aliases.id(name);
    const Series* end = nullptr;
    int end_rank = -1;
    for (const auto& [key, s] : set.all()) {
      if (key.first != id || !s.has_nonfinite || std::isfinite(s.last.value)) continue;
      if (!end || s.first_nonfinite.step < end->first_nonfinite.step) end = &s, end_rank = key.second;
    }
    if (!end) continue;
    const bool all_after = std::none_of(end->points.begin(), end->points.end(), [&](const Point& p) {
      return p.step >= end->first_nonfinite.step && std::isfinite(p.value);
    });
    Verdict v;
    v.id = "ends-non-finite";
    v.verdict = "terminal";
    v.metric = name;
    if (end_rank >= 0) v.rank = end_rank;
    const Point& at = all_after ? end->first_nonfinite : end->last;
    v.step = at.step;
    v.summary = fmt::format("{} non-finite from step {} to the last logged ({} = {})", name, fmt_num(at.step),
                            name, fmt_num(end->last.value));
    v.evidence.push_back(point_evidence(at, all_after ? end->nonfinite_text : std::string(), sources, end_rank));
    out.push_back(std::move(v));
    break;
  }

  // Megatron's "number of skipped iterations" (per logging interval) and "number of nan
  // iterations": every iteration of the last two intervals skipped, or nan iterations in
  // the last one, is a run that no longer trains.
  if (const Series* s = main_series(set, aliases.id("skipped"), &rank); s && s->points.size() >= 3) {
    const auto& pts = s->points;
    const size_t n = pts.size();
    auto all_skipped = [&](size_t i) {
      const double d = pts[i].step - pts[i - 1].step;
      return d > 0 && std::isfinite(pts[i].value) && pts[i].value >= d;
    };
    if (all_skipped(n - 1) && all_skipped(n - 2)) {
      size_t from = n - 2;
      while (from > 1 && all_skipped(from - 1)) --from;
      Verdict v;
      v.id = "skipped";
      v.verdict = "every-step";
      v.metric = "skipped";
      if (rank >= 0) v.rank = rank;
      v.step = pts[from - 1].step;
      v.summary = fmt::format("every iteration skipped from step {} to {}, the last logged", fmt_num(pts[from - 1].step),
                              fmt_num(pts[n - 1].step));
      // The points keep no text: the line is the evidence.
      v.evidence.push_back(point_evidence(pts[from], std::string(), sources, rank));
      out.push_back(std::move(v));
    }
  }
  if (const Series* s = main_series(set, aliases.id("nan_iterations"), &rank);
      s && std::isfinite(s->last.value) && s->last.value > 0) {
    Verdict v;
    v.id = "nan-iterations";
    v.verdict = "terminal";
    v.metric = "nan_iterations";
    if (rank >= 0) v.rank = rank;
    v.step = s->last.step;
    v.summary = fmt::format("{} iterations with a non-finite loss in the last logging interval (to step {})",
                            fmt_num(s->last.value), fmt_num(s->last.step));
    v.evidence.push_back(point_evidence(s->last, std::string(), sources, rank));
    out.push_back(std::move(v));
  }

  // Grad norm: bounded, or growing without bound (late values far above early ones).
  if (const Series* s = main_series(set, aliases.id("grad_norm"), &rank); s && s->points.size() >= 8) {
    const auto& pts = s->points;
    size_t n = pts.size(), fifth = std::max<size_t>(1, n / 5);
    double early = median(finite_values(pts, 0, fifth)), late = median(finite_values(pts, n - fifth, n));
    Verdict v;
    v.id = "grad-norm";
    v.metric = "grad_norm";
    if (rank >= 0) v.rank = rank;
    bool ends_nonfinite = !std::isfinite(s->last.value);
    if ((std::isfinite(early) && std::isfinite(late) && early > 0 && late / early > 100) ||
        (ends_nonfinite && s->max / std::max(early, 1e-30) > 100)) {
      v.verdict = "unbounded";
      v.step = s->max_point.step;
      v.summary = fmt::format("grad norm unbounded: from ~{} early to {} (max at step {}){}", fmt_num(early),
                              fmt_num(ends_nonfinite ? s->last.value : late), fmt_num(s->max_point.step),
                              ends_nonfinite ? ", then non-finite" : "");
      v.evidence.push_back(point_evidence(s->max_point, s->max_text, sources, rank));
    } else {
      v.verdict = "bounded";
      v.summary = fmt::format("grad norm bounded (max {} at step {})", fmt_num(s->max), fmt_num(s->max_point.step));
    }
    out.push_back(std::move(v));
  }

  // Loss spike / divergence: a finite loss far above the typical loss before it.
  if (const Series* s = main_series(set, aliases.id("loss"), &rank); s && s->points.size() >= 10) {
    const auto& pts = s->points;
    double base = median(finite_values(pts, 0, pts.size() / 2));
    if (std::isfinite(base) && base > 0 && s->max > 10 * base) {
      Verdict v;
      v.id = "loss-spike";
      double late = median(finite_values(pts, pts.size() * 4 / 5, pts.size()));
      bool diverged = !std::isfinite(s->last.value) || (std::isfinite(late) && late > 10 * base);
      v.verdict = diverged ? "diverged" : "spike";
      v.metric = "loss";
      v.step = s->max_point.step;
      if (rank >= 0) v.rank = rank;
      v.summary = fmt::format("loss {}: {} at step {} against a typical {}", diverged ? "diverged" : "spiked",
                              fmt_num(s->max), fmt_num(s->max_point.step), fmt_num(base));
      v.evidence.push_back(point_evidence(s->max_point, s->max_text, sources, rank));
      out.push_back(std::move(v));
    }
  }

  // Per-rank step time: a rank much slower than the others is a straggler.
  if (metrics::MetricId st = aliases.id("step_time_ms"); st != metrics::kNoMetric) {
    std::vector<std::pair<int, double>> per_rank;
    for (const auto& [key, s] : set.all()) {
      if (key.first != st || key.second < 0 || s.points.size() < 3) continue;
      per_rank.emplace_back(key.second, median(finite_values(s.points, 0, s.points.size())));
    }
    if (per_rank.size() >= 4) {
      std::vector<double> meds;
      for (const auto& [r, m] : per_rank) meds.push_back(m);
      double typical = median(meds);
      for (const auto& [r, m] : per_rank) {
        if (std::isfinite(typical) && typical > 0 && m > 1.5 * typical) {
          Verdict v;
          v.id = "straggler";
          v.verdict = "slow-rank";
          v.metric = "step_time_ms";
          v.rank = r;
          v.summary = fmt::format("rank {} is a straggler: median step time {} ms against {} ms on the others", r,
                                  fmt_num(m), fmt_num(typical));
          out.push_back(std::move(v));
        }
      }
    }
  }

  // Stall: no progress line for many times the typical step interval before the log ends.
  if (last_time_us != record::kNoTime) {
    int64_t last_progress = INT64_MIN;
    std::vector<double> intervals;
    for (const auto& [r, p] : set.last_progress()) last_progress = std::max(last_progress, p.time_us);
    for (const auto& [key, s] : set.all()) {
      if (key.first != aliases.id("loss") && key.first != aliases.id("step_time_ms")) continue;
      for (size_t i = 1; i < s.points.size(); ++i) {
        if (s.points[i].time_us != INT64_MIN && s.points[i - 1].time_us != INT64_MIN &&
            s.points[i].step > s.points[i - 1].step)
          intervals.push_back(double(s.points[i].time_us - s.points[i - 1].time_us) /
                              (s.points[i].step - s.points[i - 1].step));
      }
    }
    double typical = median(intervals);
    (void)last_time_clock;
    if (last_progress != INT64_MIN && std::isfinite(typical) && typical > 0) {
      double gap = double(last_time_us - last_progress);
      if (gap > 20 * typical && gap > 60e6) {
        Verdict v;
        v.id = "stall";
        v.verdict = "stalled";
        v.metric = "step";
        v.summary = fmt::format(
            "no progress for {:.0f} s at the end of the log ({:.0f}x the typical step interval of {:.2f} s)", gap / 1e6,
            gap / typical, typical / 1e6);
        out.push_back(std::move(v));
      }
    }
  }

  // Throughput drop after a point.
  for (const char* name : {"tokens_per_s", "samples_per_s", "tflops", "it_per_s"}) {
    const Series* s = main_series(set, aliases.id(name), &rank);
    if (!s || s->points.size() < 10) continue;
    const auto& pts = s->points;
    double early = median(finite_values(pts, 0, pts.size() / 2)),
           late = median(finite_values(pts, pts.size() * 4 / 5, pts.size()));
    if (std::isfinite(early) && std::isfinite(late) && early > 0 && late < 0.6 * early) {
      // The first point of the low tail.
      double at = pts[pts.size() * 4 / 5].step;
      for (size_t i = pts.size() / 2; i < pts.size(); ++i) {
        if (pts[i].value < 0.6 * early) {
          at = pts[i].step;
          break;
        }
      }
      Verdict v;
      v.id = "throughput";
      v.verdict = "dropped";
      v.metric = name;
      v.step = at;
      if (rank >= 0) v.rank = rank;
      v.summary =
          fmt::format("{} dropped from ~{} to ~{} from step {}", name, fmt_num(early), fmt_num(late), fmt_num(at));
      out.push_back(std::move(v));
    }
    break;
  }
  return out;
}

}  // namespace ff::analyze
