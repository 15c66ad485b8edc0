// report/html.cc — the Diagnosis as one self-contained HTML page: inline CSS and SVG, no
// script and no external request, light and dark, printable, readable at phone width.
// Everything from a log, a file name or a KB file goes through escape_html.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

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
--root:#cf222e;--collateral:#8c959f;--symptom:#bf8700;--context:#0969da;--plot:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--line:#30363d;--card:#161b22;
--bad:#ff7b72;--ok:#3fb950;--warn:#d29922;--root:#ff7b72;--collateral:#6e7681;--symptom:#d29922;--context:#58a6ff;--plot:#58a6ff}}
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
svg .context{fill:var(--context)}svg .series{fill:none;stroke:var(--plot);stroke-width:1.5}
svg .c1{stroke:#bf3989}svg .c2{stroke:#1a7f37}svg .c3{stroke:#9a6700}svg .c4{stroke:#8250df}
svg .c5{stroke:#0550ae}svg .c6{stroke:#bc4c00}svg .c7{stroke:#57606a}svg .mark{fill:var(--bad)}svg .markline{stroke:var(--bad);stroke-dasharray:3 3}
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(16rem,1fr));gap:.8rem}
.plot h3{font-size:.95rem;margin:.2rem 0}
@media print{body{max-width:none}details{display:block}details>*{display:block}.banner{border:1px solid #000}}
)css";

std::string evidence_ref(const Evidence& e) { return fmt::format("{}:{}", h(e.source), e.line); }

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
  std::string svg = fmt::format(
      "<svg class=\"timeline\" viewBox=\"0 0 {} {:.0f}\" role=\"img\" aria-label=\"timeline of {} events over {} "
      "lanes\">\n",
      width, height, n, lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    const double y = top + lane_h * (static_cast<double>(i) + 0.5);
    svg += fmt::format(
        "<line class=\"lane\" x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\"/>"
        "<text x=\"4\" y=\"{:.1f}\">{}</text>\n",
        left, y, width - right, y, y + 4, h(lanes[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    const auto& t = d.timeline[i];
    const double x = left + span * (static_cast<double>(i) + 0.5) / static_cast<double>(n);
    std::set<size_t> on;
    if (t.ranks.empty()) on.insert(0);
    for (int r : t.ranks) on.insert(lane_of.count(r) ? lane_of[r] : other_lane);
    const std::string title =
        h(fmt::format("{}{} {} x{}: {}", t.time.empty() ? "" : t.time + " ", t.role, t.id, t.count, t.text));
    for (size_t lane : on) {
      const double y = top + lane_h * (static_cast<double>(lane) + 0.5);
      svg += fmt::format("<circle class=\"ev {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\"><title>{}</title></circle>\n",
                         h(t.role), x, y, t.role == "root" ? 7 : 5, title);
    }
  }
  const double axis_y = top + lane_h * static_cast<double>(lanes.size()) + 4;
  svg += fmt::format("<line class=\"axis\" x1=\"{:.0f}\" y1=\"{:.1f}\" x2=\"{:.0f}\" y2=\"{:.1f}\"/>", left, axis_y,
                     width - right, axis_y);
  auto time_label = [&](size_t i) {
    return d.timeline[i].time.empty() ? fmt::format("event {}", i + 1) : d.timeline[i].time;
  };
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\">{}</text>", left, axis_y + 16, h(time_label(0)));
  if (n > 1)
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", width - right, axis_y + 16,
                       h(time_label(n - 1)));
  svg += "\n</svg>\n";
  return svg;
}

bool log_axis(const std::string& metric) { return metric.find("scale") != std::string::npos; }

std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  return fmt::format("{:.4g}", v);
}

