// fleet/fleet.render.cc — a fleet Report as one self-contained HTML page (inline CSS and
// SVG, no script, nothing fetched), as Markdown for a review's notes, and as JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/strings.h"
#include "fleet/fleet.h"

namespace ff::fleet {

namespace {

using nlohmann::ordered_json;

std::string h(std::string_view s) {
  std::string out;
  for (char c : sanitize_utf8(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Markdown table cell: pipes and line breaks cannot end the cell; backticks are kept out of code.
std::string md(std::string_view s) {
  std::string out;
  for (char c : sanitize_utf8(s)) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else if (c == '<')
      out += "&lt;";
    else if (c == '*' || c == '_' || c == '`' || c == '[' || c == ']')
      out += std::string("\\") + c;
    else
      out += c;
  }
  return out;
}

std::string period_text(const Period& p) {
  if (p.from <= 0 && p.to == INT64_MAX) return "All jobs";
  const std::string from = p.from <= 0 ? "the start" : day_text(p.from);
  const std::string to = p.to == INT64_MAX ? "now" : day_text(p.to - 1);
  return from + " to " + to;
}

std::string hours(double v) { return v >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.1f}", v); }

std::string pct(int64_t part, int64_t whole) {
  return whole ? fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole)) : "-";
}

// "+3", "-2", "0"; with the ratio when both are known.
std::string change(int64_t now, int64_t before) {
  const int64_t d = now - before;
  std::string s = d > 0 ? fmt::format("+{}", d) : fmt::format("{}", d);
  if (before > 0 && now > 0) s += fmt::format(" (x{:.1f})", static_cast<double>(now) / static_cast<double>(before));
  if (before == 0 && now > 0) s += " (new)";
  if (now == 0 && before > 0) s += " (gone)";
  return s;
}

template <typename Map>
std::vector<std::pair<std::string, int64_t>> most_first(const Map& m) {
  std::vector<std::pair<std::string, int64_t>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

// The rows of the change table: every category or entry of either period, largest move first.
std::vector<std::tuple<std::string, int64_t, int64_t>> changes(const std::map<std::string, int64_t>& now,
                                                               const std::map<std::string, int64_t>& before) {
  std::map<std::string, std::pair<int64_t, int64_t>> both;
  for (const auto& [k, v] : now) both[k].first = v;
  for (const auto& [k, v] : before) both[k].second = v;
  std::vector<std::tuple<std::string, int64_t, int64_t>> rows;
  for (const auto& [k, p] : both) rows.emplace_back(k, p.first, p.second);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::llabs(std::get<1>(a) - std::get<2>(a)) > std::llabs(std::get<1>(b) - std::get<2>(b));
  });
  return rows;
}

// Repeated hardware findings: nodes with two or more, most first.
std::vector<std::pair<std::string, const NodeFindings*>> repeat_nodes(const Report& r) {
  std::vector<std::pair<std::string, const NodeFindings*>> v;
  for (const auto& [n, f] : r.nodes) {
    if (f.hardware >= 2) v.emplace_back(n, &f);
  }
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second->hardware > b.second->hardware; });
  return v;
}

const char* const kCss = R"css(
:root{--bg:#fff;--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--card:#f6f8fa;--bad:#cf222e;--hw:#cf222e;--sw:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#8d96a0;--line:#30363d;--card:#161b22;
--bad:#ff7b72;--hw:#ff7b72;--sw:#58a6ff}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:64rem;padding:1rem;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;overflow-wrap:anywhere}
h1{font-size:1.35rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.6rem 0 .4rem;border-bottom:1px solid var(--line)}
.muted{color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(9rem,1fr));gap:.6rem;margin:.8rem 0}
.card{background:var(--card);border:1px solid var(--line);border-radius:.3rem;padding:.5rem .7rem}
.card b{display:block;font-size:1.3rem}
code{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
table{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}
th,td{text-align:left;padding:.25rem .6rem .25rem 0;border-bottom:1px solid var(--line);vertical-align:top;
overflow-wrap:normal}th{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}
td code{white-space:nowrap}
svg{width:100%;height:auto;display:block}
svg text{fill:var(--muted);font:11px system-ui,sans-serif}svg .axis{stroke:var(--line)}
.legend{display:flex;flex-wrap:wrap;gap:.3rem .9rem;font-size:.85rem;margin:.3rem 0}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.1rem;border-radius:2px}
@media print{body{max-width:none}}
)css";

