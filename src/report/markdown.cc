// report/markdown.cc — the Diagnosis as Markdown for a GitHub issue or a chat: the verdict
// as a heading, the decisive line in a code block, short tables, the fix as a list and the
// verify command in a code block. No HTML: text from a log is put in code spans or blocks
// (fenced with more backticks than it holds) or escaped, so it renders as written.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/escape.h"
#include "base/strings.h"
#include "report/format.h"
#include "report/report.h"

namespace ff::report {

using analyze::Diagnosis;

namespace {

using detail::ranks_text;

// One line of text from a log or the KB as Markdown inline text: the characters that make
// inline markup (emphasis, code, links, HTML, table cells, strike) are backslash-escaped;
// the text always follows a list marker or a label, so line-start markup cannot begin.
// Control characters are shown as escapes.
std::string md(std::string_view s) {
  const std::string clean = escape_for_terminal(s);
  std::string out;
  out.reserve(clean.size() + 8);
  for (char c : clean) {
    if (c != '\0' && std::strchr("\\`*_[]<>|~&", c)) out += '\\';
    out += c;
  }
  return out;
}

// The longest run of backticks in s: a fence needs one more.
size_t longest_backtick_run(std::string_view s) {
  size_t run = 0, longest = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// A code span holding `s`: fenced by one more backtick than the longest run inside.
std::string code(std::string_view s) {
  const std::string clean = escape_for_terminal(s);
  const std::string fence(longest_backtick_run(clean) + 1, '`');
  const bool pad = !clean.empty() && (clean.front() == '`' || clean.back() == '`');
  return fence + (pad ? " " : "") + clean + (pad ? " " : "") + fence;
}

// A fenced code block of several lines.
std::string block(std::string_view s, std::string_view lang = "") {
  const std::string clean = escape_for_terminal(s, true);
  const std::string fence(std::max<size_t>(3, longest_backtick_run(clean) + 1), '`');
  std::string body = clean;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return fence + std::string(lang) + "\n" + body + "\n" + fence + "\n";
}

// A cell of a table: one line, pipes escaped.
std::string cell(std::string_view s) {
  std::string out = md(s);
  std::replace(out.begin(), out.end(), '\n', ' ');
  return out;
}

}  // namespace

// Over 80 lines: the sections in the order they are read in an issue (verdict, first
// failure, decisive line, fix, verify, collateral, numbers), each a few lines.
std::string render_markdown(const Diagnosis& d, const MarkdownOptions& o) {
  std::string out;
  const std::string upper = detail::verdict_upper(d.verdict);
  if (d.primary) {
    const auto& p = *d.primary;
    out += fmt::format("### {}: {} ({})\n\n", upper, md(p.title), code(p.category));
    const std::string where = md(detail::where_text(p));
    out += fmt::format("**First failure:** {} (confidence {:.2f})", where, p.confidence);
    if (!p.evidence.empty()) {
      const auto& e = p.evidence[0];
      out += fmt::format(", {}\n\n{}\n", code(fmt::format("{}:{}", e.source, e.line)), block(e.text));
    } else {
      out += "\n\n";
    }
    if (p.user_frame)
      out += fmt::format("In your code: {}\n\n",
                         code(fmt::format("{}:{}{}", p.user_frame->file, p.user_frame->line,
                                          p.user_frame->function.empty() ? "" : " in " + p.user_frame->function)));
    if (p.hang) {
      const auto& h = *p.hang;
      out += fmt::format("**Stuck collective:** {}{}{}; {} timed out{}\n\n", h.op.empty() ? "a collective" : code(h.op),
                         h.seq >= 0 ? fmt::format(" SeqNum={}", h.seq) : "",
                         h.timeout_ms > 0 ? fmt::format(" (timeout {} s)", h.timeout_ms / 1000) : "",
                         detail::plural(h.timed_out.size(), "rank"),
                         h.suspects.empty() ? "" : "; suspect " + detail::ranks_label(h.suspects));
      if (!h.last.empty()) {
        out += fmt::format("Last progress, by rank ({} printed progress):\n\n| ranks | step | time | line | state |\n"
                           "|---|---|---|---|---|\n",
                           detail::plural(h.ranks_with_progress, "rank"));
        for (const auto& row : detail::hang_rows(h, 16)) {
          if (row.line == nullptr) {
            out += fmt::format("| {} more | | | | |\n", md(detail::ranks_text(row.ranks)));
            continue;
          }
          out += fmt::format("| {} | {:g} | {} | {} | {} |\n", md(detail::ranks_text(row.ranks)), row.step,
                             md(row.line->time), code(fmt::format("{}:{}", row.line->source, row.line->line)),
                             md(row.state));
        }
        out += "\n";
        if (h.last.front().state == "suspect") {
          const auto& l = h.last.front().line;
          out += fmt::format("Rank {}'s last progress line, {}:\n\n{}\n", h.last.front().rank,
                             code(fmt::format("{}:{}", l.source, l.line)), block(l.text));
        }
      }
    }
    if (!p.fix.empty()) {
      out += "**Fix**\n\n";
      if (p.fix_at)
        out += fmt::format("In this log: {} ({}).\n\n", md(p.fix_at->what),
                           code(fmt::format("{}:{}", p.fix_at->line.source, p.fix_at->line.line)));
      for (size_t i = 0; i < p.fix.size(); ++i) out += fmt::format("{}. {}\n", i + 1, md(p.fix[i]));
      out += "\n";
    }
    if (!p.verify.empty()) {
      const std::string where = detail::verify_where_text(p.verify_where);
      out += "**Verify**" + (where.empty() ? std::string() : " " + where) + "\n\n" + block(p.verify) + "\n";
      if (!p.verify_expect.empty()) out += fmt::format("Expect: {}\n\n", md(std::string(trim(p.verify_expect))));
    }
    if (!p.root_cause.empty()) out += fmt::format("**Root cause:** {}\n\n", md(std::string(trim(p.root_cause))));
    out += fmt::format("Details: {}\n\n", code("firstfault explain " + detail::id_word(p.id)));
  } else {
    out += fmt::format("### {}: no failure found in {} line{}\n\n", upper, d.lines, d.lines == 1 ? "" : "s");
  }
  if (!d.reasons.empty()) {
    out += "**Why this verdict**\n\n";
    for (const auto& r : d.reasons) {
      out += fmt::format("- {}", md(r.text));
      if (r.evidence) out += fmt::format(" ({})", code(fmt::format("{}:{}", r.evidence->source, r.evidence->line)));
      out += "\n";
    }
    out += "\n";
  }
  if (!d.collateral.empty()) {
    out += "**Collateral** (explained by the first failure)\n\n| entry | ranks | count |\n|---|---|---|\n";
    size_t shown = 0;
    for (const auto& c : d.collateral) {
      if (shown++ >= o.max_rows) {
        out += fmt::format("| … {} more | | |\n", d.collateral.size() - o.max_rows);
        break;
      }
      out += fmt::format("| {} | {} | {} |\n", cell(c.title), c.ranks.empty() ? "-" : ranks_text(c.ranks), c.count);
    }
    out += "\n";
  }
  if (!d.hypotheses.empty()) {
    out += "**Other candidates**\n\n";
    for (const auto& h : d.hypotheses) {
      out += fmt::format("- {} ({}){}\n", md(h.title), code(h.category),
                         h.separate_by.empty() ? "" : ": " + md(h.separate_by));
    }
    out += "\n";
  }
  if (!d.verdicts.empty()) {
    out += "**Numbers**\n\n";
    for (const auto& v : d.verdicts) out += fmt::format("- {}\n", md(v.summary));
    out += "\n";
  }
  if (d.timeline.size() > 1) {
    out += "**Timeline**\n\n| time | role | ranks | event |\n|---|---|---|---|\n";
    size_t shown = 0;
    for (const auto& t : d.timeline) {
      if (shown++ >= o.max_rows) break;
      out += fmt::format("| {} | {} | {} | {} |\n", t.time.empty() ? "-" : cell(t.time), cell(t.role),
                         t.ranks.empty() ? "-" : ranks_text(t.ranks), code(t.id));
    }
    out += "\n";
  }
  for (const auto& e : d.errors) out += fmt::format("> input problem: {}\n\n", md(e));
  out += fmt::format("_{} line{}, {} source{}; {}_\n", d.lines, d.lines == 1 ? "" : "s", d.sources.size(),
                     d.sources.size() == 1 ? "" : "s", md(o.generator));
  return out;
}

}  // namespace ff::report