// One metric as a line chart over steps (log2 axis for a loss scale): a line per rank when
// several ranks have it (so a straggler stands out), the steps where a verdict was read
// marked.
std::string plot_svg(const analyze::MetricSummary& m, const std::vector<analyze::Verdict>& verdicts) {
  const bool log2 = log_axis(m.name);
  struct Line {
    std::string label;
    std::vector<std::pair<double, double>> pts;
  };
  std::vector<Line> lines;
  auto add = [&](std::string label, const std::vector<std::pair<double, double>>& raw) {
    Line l{std::move(label), {}};
    for (const auto& [st, v] : raw) {
      if (!std::isfinite(st) || !std::isfinite(v) || (log2 && v <= 0)) continue;
      l.pts.emplace_back(st, log2 ? std::log2(v) : v);
    }
    if (l.pts.size() >= 2) lines.push_back(std::move(l));
  };
  if (m.per_rank.size() >= 2) {
    for (const auto& rp : m.per_rank) add(fmt::format("rank {}", rp.rank), rp.points);
  }
  if (lines.size() < 2) {
    lines.clear();
    add(m.points_rank ? fmt::format("rank {}", *m.points_rank) : "all ranks", m.points);
  }
  if (lines.empty()) return {};
  double x0 = lines[0].pts[0].first, x1 = x0, y0 = lines[0].pts[0].second, y1 = y0;
  for (const auto& l : lines) {
    for (const auto& [x, y] : l.pts) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double w = 320, hgt = 150, l = 46, r = 8, t = 8, b = 22;
  auto X = [&](double x) { return l + (w - l - r) * (x - x0) / (x1 - x0); };
  auto Y = [&](double y) { return t + (hgt - t - b) * (1 - (y - y0) / (y1 - y0)); };
  std::string svg = fmt::format(
      "<svg class=\"plot-svg\" data-metric=\"{}\" data-lines=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"{} over steps\">\n",
      h(m.name), lines.size(), w, hgt, h(m.name));
  auto ylab = [&](double y) { return log2 ? number(std::exp2(y)) : number(y); };
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", l, t, l, hgt - b);
  svg += fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", l, hgt - b, w - r, hgt - b);
  svg += fmt::format("<text x=\"2\" y=\"{:.0f}\">{}</text><text x=\"2\" y=\"{:.0f}\">{}</text>", t + 8, ylab(y1),
                     hgt - b, ylab(y0));
  svg += fmt::format("<text x=\"{}\" y=\"{}\">step {}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", l,
                     hgt - 6, number(x0), w - r, hgt - 6, number(x1));
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string poly;
    for (const auto& [x, y] : lines[i].pts) poly += fmt::format("{:.1f},{:.1f} ", X(x), Y(y));
    svg += fmt::format("<polyline class=\"series c{}\" points=\"{}\"><title>{}</title></polyline>\n", i % 8, poly,
                       h(lines[i].label));
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
    svg += fmt::format("<circle class=\"mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"><title>{}</title></circle>\n", X(sx),
                       Y(near->second), h(v.summary));
  }
  svg += "</svg>\n";
  return svg;
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
    out += "</section>\n<section id=\"fix\"><h2>Fix</h2>\n<ol>\n";
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
    if (!link.empty()) out += fmt::format("<a href=\"{}\">{}</a>; ", h(link), h(p.id));
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
    out += "<section id=\"timeline\"><h2>Timeline</h2>\n" + timeline_svg(d) +
           "<p class=\"muted\">Marks in the order the events happened; red: the root, grey: collateral, yellow: "
           "symptoms, blue: context. Hover a mark for its time and line.</p></section>\n";
  }
  std::string plots;
  for (const auto& m : d.series) {
    if (m.name == "epoch" || m.name == "step_total") continue;
    std::string svg = plot_svg(m, d.verdicts);
    if (svg.empty()) continue;
    std::string plotted;
    if (m.per_rank.size() >= 2) {
      std::vector<int> rs;
      for (const auto& rp : m.per_rank) rs.push_back(rp.rank);
      plotted = fmt::format(", a line per rank for {} of them ({})", rs.size(), ranks_text(rs));
    } else if (m.points_rank) {
      plotted = fmt::format(", plotted for rank {}", *m.points_rank);
    }
    plots += fmt::format(
        "<figure class=\"plot\"><h3>{}{}</h3>{}<figcaption class=\"muted\">{} values on {} rank{}{}; "
        "min {}, max {}</figcaption></figure>\n",
        h(m.name), log_axis(m.name) ? " (log2 axis)" : "", svg, m.count, m.ranks, m.ranks == 1 ? "" : "s", plotted,
        number(m.min), number(m.max));
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