// One colour per category, stable across reports (the public category list's order).
const char* colour_of(std::string_view category) {
  static constexpr std::pair<std::string_view, const char*> kColours[] = {
      {"hardware", "#cf222e"},   {"gpu-memory", "#8250df"},    {"host-memory", "#bf3989"},
      {"numerical", "#bc4c00"},  {"communication", "#0969da"}, {"cuda-runtime", "#9a6700"},
      {"checkpoint", "#1a7f37"}, {"configuration", "#57606a"}, {"data-pipeline", "#0550ae"},
      {"launcher", "#6e7781"},   {"storage", "#953800"},       {"compilation", "#116329"},
      {"model-code", "#a475f9"}, {"hang", "#d4a72c"}};
  for (const auto& [c, col] : kColours) {
    if (c == category) return col;
  }
  return "#8c959f";
}

// Failures per day (or per week past 120 days), stacked by category, as an inline SVG.
std::string chart(const Report& r, std::string& legend) {
  if (r.per_day.empty()) return {};
  const int64_t first = r.per_day.begin()->first, last = r.per_day.rbegin()->first;
  const int64_t step = (last - first) > 120 ? 7 : 1;
  std::map<int64_t, std::map<std::string, int64_t>> bins;
  std::map<std::string, int64_t> totals;
  for (const auto& [day, cats] : r.per_day) {
    for (const auto& [c, n] : cats) {
      bins[first + (day - first) / step * step][c] += n;
      totals[c] += n;
    }
  }
  const int64_t nbins = (last - first) / step + 1;
  int64_t peak = 1;
  for (const auto& [b, cats] : bins) {
    int64_t s = 0;
    for (const auto& [c, n] : cats) s += n;
    peak = std::max(peak, s);
  }
  const double W = 640, H = 200, left = 34, bottom = 20, top = 8;
  const double bw = (W - left) / static_cast<double>(nbins);
  std::string svg = fmt::format("<svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"Failures per {} by category\">\n",
                                W, H, step == 1 ? "day" : "week");
  svg +=
      fmt::format("<line class=\"axis\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", left, H - bottom, W, H - bottom);
  svg += fmt::format("<text x=\"0\" y=\"{}\">{}</text><text x=\"0\" y=\"{}\">0</text>\n", top + 10, peak, H - bottom);
  const auto order = most_first(totals);
  for (const auto& [b, cats] : bins) {
    const double x = left + static_cast<double>((b - first) / step) * bw;
    double y = H - bottom;
    for (const auto& [c, total] : order) {
      auto it = cats.find(c);
      if (it == cats.end()) continue;
      const double hgt = (H - bottom - top) * static_cast<double>(it->second) / static_cast<double>(peak);
      y -= hgt;
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{} {}: {}</title></rect>\n",
          x, y, std::max(0.5, bw * 0.85), hgt, colour_of(c), day_text(b * 86400), h(c), it->second);
    }
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", left,
                     H - 4, day_text(first * 86400), W, H - 4, day_text(last * 86400));
  svg += "</svg>\n";
  legend = "<div class=\"legend\">";
  for (const auto& [c, n] : order)
    legend += fmt::format("<span><i style=\"background:{}\"></i>{} ({})</span>", colour_of(c), h(c), n);
  legend += "</div>\n";
  return svg;
}

}  // namespace

