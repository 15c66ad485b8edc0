// report/html.cc — the Diagnosis as one self-contained HTML page: inline CSS and SVG, no
// script and no external request, light and dark, printable, readable at phone width.
// Everything from a log, a file name or a KB file goes through escape_html.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <iterator>
#include <optional>
#include <regex>
#include <set>

#include "base/civil.h"
#include "base/escape.h"
#include "base/strings.h"
#include "report/format.h"
#include "report/report.h"

namespace ff::report {

using analyze::Diagnosis;
using analyze::Evidence;
using analyze::VerdictKind;

namespace {

using detail::ranks_text;

std::string h(std::string_view s) { return escape_html(s); }

const char* const kCss = R"css(
:root{--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--card:#f6f8fa;--bad:#cf222e;--ok:#1a7f37;--warn:#9a6700;
--root:#cf222e;--collateral:#8c959f;--symptom:#bf8700;--context:#0969da;--plot:#0969da;
--c0:#0969da;--c1:#bf3989;--c2:#1a7f37;--c3:#bc4c00;--c4:#8250df;--c5:#0a7d8c;--c6:#9a6700;--c7:#57606a}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--line:#30363d;--card:#161b22;
--bad:#ff7b72;--ok:#3fb950;--warn:#d29922;--root:#ff7b72;--collateral:#6e7681;--symptom:#d29922;--context:#58a6ff;--plot:#58a6ff;
--c0:#58a6ff;--c1:#f778ba;--c2:#3fb950;--c3:#f0883e;--c4:#bc8cff;--c5:#39c5cf;--c6:#d29922;--c7:#8b949e}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:60rem;padding:1rem;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;overflow-wrap:anywhere}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--line)}
.banner{border-left:.4rem solid var(--warn);background:var(--card);padding:.6rem .9rem;border-radius:.3rem}
.banner.failed,.banner.degraded{border-color:var(--bad)}.banner.healthy{border-color:var(--ok)}
.verdict{font-weight:700;letter-spacing:.05em}.failed .verdict,.degraded .verdict{color:var(--bad)}
.healthy .verdict{color:var(--ok)}.incomplete .verdict,.unknown .verdict{color:var(--warn)}
.muted{color:var(--muted)}
pre,code{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--card);border:1px solid var(--line);border-radius:.3rem;padding:.5rem .7rem;
white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0}
pre.decisive{border-left:.3rem solid var(--root)}
.frames li.user{font-weight:700}.frames li.user::after{content:"  \2190 your code";color:var(--bad)}
table{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}
th,td{text-align:left;padding:.25rem .6rem .25rem 0;border-bottom:1px solid var(--line);vertical-align:top;
overflow-wrap:normal}th{white-space:nowrap}td code{overflow-wrap:anywhere}
details summary{cursor:pointer;color:var(--muted)}
svg{width:100%;height:auto;display:block}
svg text{fill:var(--muted);font:11px system-ui,sans-serif}
svg .lane{stroke:var(--line)}svg .axis{stroke:var(--line)}
svg .root{fill:var(--root)}svg .collateral{fill:var(--collateral)}svg .symptom{fill:var(--symptom)}
svg .context{fill:var(--context)}svg .series{fill:none;stroke-width:1.6;stroke-linejoin:round}
svg .grid{stroke:var(--line);stroke-dasharray:2 3}svg .tick{stroke:var(--line)}
svg .series.c0{stroke:var(--c0)}svg .series.c1{stroke:var(--c1)}svg .series.c2{stroke:var(--c2)}svg .series.c3{stroke:var(--c3)}
svg .series.c4{stroke:var(--c4)}svg .series.c5{stroke:var(--c5)}svg .series.c6{stroke:var(--c6)}svg .series.c7{stroke:var(--c7)}
svg .pts.c0,.sw.c0{fill:var(--c0);background:var(--c0)}svg .pts.c1,.sw.c1{fill:var(--c1);background:var(--c1)}
svg .pts.c2,.sw.c2{fill:var(--c2);background:var(--c2)}svg .pts.c3,.sw.c3{fill:var(--c3);background:var(--c3)}
svg .pts.c4,.sw.c4{fill:var(--c4);background:var(--c4)}svg .pts.c5,.sw.c5{fill:var(--c5);background:var(--c5)}
svg .pts.c6,.sw.c6{fill:var(--c6);background:var(--c6)}svg .pts.c7,.sw.c7{fill:var(--c7);background:var(--c7)}
svg .pt{fill-opacity:0}svg .pt:hover{fill-opacity:1;stroke:var(--fg);stroke-width:1}
svg .mark{fill:var(--bad)}svg .markline{stroke:var(--bad);stroke-dasharray:3 3}
svg .floorline{stroke:var(--warn);stroke-width:1.2;stroke-dasharray:6 3}svg .floor text{fill:var(--warn)}
svg .nonfinite text{fill:var(--bad);font-weight:600}
.plots{display:block}.plot{margin:.4rem 0 1.4rem}
/* On a phone a plot keeps a readable size and scrolls inside its box, opened at its right
   end: the latest steps, where a run fails (a right-to-left box starts scrolled there). */
.plot-scroll{overflow-x:auto;direction:rtl}.plot-scroll svg{direction:ltr;min-width:34rem}
.plot h3{font-size:.95rem;margin:.2rem 0}
.legend{display:flex;flex-wrap:wrap;gap:.2rem 1.1rem;list-style:none;padding:0;margin:.2rem 0;font-size:13px}
.sw{display:inline-block;width:1.3em;height:.32em;margin-right:.4em;vertical-align:middle;border-radius:2px}
.sw.nf{background:var(--bad);width:.6em;height:.6em;border-radius:50%}
.timeline-box{overflow-x:auto}.timeline-box svg{min-width:34rem}
@media print{body{max-width:none}svg .pt{display:none}.plot-scroll,.timeline-box{overflow:visible}.plot-scroll svg,.timeline-box svg{min-width:0}figure{break-inside:avoid}details{display:block}details>*{display:block}.banner{border:1px solid #000}}
)css";

std::string evidence_ref(const Evidence& e) { return fmt::format("{}:{}", h(e.source), e.line); }

// A time as the log wrote it ("2026-11-30 10:20:56,373", "2026-11-30T10:20:56.373Z",
// "Nov 30 10:20:56", "10:20:56") as seconds: since 1970 when it has a date, since its
// midnight when not (`dated` says which); nullopt when it holds no time of day.
struct Instant {
  double seconds = 0;
  bool dated = false;
};
std::optional<Instant> instant_of(const std::string& text) {
  static const std::regex re(R"((?:(\d{4})-(\d\d)-(\d\d)[ T])?(\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?)");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return std::nullopt;
  auto num = [&](int i) { return std::stod(m[i].str()); };
  Instant t;
  t.seconds = num(4) * 3600 + num(5) * 60 + num(6);
  if (m[7].matched) t.seconds += std::stod("0." + m[7].str());
  if (m[1].matched) {
    t.dated = true;
    t.seconds += 86400.0 * static_cast<double>(days_from_civil(static_cast<int>(num(1)), static_cast<int>(num(2)),
                                                                 static_cast<int>(num(3))));
  }
  return t;
}

// A tick's label: the time of day, with milliseconds when the ticks are closer than a second.
std::string clock_label(double seconds, bool millis) {
  double day = std::fmod(seconds, 86400.0);
  if (day < 0) day += 86400.0;
  const auto whole = static_cast<int64_t>(std::floor(day + 1e-9));
  std::string out = fmt::format("{:02}:{:02}:{:02}", whole / 3600, whole / 60 % 60, whole % 60);
  if (millis) out += fmt::format(".{:03}", static_cast<int>(std::round((day - static_cast<double>(whole)) * 1000)) % 1000);
  return out;
}

// The timeline's x positions: by time when the events' times can be read and go forward
// in the timeline's order (an event without a time sits just after the last one with a
// time), else by order. Gives the axis's ticks (x, label) too.
struct TimelineX {
  std::vector<double> x;                                // per event, in [0, 1]
  std::vector<std::pair<double, std::string>> ticks;    // (x in [0, 1], label)
  bool by_time = false;
  bool some_times = false;  // by order although some events have times (they do not compare)
};
TimelineX timeline_x(const Diagnosis& d) {
  const size_t n = d.timeline.size();
  TimelineX out;
  std::vector<std::optional<Instant>> at(n);
  size_t timed = 0, dated = 0;
  for (size_t i = 0; i < n; ++i) {
    at[i] = instant_of(d.timeline[i].time);
    if (at[i]) ++timed, dated += at[i]->dated;
  }
  bool forward = timed >= 2 && (dated == 0 || dated == timed);
  double t0 = 0, t1 = 0, last = -1e300;
  for (size_t i = 0; i < n && forward; ++i) {
    if (!at[i]) continue;
    if (at[i]->seconds < last) forward = false;
    if (last == -1e300) t0 = at[i]->seconds;
    last = t1 = at[i]->seconds;
  }
  if (!forward || t1 <= t0) {
    out.some_times = timed > 0;
    for (size_t i = 0; i < n; ++i) out.x.push_back((static_cast<double>(i) + 0.5) / static_cast<double>(n));
    return out;
  }
  out.by_time = true;
  const double span = t1 - t0;
  // Events without a time follow the last one with a time, a little apart.
  double prev = t0;
  size_t since = 0;
  for (size_t i = 0; i < n; ++i) {
    if (at[i]) prev = at[i]->seconds, since = 0;
    else ++since;
    out.x.push_back(std::min(1.0, 0.04 + 0.92 * (prev - t0) / span + 0.02 * static_cast<double>(since)));
  }
  static constexpr double kSteps[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
                                      60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
  double step = kSteps[std::size(kSteps) - 1];
  for (double s : kSteps)
    if (span / s <= 5) { step = s; break; }
  for (double v = std::ceil(t0 / step) * step; v <= t1 + step * 1e-6; v += step)
    out.ticks.emplace_back(0.04 + 0.92 * (v - t0) / span, clock_label(v, step < 1));
  if (out.ticks.empty()) out.ticks.emplace_back(0.04, clock_label(t0, span < 5));
  return out;
}

// The timeline as lanes: one per rank (or per node when no rank is known, and one for the
// job as a whole: the launcher's lines). With many ranks, the ranks that stand out (the
// failing one, the suspects of a hang, ranks in an event of few ranks) keep their lanes
// and the rest share one. Events are placed in the timeline's order (its times are as the
// log wrote them, not always comparable), each mark titled with its time and text.
std::string timeline_svg(const Diagnosis& d) {
  if (d.timeline.empty()) return {};
  constexpr size_t kMaxLanes = 16;
  std::set<int> all;
  for (const auto& t : d.timeline) all.insert(t.ranks.begin(), t.ranks.end());
  std::set<int> keep;
  if (all.size() <= kMaxLanes) {
    keep = all;
  } else {
    if (d.primary && d.primary->rank) keep.insert(*d.primary->rank);
    if (d.primary && d.primary->hang) keep.insert(d.primary->hang->suspects.begin(), d.primary->hang->suspects.end());
    for (const auto& t : d.timeline) {
      if (t.ranks.size() <= 2)
        for (int r : t.ranks) keep.insert(r);
    }
    while (keep.size() > kMaxLanes - 1) keep.erase(std::prev(keep.end()));
  }
  const bool grouped = keep.size() < all.size();
  std::vector<std::string> lanes;
  std::map<int, size_t> lane_of;
  bool any_without_rank = false;
  for (const auto& t : d.timeline) any_without_rank |= t.ranks.empty();
  if (any_without_rank) lanes.push_back("job");
  for (int r : keep) {
    lane_of[r] = lanes.size();
    lanes.push_back(fmt::format("rank {}", r));
  }
  const size_t other_lane = lanes.size();
  if (grouped) lanes.push_back(fmt::format("{} other ranks", all.size() - keep.size()));

  const double left = 92, right = 12, top = 8, lane_h = 22, width = 640;
  const double height = top + lane_h * static_cast<double>(lanes.size()) + 26;
  const double span = width - left - right;
  const size_t n = d.timeline.size();
  const TimelineX tx = timeline_x(d);
  std::string svg = fmt::format(
      "<svg class=\"timeline\" data-axis=\"{}\" viewBox=\"0 0 {} {:.0f}\" role=\"img\" aria-label=\"timeline of {} events over {} "
      "lanes\">\n",
      tx.by_time ? "time" : "order", width, height, n, lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double y = top + lane_h * (static_cast<double>(i) + 0.5);
    svg += fmt::format(
        "<line class=\"lane\" x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\"/>"
        "<text x=\"4\" y=\"{:.1f}\">{}</text>\n",
        left, y, width - right, y, y + 4, h(lanes[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& t = d.timeline[i];
    const double x = left + span * tx.x[i];
    std::set<size_t> on;
    if (t.ranks.empty()) on.insert(0);
    for (int r : t.ranks) on.insert(lane_of.count(r) ? lane_of[r] : other_lane);
    const std::string where = t.source.empty() ? "" : fmt::format("{}:{}", t.source, t.line);
    const std::string title = h(fmt::format("{}{}\n{} {} x{}: {}", t.time.empty() ? "no time written" : t.time,
                                            where.empty() ? "" : " · " + where, t.role, t.id, t.count, t.text));
    for (size_t lane : on) {
      const double y = top + lane_h * (static_cast<double>(lane) + 0.5);
      svg += fmt::format("<circle class=\"ev {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"><title>{}</title></circle>\n",
                         h(t.role), x, y, t.role == "root" ? 7 : 5, title);
    }
  }
  const double axis_y = top + lane_h * static_cast<double>(lanes.size()) + 4;
  svg += fmt::format("<line class=\"axis\" x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\"/>", left, axis_y,
                     width - right, axis_y);
  if (tx.by_time) {
    for (const auto& [fx, label] : tx.ticks) {
      const double x = left + span * fx;
      svg += fmt::format(
          "<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/><text x=\"{0:.1f}\" "
          "y=\"{3:.1f}\" text-anchor=\"{5}\">{4}</text>",
          x, axis_y, axis_y + 4, axis_y + 16, h(label), fx > 0.9 ? "end" : "middle");
    }
  } else {
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\">first</text>", left, axis_y + 16);
    if (n > 1)
      svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">last (in order{})</text>", width - right,
                         axis_y + 16, tx.some_times ? "; the times written do not compare" : ": no times written");
  }
  svg += "\n</svg>\n";
  return svg;
}

bool scale_metric(const std::string& metric) { return metric.find("scale") != std::string::npos; }

std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  return fmt::format("{:.4g}", v);
}

// An axis tick's label: a whole number as written (step 10198, not 1.02e+04), else three
// significant digits (0.000488).
std::string tick_number(double v) {
  if (std::abs(v) < 1e7 && v == std::round(v)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

// A series' label: its rank, or what stands for a series with no rank (never "rank -1").
std::string rank_label(std::optional<int> rank) {
  if (!rank) return "all ranks";
  return *rank < 0 ? "no rank" : fmt::format("rank {}", *rank);
}

// The y axis of a plot: linear, or logarithmic (base 2 for a loss scale, whose values are
// powers of two; base 10 for a positive series spanning two decades or more, so that a
// spike to 5e+28 does not flatten everything before it).
struct Axis {
  int base = 0;  // 0: linear
  double lo = 0, hi = 1;
  double map(double v) const { return base == 0 ? v : std::log(v) / std::log(base); }
  std::vector<double> ticks() const {  // in mapped units
    std::vector<double> out;
    if (base != 0) {
      const double a = std::floor(lo), b = std::ceil(hi);
      const double stride = std::max(1.0, std::ceil((b - a) / 6));
      for (double k = a; k <= b + 1e-9; k += stride)
        if (k >= lo - 1e-9 && k <= hi + 1e-9) out.push_back(k);
      if (out.empty()) out = {lo, hi};
      return out;
    }
    const double raw = (hi - lo) / 4;
    const double mag = std::pow(10, std::floor(std::log10(raw)));
    const double step = raw / mag >= 5 ? 5 * mag : raw / mag >= 2 ? 2 * mag : mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push_back(v);
    return out;
  }
  std::string label(double mapped) const {
    if (base == 0) return tick_number(mapped);
    const double v = std::pow(base, mapped);
    if (base == 10 && std::abs(mapped - std::round(mapped)) < 1e-9 && std::abs(mapped) >= 4)
      return fmt::format("1e{}", static_cast<int>(std::round(mapped)));
    return tick_number(v);
  }
};

struct PlotLine {
  std::string label;
  std::vector<std::pair<double, double>> pts;  // (step, value), finite
};

// The lines a metric is drawn with: one per rank when several ranks have it (so a
// straggler stands out), else the one series kept; the first non-finite value seen.
struct PlotData {
  std::vector<PlotLine> lines;
  std::optional<std::pair<double, double>> non_finite;  // (step, value)
  std::string non_finite_of;
  // The value as text: "nan", "inf", or "non-finite" when the plotted points miss it.
  std::string non_finite_text() const {
    return non_finite && !std::isnan(non_finite->second) ? number(non_finite->second)
           : non_finite && seen_nan                       ? "nan"
                                                          : "non-finite";
  }
  bool seen_nan = false;
};

PlotData plot_data(const analyze::MetricSummary& m) {
  PlotData d;
  auto add = [&](const std::string& label, const std::vector<std::pair<double, double>>& raw) {
    PlotLine l{label, {}};
    for (const auto& [st, v] : raw) {
      if (!std::isfinite(st)) continue;
      if (!std::isfinite(v)) {
        d.seen_nan |= std::isnan(v);
        if (!d.non_finite || st < d.non_finite->first) {
          d.non_finite = std::make_pair(st, v);
          d.non_finite_of = label;
        }
        continue;
      }
      l.pts.emplace_back(st, v);
    }
    if (l.pts.size() >= 2) d.lines.push_back(std::move(l));
  };
  if (m.per_rank.size() >= 2) {
    for (const auto& rp : m.per_rank) add(rank_label(rp.rank), rp.points);
  }
  if (d.lines.size() < 2) {
    d.lines.clear();
    add(rank_label(m.points_rank), m.points);
  }
  return d;
}

// Whether every finite value drawn is the same: such a series says nothing as a line.
bool constant(const PlotData& d) {
  std::optional<double> first;
  for (const auto& l : d.lines)
    for (const auto& p : l.pts) {
      if (!first) first = p.second;
      if (p.second != *first) return false;
    }
  return true;
}

// One metric as a line chart over steps, the width of the page: gridlines with values on
// both axes, a line per rank in the legend's colours, every point titled with its rank,
// step and value (hover, or a screen reader), the steps where a verdict was read marked,
// the first non-finite value marked where it happened, and a loss scale's floor (the
// lowest value it reached) drawn as a line.
std::string plot_svg(const analyze::MetricSummary& m, const PlotData& data, const Axis& axis_in,
                     const std::vector<analyze::Verdict>& verdicts) {
  const auto& lines = data.lines;
  Axis ax = axis_in;
  double x0 = lines[0].pts[0].first, x1 = x0;
  for (const auto& l : lines)
    for (const auto& p : l.pts) x0 = std::min(x0, p.first), x1 = std::max(x1, p.first);
  if (data.non_finite) x1 = std::max(x1, data.non_finite->first);
  if (x1 == x0) x1 = x0 + 1;
  const double w = 720, hgt = 220, l = 62, r = 14, t = 12, b = 30;
  auto X = [&](double x) { return l + (w - l - r) * (x - x0) / (x1 - x0); };
  auto Y = [&](double v) { return t + (hgt - t - b) * (1 - (ax.map(v) - ax.lo) / (ax.hi - ax.lo)); };
  auto Ym = [&](double mapped) { return t + (hgt - t - b) * (1 - (mapped - ax.lo) / (ax.hi - ax.lo)); };
  std::string svg = fmt::format(
      "<svg class=\"plot-svg\" data-metric=\"{}\" data-lines=\"{}\" data-axis=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{} over steps\">\n",
      h(m.name), lines.size(), ax.base == 0 ? "linear" : fmt::format("log{}", ax.base), w, hgt, h(m.name));
  for (double k : ax.ticks()) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\"/><text x=\"{}\" y=\"{:.1f}\" "
        "text-anchor=\"end\">{}</text>\n",
        l, Ym(k), w - r, Ym(k), l - 6, Ym(k) + 4, h(ax.label(k)));
  }
  Axis xs{0, x0, x1};
  for (double s : xs.ticks()) {
    svg += fmt::format("<line class=\"tick\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/><text x=\"{0:.1f}\" "
                       "y=\"{3}\" text-anchor=\"{5}\">{4}</text>\n",
                       X(s), hgt - b, hgt - b + 4, hgt - b + 16, tick_number(s), X(s) > w - r - 30 ? "end" : "middle");
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">step</text>\n", w - r, hgt - 2);
  svg += fmt::format("<line class=\"axis\" x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>", l, t, hgt - b);
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", l, hgt - b, w - r, hgt - b);
  if (scale_metric(m.name)) {
    double floor_v = lines[0].pts[0].second, floor_step = lines[0].pts[0].first;
    for (const auto& ln : lines)
      for (const auto& p : ln.pts)
        if (p.second < floor_v) floor_v = p.second, floor_step = p.first;
    svg += fmt::format(
        "<g class=\"floor\"><line class=\"floorline\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>"
        "<text x=\"{2}\" y=\"{3:.1f}\" text-anchor=\"end\">floor {4}</text><title>the lowest {5}: {4}, first at step "
        "{6}</title></g>\n",
        l, Y(floor_v), w - r, Y(floor_v) - 4, number(floor_v), h(m.name), number(floor_step));
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string poly;
    for (const auto& [x, y] : lines[i].pts) poly += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    svg += fmt::format("<polyline class=\"series c{}\" points=\"{}\"><title>{}</title></polyline>\n", i % 8, poly,
                       h(lines[i].label));
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    svg += fmt::format("<g class=\"pts c{}\">", i % 8);
    for (const auto& [x, y] : lines[i].pts)
      svg += fmt::format("<circle class=\"pt\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\"><title>{} · step {}: {}</title></circle>",
                         X(x), Y(y), h(lines[i].label), number(x), number(y));
    svg += "</g>\n";
  }
  if (data.non_finite) {
    const double st = data.non_finite->first;
    svg += fmt::format(
        "<g class=\"nonfinite\"><line class=\"markline\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<path class=\"mark\" d=\"M{0:.1f} {1} l-6 -8 h12 z\" transform=\"translate(0 8)\"/>"
        "<text x=\"{3:.1f}\" y=\"{4}\" text-anchor=\"end\">{5} at step {6}</text><title>the first non-finite {7}: {5} "
        "at step {6} ({8})</title></g>\n",
        X(st), t, hgt - b, X(st) - 6, hgt - b - 6, data.non_finite_text(), number(st), h(m.name),
        h(data.non_finite_of));
  }
  const auto& pts = lines[0].pts;
  for (const auto& v : verdicts) {
    if (v.metric != m.name || !v.step || !std::isfinite(*v.step)) continue;
    const double sx = std::clamp(*v.step, x0, x1);
    auto near = std::min_element(pts.begin(), pts.end(), [&](const auto& a, const auto& c) {
      return std::abs(a.first - sx) < std::abs(c.first - sx);
    });
    svg += fmt::format("<line class=\"markline\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>", X(sx), t,
                       hgt - b);
    svg += fmt::format("<circle class=\"mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\"><title>step {}: {}</title></circle>\n",
                       X(sx), Y(near->second), number(sx), h(v.summary));
  }
  svg += "</svg>\n";
  return svg;
}

// The axis a metric is drawn on (see Axis).
Axis choose_axis(const analyze::MetricSummary& m, const PlotData& d) {
  double lo = 0, hi = 0;
  bool first = true, positive = true;
  for (const auto& l : d.lines)
    for (const auto& p : l.pts) {
      positive &= p.second > 0;
      lo = first ? p.second : std::min(lo, p.second), hi = first ? p.second : std::max(hi, p.second), first = false;
    }
  Axis a;
  if (positive && scale_metric(m.name)) a.base = 2;
  else if (positive && hi / lo >= 100) a.base = 10;
  a.lo = a.map(lo), a.hi = a.map(hi);
  if (a.base != 0) {  // whole powers at both ends when the span allows it
    if (a.hi - a.lo >= 1) a.lo = std::floor(a.lo), a.hi = std::ceil(a.hi);
  } else {
    const double pad = (a.hi - a.lo) * 0.05;
    a.lo -= pad, a.hi += pad;
    if (lo >= 0 && a.lo < 0) a.lo = 0;
  }
  if (a.hi == a.lo) a.hi = a.lo + 1;
  return a;
}

// The legend under a plot: a swatch in each line's colour and its label.
std::string legend_html(const PlotData& d) {
  std::string out = "<ul class=\"legend\">";
  for (size_t i = 0; i < d.lines.size(); ++i)
    out += fmt::format("<li><span class=\"sw c{}\" aria-hidden=\"true\"></span>{}</li>", i % 8, h(d.lines[i].label));
  if (d.non_finite) out += "<li><span class=\"sw nf\" aria-hidden=\"true\"></span>first non-finite value</li>";
  return out + "</ul>";
}

}  // namespace

// Over 80 lines: the page is written top to bottom in the order it shows (banner, first
// failure, fix and verify, collateral, timeline, numbers, inputs); each section is a few
// lines of markup reading the same Diagnosis, and splitting them would only pass it around.
std::string render_html(const Diagnosis& d, const HtmlOptions& o) {
  std::string out;
  const std::string verdict = analyze::verdict_name(d.verdict);
  const std::string title = d.primary ? d.primary->title : "no failure found";
  out +=
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\">\n";
  out += fmt::format("<title>{}: {} — firstfault</title>\n<style>{}</style></head><body>\n",
                     h(detail::verdict_upper(d.verdict)), h(title), kCss);
  // The banner: the verdict, the failure and where, the reasons.
  out += fmt::format("<header class=\"banner {}\"><div><span class=\"verdict\">{}</span>", h(verdict),
                     h(detail::verdict_upper(d.verdict)));
  if (d.primary) {
    const auto& p = *d.primary;
    out += fmt::format(" <span class=\"muted\">[{}]</span></div><h1>{}</h1>\n", h(p.category), h(p.title));
    out += fmt::format("<div>first failure: {} <span class=\"muted\">(confidence {:.2f})</span></div>\n",
                       h(detail::where_text(p)), p.confidence);
  } else {
    out += fmt::format("</div><h1>No failure found in {} line{}</h1>\n", d.lines, d.lines == 1 ? "" : "s");
  }
  if (!d.reasons.empty()) {
    out += "<ul class=\"reasons\">\n";
    for (const auto& r : d.reasons) {
      out += fmt::format("<li>{} <span class=\"muted\">({})</span>", h(r.text), h(r.rule));
      if (r.evidence) out += fmt::format("<br><code>{}</code> {}", evidence_ref(*r.evidence), h(r.evidence->text));
      out += "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "</header>\n";

  if (d.primary) {
    const auto& p = *d.primary;
    out += "<section id=\"failure\"><h2>The first failure</h2>\n";
    if (!p.evidence.empty()) {
      out += fmt::format("<div class=\"muted\">{}</div><pre class=\"decisive\">{}</pre>\n", evidence_ref(p.evidence[0]),
                         h(p.evidence[0].text));
    }
    if (detail::says_rank_source(p)) out += fmt::format("<p class=\"muted\">rank from {}</p>\n", h(p.rank_source));
    if (p.user_frame) {
      out += fmt::format("<p>in your code: <code>{}:{}</code>{}</p>\n", h(p.user_frame->file), p.user_frame->line,
                         p.user_frame->function.empty() ? "" : " in <code>" + h(p.user_frame->function) + "</code>");
    }
    if (p.hang) {
      const auto& hg = *p.hang;
      out += fmt::format(
          "<p>stuck collective: <code>{}</code>{}{}; {} rank{} timed out{}</p>\n",
          hg.op.empty() ? "a collective" : h(hg.op), hg.seq >= 0 ? fmt::format(" SeqNum={}", hg.seq) : "",
          hg.timeout_ms > 0 ? fmt::format(" (timeout {} s)", hg.timeout_ms / 1000) : "", hg.timed_out.size(),
          hg.timed_out.size() == 1 ? "" : "s", hg.suspects.empty() ? "" : "; suspect ranks " + ranks_text(hg.suspects));
      if (!hg.reasoning.empty()) out += fmt::format("<p class=\"muted\">{}</p>\n", h(hg.reasoning));
      if (!hg.last.empty()) {
        out += fmt::format(
            "<table class=\"hang\"><caption>Last progress, by rank ({} printed progress)</caption><thead><tr>"
            "<th>ranks</th><th>step</th><th>time</th><th>line</th><th>state</th></tr></thead><tbody>\n",
            h(detail::plural(hg.ranks_with_progress, "rank")));
        for (const auto& row : detail::hang_rows(hg, 16)) {
          if (row.line == nullptr) {
            out += fmt::format("<tr><td>{} more</td><td></td><td></td><td></td><td></td></tr>\n", h(ranks_text(row.ranks)));
            continue;
          }
          out += fmt::format("<tr><td>{}</td><td>{:g}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                             h(ranks_text(row.ranks)), row.step, h(row.line->time), evidence_ref(*row.line),
                             h(row.state));
        }
        out += "</tbody></table>\n";
        if (hg.last.front().state == "suspect") {
          const auto& l = hg.last.front().line;
          out += fmt::format("<div class=\"muted\">rank {}'s last progress line, {}</div><pre class=\"decisive\">{}</pre>\n",
                             hg.last.front().rank, evidence_ref(l), h(l.text));
        }
      }
    }
    if (!p.traceback.empty()) {
      out += fmt::format("<details open><summary>Traceback ({} frame{}{})</summary><ol class=\"frames\">\n",
                         p.traceback.size(), p.traceback.size() == 1 ? "" : "s",
                         p.traceback_dropped ? fmt::format(", {} more not kept", p.traceback_dropped) : "");
      for (const auto& f : p.traceback) {
        const bool user = p.user_frame && p.user_frame->file == f.file && p.user_frame->line == f.line;
        out += fmt::format("<li{}><code>{}:{}</code>{}</li>\n", user ? " class=\"user\"" : "", h(f.file), f.line,
                           f.function.empty() ? "" : " in <code>" + h(f.function) + "</code>");
      }
      out += "</ol></details>\n";
    }
    if (!p.context_before.empty()) {
      out += fmt::format("<details><summary>The {} lines before it</summary><pre class=\"context\">",
                         p.context_before.size());
      for (const auto& c : p.context_before) out += fmt::format("{:>6}  {}\n", c.line, h(c.text));
      out += "</pre></details>\n";
    }
    out += "</section>\n<section id=\"fix\"><h2>Fix</h2>\n";
    if (p.fix_at)
      out += fmt::format("<p>In this log: {} (<code>{}</code>).</p>\n", h(p.fix_at->what), evidence_ref(p.fix_at->line));
    out += "<ol>\n";
    for (const auto& step : p.fix) out += fmt::format("<li>{}</li>\n", h(step));
    out += "</ol>\n";
    if (!p.verify.empty()) {
      const std::string where = detail::verify_where_text(p.verify_where);
      out += "<h2>Verify</h2>\n";
      if (!where.empty()) out += fmt::format("<p class=\"muted\">{}</p>\n", h(where));
      out += fmt::format("<pre class=\"verify\">{}</pre>\n", h(p.verify));
      if (!p.verify_expect.empty()) out += fmt::format("<p>Expect: {}</p>\n", h(std::string(trim(p.verify_expect))));
    }
    if (!p.summary.empty()) out += fmt::format("<h2>What happened</h2>\n<p>{}</p>\n", h(p.summary));
    if (!p.root_cause.empty()) out += fmt::format("<h2>Root cause</h2>\n<p>{}</p>\n", h(p.root_cause));
    out += fmt::format("<p class=\"muted\">Encyclopedia: ");
    const std::string link = o.entry_link ? o.entry_link(p.id) : std::string();
    // _top: inside serve's frame the link opens the entry on the page, not in the frame.
    if (!link.empty()) out += fmt::format("<a href=\"{}\" target=\"_top\">{}</a>; ", h(link), h(p.id));
    out += fmt::format("<code>firstfault explain {}</code>", h(detail::id_word(p.id)));
    for (const auto& r : p.references) out += fmt::format("; <a href=\"{0}\">{0}</a>", h(r));
    out += "</p>\n</section>\n";
  }

  if (!d.collateral.empty()) {
    out +=
        "<section id=\"collateral\"><h2>Collateral</h2>\n<table><thead><tr><th>entry</th><th>ranks</th><th>count</th>"
        "<th>explained by</th><th>first</th></tr></thead><tbody>\n";
    for (const auto& c : d.collateral) {
      out += fmt::format(
          "<tr><td>{}<br><span class=\"muted\">{}</span></td><td>{}</td><td>{}</td><td>{}</td><td><code>{}"
          "</code></td></tr>\n",
          h(c.title), h(c.id), c.ranks.empty() ? "-" : h(ranks_text(c.ranks)), c.count, h(c.explained_by),
          evidence_ref(c.first));
    }
    out += "</tbody></table></section>\n";
  }
  if (d.timeline.size() > 0) {
    out += "<section id=\"timeline\"><h2>Timeline</h2>\n<div class=\"timeline-box\">" + timeline_svg(d) +
           "</div><p class=\"muted\">Marks placed by the times the log wrote where they can be compared, else in "
           "order; red: the root, grey: collateral, yellow: symptoms, blue: context. Hover a mark for its time and "
           "line.</p></section>\n";
  }
  std::string plots;
  std::vector<std::string> flat;
  for (const auto& m : d.series) {
    if (m.name == "epoch" || m.name == "step_total") continue;
    PlotData data = plot_data(m);
    // The first non-finite value as the analysis read it over every point, not only the
    // plotted ones: its step and rank.
    for (const auto& v : d.verdicts) {
      if (v.id != "non-finite" || v.metric != m.name || !v.step) continue;
      const bool same = data.non_finite && data.non_finite->first == *v.step;
      data.non_finite = std::make_pair(*v.step, same ? data.non_finite->second : std::nan(""));
      data.seen_nan &= same;
      data.non_finite_of = rank_label(v.rank);
    }
    if (data.lines.empty()) {
      if (data.non_finite) flat.push_back(fmt::format("{} {} at every step", m.name, data.non_finite_text()));
      continue;
    }
    if (constant(data) && !data.non_finite) {
      flat.push_back(fmt::format("{} {}", m.name, number(data.lines[0].pts[0].second)));
      continue;
    }
    const Axis axis = choose_axis(m, data);
    std::string plotted;
    if (data.lines.size() >= 2) {
      plotted = fmt::format(", a line per rank for {} of them", data.lines.size());
    } else if (m.points_rank && *m.points_rank >= 0) {
      plotted = fmt::format(", plotted for rank {}", *m.points_rank);
    }
    plots += fmt::format(
        "<figure class=\"plot\"><h3>{}{}</h3><div class=\"plot-scroll\">{}</div>{}<figcaption class=\"muted\">{} values on {} rank{}{}; "
        "min {}, max {}{}</figcaption></figure>\n",
        h(m.name),
        axis.base == 0 ? "" : fmt::format(" <span class=\"muted\">(log{} axis)</span>", axis.base),
        plot_svg(m, data, axis, d.verdicts), legend_html(data), m.count, m.ranks, m.ranks == 1 ? "" : "s", plotted,
        number(m.min), number(m.max),
        data.non_finite ? fmt::format("; first non-finite value ({}) at step {}", data.non_finite_text(),
                                      number(data.non_finite->first))
                        : "");
  }
  if (!flat.empty()) {
    std::string list;
    for (const auto& f : flat) list += (list.empty() ? "" : "; ") + f;
    plots += fmt::format("<p class=\"muted flat\">Not drawn, the same value throughout: {}.</p>\n", h(list));
  }
  if (!plots.empty() || !d.verdicts.empty()) {
    out += "<section id=\"numbers\"><h2>Numbers</h2>\n";
    if (!d.verdicts.empty()) {
      out += "<ul>\n";
      for (const auto& v : d.verdicts) out += fmt::format("<li>{}</li>\n", h(v.summary));
      out += "</ul>\n";
    }
    if (!plots.empty()) out += "<div class=\"plots\">\n" + plots + "</div>\n";
    out += "</section>\n";
  }
  if (!d.hypotheses.empty()) {
    out += "<section id=\"hypotheses\"><h2>Other candidates</h2>\n<ul>\n";
    for (const auto& hy : d.hypotheses) {
      out += fmt::format("<li><b>{}</b> <span class=\"muted\">[{}], confidence {:.2f}</span><br>{}", h(hy.title),
                         h(hy.category), hy.confidence, h(hy.why));
      if (!hy.separate_by.empty()) out += fmt::format("<br><i>What separates it:</i> {}", h(hy.separate_by));
      if (!hy.evidence.empty())
        out += fmt::format("<br><code>{}</code> {}", evidence_ref(hy.evidence[0]), h(hy.evidence[0].text));
      out += "</li>\n";
    }
    out += "</ul></section>\n";
  }
  if (!d.symptoms.empty()) {
    out += "<section id=\"symptoms\"><h2>Warnings and symptoms</h2>\n<ul>\n";
    for (const auto& s : d.symptoms) {
      out += fmt::format("<li>{} <span class=\"muted\">{}</span></li>\n", h(s.title),
                         s.evidence.empty() ? "" : evidence_ref(s.evidence[0]));
    }
    out += "</ul></section>\n";
  }
  out +=
      "<section id=\"inputs\"><h2>Inputs</h2>\n<table><thead><tr><th>source</th><th>lines</th><th>bytes</th>"
      "<th>read</th></tr></thead><tbody>\n";
  for (const auto& s : d.sources) {
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>\n", h(s.name), s.lines,
                       s.bytes, s.ok ? "yes" : "no: " + h(s.error));
  }
  out += "</tbody></table>\n";
  for (const auto& e : d.errors) out += fmt::format("<p class=\"muted\">input problem: {}</p>\n", h(e));
  out += fmt::format("<p class=\"muted\">{} lines read in {:.3f} s by {}.</p></section>\n</body></html>\n", d.lines,
                     d.seconds, h(o.generator));
  return out;
}

}  // namespace ff::report
