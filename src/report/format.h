// report/format.h — what the renderers (report.cc, html.cc, markdown.cc) say alike:
// rank lists, plurals, where a failure happened, an entry id as a shell word. Internal to
// the report module. The strings are not escaped: each renderer escapes for its medium.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "analyze/diagnosis.h"
#include "base/escape.h"

namespace ff::report::detail {

// "0-62, 64".
inline std::string ranks_text(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? fmt::format("{}-{}", ranks[i], ranks[j]) : std::to_string(ranks[i]);
    i = j + 1;
  }
  return out;
}

// "FAILED", "HEALTHY", ...: the verdict as a banner says it.
inline std::string verdict_upper(analyze::VerdictKind v) {
  std::string s = analyze::verdict_name(v);
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// "1 line", "2 lines".
inline std::string plural(uint64_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

// Where the first failure happened: "rank 3, node gpu-7, GPU 2, at 10:11:12"; when every
// rank failed alike, that (no single rank is to blame); else that the log does not say.
inline std::string where_text(const analyze::Finding& p) {
  std::string where;
  if (p.rank) where += fmt::format("rank {}", *p.rank);
  if (!p.node.empty()) where += (where.empty() ? "" : ", ") + ("node " + p.node);
  if (p.gpu) where += (where.empty() ? "" : ", ") + fmt::format("GPU {}", *p.gpu);
  if (where.empty())
    where = p.rank_how == analyze::RankSource::kAllAlike && !p.rank_source.empty()
                ? p.rank_source
                : "rank unknown (the log does not say)";
  if (!p.time.empty()) where += ", at " + p.time;
  return where;
}

// Whether the "rank from ..." line adds anything to where_text.
// Where a verify command runs (kb/README.md, "The page"), as the reports say it; empty when
// the entry does not say.
// What diagnose appends to the entry's verify code (app add_rerun_check): prose and a
// firstfault command, which wrap as prose and as a shell command; the code above it never.
inline constexpr std::string_view kRerunCheck = "Then check that its signature (";

inline std::string verify_where_text(const std::string& where) {
  if (where == "shell") return "in a shell on the node, after the fix:";
  if (where == "rerun") return "rerun a few steps of the job with the fix:";
  if (where == "in-process") return "add these lines to the training script:";
  return "";
}

inline bool says_rank_source(const analyze::Finding& p) {
  return !p.rank_source.empty() && p.rank_source != "log prefix" &&
         !(!p.rank && p.rank_how == analyze::RankSource::kAllAlike);
}

// An entry id as one shell word: ids are [a-z0-9._-] and need no quotes; others do.
inline std::string id_word(const std::string& id) {
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return shell_quote(id);
  }
  return id;
}

// A hang's table of each rank's last progress line (issue 33 item 4), as rows: each
// suspect alone, the other ranks grouped by last step and state in the order the analysis
// gives (lowest step first); at most max_rows rows, the last saying how many ranks are left.
struct HangRow {
  std::vector<int> ranks;
  double step = 0;
  std::string state;                        // "suspect", "timed out", ""
  const analyze::Evidence* line = nullptr;  // the first rank's line; null on the "more" row
};
inline std::vector<HangRow> hang_rows(const analyze::Hang& h, size_t max_rows) {
  std::vector<HangRow> rows;
  std::map<std::pair<double, std::string>, size_t> group;  // (step, state) -> row
  for (const auto& r : h.last) {
    if (r.state != "suspect") {
      auto [it, added] = group.try_emplace({r.step, r.state}, rows.size());
      if (!added) {
        rows[it->second].ranks.push_back(r.rank);
        continue;
      }
    }
    rows.push_back(HangRow{{r.rank}, r.step, r.state, &r.line});
  }
  for (auto& row : rows) std::sort(row.ranks.begin(), row.ranks.end());
  if (rows.size() > max_rows && max_rows > 0) {
    HangRow more;
    for (size_t i = max_rows - 1; i < rows.size(); ++i) more.ranks.insert(more.ranks.end(), rows[i].ranks.begin(), rows[i].ranks.end());
    std::sort(more.ranks.begin(), more.ranks.end());
    rows.resize(max_rows - 1);
    rows.push_back(std::move(more));
  }
  return rows;
}

// "rank 3", "ranks 0-2, 4".
inline std::string ranks_label(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + ranks_text(ranks);
}

}  // namespace ff::report::detail