// Over 80 lines: the page is written top to bottom, one section after another.
std::string render_html(const Report& r, const RenderOptions& o) {
  const Tally& t = r.current;
  std::string out =
      "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:\">\n";
  out += fmt::format("<title>{} — firstfault</title>\n<style>{}</style></head><body>\n", h(o.title), kCss);
  out += fmt::format("<h1>{}</h1>\n<p class=\"muted\">{} · {} diagnoses read{}{}</p>\n", h(o.title),
                     h(period_text(r.period)), r.read, r.skipped ? fmt::format(", {} files skipped", r.skipped) : "",
                     o.now_unix ? " · made " + day_text(o.now_unix) + " by " + h(o.generator) : "");
  out += "<div class=\"cards\">";
  out += fmt::format("<div class=\"card\"><b>{}</b>jobs diagnosed</div>", t.jobs);
  out += fmt::format("<div class=\"card\"><b>{}</b>interruptions</div>", t.failures);
  out += fmt::format("<div class=\"card\"><b>{} / {}</b>hardware / software</div>", t.hardware, t.software);
  out += fmt::format("<div class=\"card\"><b>{}</b>GPU-hours lost</div>", hours(t.gpu_hours_lost));
  out += "</div>\n";

  out += "<h2>Interruptions over time</h2>\n";
  std::string legend;
  const std::string svg = chart(r, legend);
  out += svg.empty() ? "<p class=\"muted\">No interruption in the period.</p>\n" : svg + legend;

  out +=
      "<h2>By category</h2>\n<table><thead><tr><th>category</th><th>class</th><th>interruptions</th><th>share</th>"
      "<th>GPU-hours lost</th></tr></thead><tbody>\n";
  for (const auto& [c, n] : most_first(t.by_category)) {
    const auto g = t.gpu_hours_by_category.find(c);
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n", h(c),
        h(failure_class(c)), n, pct(n, t.failures), hours(g == t.gpu_hours_by_category.end() ? 0 : g->second));
  }
  out += "</tbody></table>\n";

  out +=
      "<h2>By entry</h2>\n<table><thead><tr><th>entry</th><th>title</th><th>category</th><th>interruptions</th>"
      "</tr></thead><tbody>\n";
  size_t shown = 0;
  for (const auto& [e, n] : most_first(t.by_entry)) {
    if (++shown > 50) break;
    const auto cat = t.entry_category.find(e);
    const auto title = t.entry_title.find(e);
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>\n", h(e),
                       h(title == t.entry_title.end() ? "" : title->second),
                       h(cat == t.entry_category.end() ? "" : cat->second), n);
  }
  out += "</tbody></table>\n";
  if (t.by_entry.size() > 50)
    out += fmt::format("<p class=\"muted\">{} entries more in the JSON.</p>\n", t.by_entry.size() - 50);

  out += "<h2>Nodes with repeated hardware findings</h2>\n";
  const auto nodes = repeat_nodes(r);
  if (nodes.empty()) {
    out += "<p class=\"muted\">No node had two hardware findings in the period.</p>\n";
  } else {
    out +=
        "<table><thead><tr><th>node</th><th>hardware</th><th>all failures</th><th>first</th><th>last</th>"
        "<th>entries</th></tr></thead><tbody>\n";
    for (size_t i = 0; i < nodes.size() && i < 100; ++i) {
      const auto& [n, f] = nodes[i];
      std::string entries;
      for (const auto& [e, k] : most_first(f->entries))
        entries += fmt::format("{}<code>{}</code> ×{}", entries.empty() ? "" : ", ", h(e), k);
      out += fmt::format(
          "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          h(n), f->hardware, f->failures, day_text(f->first_seen), day_text(f->last_seen), entries);
    }
    out += "</tbody></table>\n";
  }

  out += "<h2>Recurring failures</h2>\n";
  if (r.fingerprints.empty()) {
    out += "<p class=\"muted\">No failure signature came back in the period.</p>\n";
  } else {
    out +=
        "<table><thead><tr><th>signature</th><th>times</th><th>first seen</th><th>last seen</th><th>nodes</th>"
        "</tr></thead><tbody>\n";
    for (size_t i = 0; i < r.fingerprints.size() && i < 50; ++i) {
      const Fingerprint& f = r.fingerprints[i];
      std::string nodes_text;
      for (const auto& [n, k] : most_first(f.nodes))
        nodes_text += fmt::format("{}{} ×{}", nodes_text.empty() ? "" : ", ", h(n), k);
      out += fmt::format(
          "<tr><td><code>{}</code><br><span class=\"muted\">{}</span></td><td class=\"n\">{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td></tr>\n",
          h(f.entry), h(f.fingerprint == f.entry ? f.title : f.fingerprint), f.count, day_text(f.first_seen),
          day_text(f.last_seen), nodes_text);
    }
    out += "</tbody></table>\n";
  }

  if (r.has_compare) {
    const Tally& p = r.previous;
    out += fmt::format("<h2>What changed</h2>\n<p>{} against {}.</p>\n", h(period_text(r.period)),
                       h(period_text(r.compare)));
    out += "<table><thead><tr><th></th><th>now</th><th>before</th><th>change</th></tr></thead><tbody>\n";
    auto row = [&](const std::string& what, int64_t a, int64_t b) {
      out += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n", what, a, b,
                         change(a, b));
    };
    row("jobs diagnosed", t.jobs, p.jobs);
    row("interruptions", t.failures, p.failures);
    row("hardware", t.hardware, p.hardware);
    row("software", t.software, p.software);
    out += fmt::format("<tr><td>GPU-hours lost</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td></td></tr>\n",
                       hours(t.gpu_hours_lost), hours(p.gpu_hours_lost));
    for (const auto& [c, a, b] : changes(t.by_category, p.by_category)) row("<code>" + h(c) + "</code>", a, b);
    out += "</tbody></table>\n";
  }
  if (!r.problems.empty()) {
    out += "<h2>Skipped</h2>\n<ul>\n";
    for (const auto& p : r.problems) out += "<li><code>" + h(p) + "</code></li>\n";
    out += "</ul>\n";
  }
  out += "</body></html>\n";
  return out;
}

std::string render_markdown(const Report& r, const RenderOptions& o) {
  const Tally& t = r.current;
  std::string out = fmt::format(
      "# {}\n\n{}: {} jobs diagnosed, **{} interruptions** ({} hardware, {} software), "
      "{} GPU-hours lost.\n",
      md(o.title), period_text(r.period), t.jobs, t.failures, t.hardware, t.software, hours(t.gpu_hours_lost));
  out += "\n## By category\n\n| category | class | interruptions | share | GPU-hours lost |\n|---|---|--:|--:|--:|\n";
  for (const auto& [c, n] : most_first(t.by_category)) {
    const auto g = t.gpu_hours_by_category.find(c);
    out += fmt::format("| {} | {} | {} | {} | {} |\n", md(c), failure_class(c), n, pct(n, t.failures),
                       hours(g == t.gpu_hours_by_category.end() ? 0 : g->second));
  }
  out += "\n## Top entries\n\n| entry | category | interruptions |\n|---|---|--:|\n";
  size_t shown = 0;
  for (const auto& [e, n] : most_first(t.by_entry)) {
    if (++shown > 20) break;
    const auto cat = t.entry_category.find(e);
    out += fmt::format("| {} | {} | {} |\n", md(e), md(cat == t.entry_category.end() ? "" : cat->second), n);
  }
  const auto nodes = repeat_nodes(r);
  out += "\n## Nodes with repeated hardware findings\n\n";
  if (nodes.empty())
    out += "None.\n";
  else
    out += "| node | hardware | failures | first | last |\n|---|--:|--:|---|---|\n";
  for (size_t i = 0; i < nodes.size() && i < 30; ++i)
    out += fmt::format("| {} | {} | {} | {} | {} |\n", md(nodes[i].first), nodes[i].second->hardware,
                       nodes[i].second->failures, day_text(nodes[i].second->first_seen),
                       day_text(nodes[i].second->last_seen));
  out += "\n## Recurring failures\n\n";
  if (r.fingerprints.empty())
    out += "None.\n";
  else
    out += "| entry | signature | times | first seen | last seen |\n|---|---|--:|---|---|\n";
  for (size_t i = 0; i < r.fingerprints.size() && i < 20; ++i) {
    const Fingerprint& f = r.fingerprints[i];
    out += fmt::format("| {} | {} | {} | {} | {} |\n", md(f.entry), md(f.fingerprint == f.entry ? "" : f.fingerprint),
                       f.count, day_text(f.first_seen), day_text(f.last_seen));
  }
  if (r.has_compare) {
    const Tally& p = r.previous;
    out += fmt::format("\n## What changed\n\n{} against {}.\n\n| | now | before | change |\n|---|--:|--:|---|\n",
                       period_text(r.period), period_text(r.compare));
    out += fmt::format("| interruptions | {} | {} | {} |\n", t.failures, p.failures, change(t.failures, p.failures));
    out += fmt::format("| hardware | {} | {} | {} |\n", t.hardware, p.hardware, change(t.hardware, p.hardware));
    out += fmt::format("| software | {} | {} | {} |\n", t.software, p.software, change(t.software, p.software));
    for (const auto& [c, a, b] : changes(t.by_category, p.by_category))
      out += fmt::format("| {} | {} | {} | {} |\n", md(c), a, b, change(a, b));
  }
  if (r.skipped) out += fmt::format("\n{} files skipped (not firstfault diagnoses).\n", r.skipped);
  return out;
}

std::string render_json(const Report& r, const RenderOptions& o) {
  auto tally = [](const Tally& t) {
    ordered_json j;
    j["jobs"] = t.jobs;
    j["failures"] = t.failures;
    j["hardware"] = t.hardware;
    j["software"] = t.software;
    j["gpu_hours_lost"] = t.gpu_hours_lost;
    j["verdicts"] = t.verdicts;
    j["by_category"] = ordered_json::array();
    for (const auto& [c, n] : most_first(t.by_category)) {
      const auto g = t.gpu_hours_by_category.find(c);
      j["by_category"].push_back({{"category", c},
                                  {"class", failure_class(c)},
                                  {"failures", n},
                                  {"gpu_hours_lost", g == t.gpu_hours_by_category.end() ? 0.0 : g->second}});
    }
    j["by_entry"] = ordered_json::array();
    for (const auto& [e, n] : most_first(t.by_entry)) {
      const auto cat = t.entry_category.find(e);
      j["by_entry"].push_back(
          {{"entry", e}, {"category", cat == t.entry_category.end() ? "" : cat->second}, {"failures", n}});
    }
    return j;
  };
  auto period = [](const Period& p) {
    return ordered_json{{"from", p.from <= 0 ? ordered_json(nullptr) : ordered_json(day_text(p.from))},
                        {"to", p.to == INT64_MAX ? ordered_json(nullptr) : ordered_json(day_text(p.to))}};
  };
  ordered_json j;
  j["schema"] = "firstfault.fleet/1";
  j["generator"] = o.generator;
  j["period"] = period(r.period);
  j["read"] = r.read;
  j["skipped"] = r.skipped;
  j["outside_periods"] = r.outside;
  j["current"] = tally(r.current);
  if (r.has_compare) {
    j["compare_to"] = period(r.compare);
    j["previous"] = tally(r.previous);
  }
  j["per_day"] = ordered_json::array();
  for (const auto& [day, cats] : r.per_day)
    j["per_day"].push_back({{"day", day_text(day * 86400)}, {"by_category", cats}});
  j["repeat_hardware_nodes"] = ordered_json::array();
  for (const auto& [n, f] : repeat_nodes(r)) {
    j["repeat_hardware_nodes"].push_back({{"node", n},
                                          {"hardware", f->hardware},
                                          {"failures", f->failures},
                                          {"first_seen", day_text(f->first_seen)},
                                          {"last_seen", day_text(f->last_seen)},
                                          {"entries", f->entries}});
  }
  j["recurring"] = ordered_json::array();
  for (const Fingerprint& f : r.fingerprints) {
    j["recurring"].push_back({{"fingerprint", f.fingerprint},
                              {"entry", f.entry},
                              {"category", f.category},
                              {"count", f.count},
                              {"first_seen", day_text(f.first_seen)},
                              {"last_seen", day_text(f.last_seen)},
                              {"nodes", f.nodes}});
  }
  j["fingerprints_dropped"] = r.fingerprints_dropped;
  j["problems"] = r.problems;
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ff::fleet
