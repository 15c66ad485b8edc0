// analyze.rank.cc — step 3: which rank failed first, by the named rules tried in order (the launcher's
// table, hang stragglers, all ranks alike, the pid map, a single node, progress behind, the
// only rank named), and its node.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "analyze/analyze_internal.h"
#include "base/strings.h"
#include "template/template.h"

namespace ff::analyze::detail {

namespace {

std::string fmt_progress(double behind, double top) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "progress: the only rank whose last logged step (%g) is behind the others (%g)",
                behind, top);
  return buf;
}

// Step 3, rank attribution: an ordered table of rules, each of which may give (or, for
// all-alike, take back) the primary's rank with its source and reason.
struct RankAnswer {
  int rank;
  RankSource source;
  std::string reason;
};

using RankRuleFn = std::optional<RankAnswer> (*)(Ctx&);

std::optional<RankAnswer> rank_from_launcher(Ctx& c, bool same_text) {
  if (c.rank >= 0) return std::nullopt;
  // Texts that belong to the primary incident: its decisive line and every exception
  // line of its traceback (a chained traceback ends on a consequence).
  std::set<std::string> mine;
  for (const Event* m : c.primary->members) {
    mine.insert(template_::mask(m->text));
    for (const auto& x : m->exc_chain) mine.insert(template_::mask(x));
  }
  std::set<std::string> others;  // what the collateral incidents said
  for (const Incident& inc : c.incidents) {
    if (&inc != c.primary && inc.role == kb::Role::kCollateral && !inc.decisive->in_launcher_summary)
      others.insert(template_::mask(inc.decisive->text));
  }
  std::set<int> same, unexplained;
  for (const Event* f : c.launcher_failures) {
    if (f->rank < 0) continue;
    std::string t = template_::mask(f->text);
    if (!t.empty() && mine.count(t))
      same.insert(f->rank);
    else if (t.empty() || !others.count(t))
      unexplained.insert(f->rank);
  }
  if (same_text && same.size() == 1)
    return RankAnswer{*same.begin(), RankSource::kLauncherSameText, "launcher summary (same error text)"};
  if (!same_text && same.empty() && unexplained.size() == 1 && c.launcher_failures.size() > 1)
    // Every other failed rank reported a collateral error; the one left is the origin.
    return RankAnswer{*unexplained.begin(), RankSource::kLauncherExclusion,
                      "launcher summary (the only failed rank without a collateral error)"};
  return std::nullopt;
}

std::optional<RankAnswer> rank_launcher_same_text(Ctx& c) { return rank_from_launcher(c, true); }

std::optional<RankAnswer> rank_launcher_exclusion(Ctx& c) { return rank_from_launcher(c, false); }

// A hang: read the stuck collective from the watchdog lines, and find the rank that
// never entered it.
std::optional<RankAnswer> rank_hang_straggler(Ctx& c) {
  if (c.primary->category != "hang") return std::nullopt;
  c.hang = analyse_hang(c.events, incidents_view(c.incidents), c.launcher_failures, c.sources);
  if (c.hang->suspects.size() != 1) return std::nullopt;
  return RankAnswer{c.hang->suspects[0], RankSource::kHangStraggler, "straggler: " + c.hang->reasoning};
}

// All ranks alike: when every rank of the job reports the primary's failure at about
// the same time (a NaN loss seen by all data-parallel ranks), no rank initiated it.
std::optional<RankAnswer> rank_all_alike(Ctx& c) {
  if (c.rank < 0 || c.rank_how != RankSource::kPrefix) return std::nullopt;
  std::set<int> world, alike;
  for (const auto& s : c.sources) world.insert(s.ranks.begin(), s.ranks.end());
  for (const Incident& inc : c.incidents) {
    if (inc.id != c.primary->id || inc.rank < 0 || inc.decisive->in_launcher_summary) continue;
    bool close = inc.decisive->time_us == record::kNoTime || c.primary->decisive->time_us == record::kNoTime ||
                 std::llabs(inc.decisive->time_us - c.primary->decisive->time_us) <= kTuning.all_alike_window_us;
    if (close) alike.insert(inc.rank);
  }
  if (world.size() < 2 || alike != world) return std::nullopt;
  return RankAnswer{-1, RankSource::kAllAlike,
                    "all " + std::to_string(world.size()) + " ranks failed alike at the same time"};
}

}  // namespace

// Identity maps the log states (rank -> node, (node, pid) -> rank), plus torchrun's table;
// made once per diagnosis (a job of a million ranks has a million-entry map).
const IdentityMaps& identity_maps(Ctx& c) {
  if (c.identity) return *c.identity;
  IdentityMaps& m = c.identity.emplace();
  for (const auto& s : c.sources) {
    m.rank_node.insert(s.rank_node.begin(), s.rank_node.end());
    m.pid_rank.insert(s.pid_rank.begin(), s.pid_rank.end());
    for (const auto& [r, n] : s.rank_node) m.nodes.insert(n);
  }
  for (const Event* f : c.launcher_failures) {
    if (f->rank < 0) continue;
    if (!f->node.empty()) m.rank_node.emplace(f->rank, f->node), m.nodes.insert(f->node);
    if (!f->node.empty() && f->pid >= 0) m.pid_rank.emplace(std::make_pair(f->node, f->pid), f->rank);
  }
  return m;
}

namespace {

std::optional<RankAnswer> rank_pid_map(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || de.node.empty() || de.pid < 0) return std::nullopt;
  const IdentityMaps& m = identity_maps(c);
  auto it = m.pid_rank.find({de.node, de.pid});
  if (it == m.pid_rank.end()) return std::nullopt;
  return RankAnswer{it->second, RankSource::kPidMap,
                    "process id " + std::to_string(de.pid) + " on " + de.node + " (NCCL / launcher lines map it)"};
}

// An echo: the primary's line names no rank, but its error text comes back on a line that
// does: PyTorch's watchdog "[Rank 1] NCCL watchdog thread terminated with exception: CUDA
// error: ..." under the unprefixed traceback of the same error. Every line with a rank that
// holds the text must name the same one.
std::optional<RankAnswer> rank_echo(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike) return std::nullopt;
  std::string_view said = trim(de.text);
  if (!de.exc_type.empty() && starts_with(said, de.exc_type) && said.size() > de.exc_type.size() + 1 &&
      said[de.exc_type.size()] == ':')
    said = trim(said.substr(de.exc_type.size() + 1));
  constexpr size_t kMinEcho = 24;  // shorter texts ("CUDA error") echo by chance
  if (said.size() < kMinEcho) return std::nullopt;
  std::set<int> ranks;
  const Event* echo = nullptr;
  for (const Event& e : c.events) {
    if (e.rank < 0 || e.in_launcher_summary || &e == &de || e.text.size() <= said.size()) continue;
    if (e.text.find(said) == std::string::npos) continue;
    ranks.insert(e.rank);
    if (!echo) echo = &e;
  }
  if (ranks.size() != 1) return std::nullopt;
  return RankAnswer{*ranks.begin(), RankSource::kEcho,
                    "the error text comes back on line " + std::to_string(echo->line) + ", which names rank " +
                        std::to_string(*ranks.begin())};
}

// A detail line: the primary's message runs over several lines and one of them, matched by
// the same entry, names the rank it is about (DDP's "Parameters which did not receive grad
// for rank 3: ..." under "Expected to have finished reduction ..."). Lines of the same
// source within the message's span after the decisive line; they must name one rank.
std::optional<RankAnswer> rank_detail_line(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || c.primary->id.empty()) return std::nullopt;
  std::set<int> ranks;
  const Event* said = nullptr;
  for (const Event& e : c.events) {
    if (e.source != de.source || e.line < de.line || e.line > de.line + kTuning.detail_span_lines) continue;
    if (e.entry_id != c.primary->id || e.in_launcher_summary) continue;
    auto it = e.captures.find("rank");
    if (it == e.captures.end() || e.rank < 0) continue;
    ranks.insert(e.rank);
    if (!said) said = &e;
  }
  if (ranks.size() != 1) return std::nullopt;
  return RankAnswer{
      *ranks.begin(), RankSource::kDetailLine,
      "line " + std::to_string(said->line) + ", printed with the error, names rank " + std::to_string(*ranks.begin())};
}

std::optional<RankAnswer> rank_local_single_node(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || de.local_rank < 0) return std::nullopt;
  if (identity_maps(c).nodes.size() > 1) return std::nullopt;
  return RankAnswer{de.local_rank, RankSource::kLocalRankSingleNode, "local rank on a single-node job"};
}

// Progress: the failing rank usually stops logging steps first. When exactly one rank's
// last progress step is behind all the others, it is the likely origin.
std::optional<RankAnswer> rank_progress_behind(Ctx& c) {
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || !c.numbers.series) return std::nullopt;
  const auto& lp = c.numbers.series->last_progress();
  double top = -1e300;
  for (const auto& [r, p] : lp) top = std::max(top, p.step);
  std::vector<int> behind;
  for (const auto& [r, p] : lp) {
    if (r >= 0 && p.step < top) behind.push_back(r);
  }
  if (lp.size() < 2 || behind.size() != 1 || lp.count(-1)) return std::nullopt;
  return RankAnswer{behind[0], RankSource::kProgressBehind, fmt_progress(lp.at(behind[0]).step, top)};
}

// A line that a rank's own process wrote (it carries the process id: NCCL's host:pid:tid)
// in a log whose lines name a single rank, and no launcher table: the paste of one rank's
// output, and the line is that rank's.
std::optional<RankAnswer> rank_only_rank_named(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || de.pid < 0 || de.node.empty() ||
      !c.launcher_failures.empty())
    return std::nullopt;
  std::set<int> world;
  for (const auto& s : c.sources) world.insert(s.ranks.begin(), s.ranks.end());
  if (world.size() != 1 || *world.begin() < 0) return std::nullopt;
  return RankAnswer{
      *world.begin(), RankSource::kOnlyRankNamed,
      "the only rank the log names (the line is a process's own: " + de.node + ":" + std::to_string(de.pid) + ")"};
}

}  // namespace

void attribute_rank(Ctx& c) {
  if (!c.primary) return;
  static const std::pair<Rule, RankRuleFn> kRankRules[] = {
      {Rule::kRankLauncherSameText, rank_launcher_same_text},
      {Rule::kRankLauncherExclusion, rank_launcher_exclusion},
      {Rule::kRankHangStraggler, rank_hang_straggler},
      {Rule::kRankAllAlike, rank_all_alike},
      {Rule::kRankPidMap, rank_pid_map},
      {Rule::kRankEcho, rank_echo},
      {Rule::kRankDetailLine, rank_detail_line},
      {Rule::kRankLocalSingleNode, rank_local_single_node},
      {Rule::kRankProgressBehind, rank_progress_behind},
      {Rule::kRankOnlyRankNamed, rank_only_rank_named},
  };
  for (const auto& [rule, fn] : kRankRules) {
    if (!c.on(rule)) continue;
    if (auto a = fn(c)) {
      c.rank = a->rank;
      c.rank_how = a->source;
      c.rank_source = std::move(a->reason);
    }
  }
  c.node_source = c.node.empty() ? "" : "log line";
  if (c.on(Rule::kNodeFromRank) && c.node.empty() && c.rank >= 0) {
    const IdentityMaps& m = identity_maps(c);
    auto it = m.rank_node.find(c.rank);
    if (it != m.rank_node.end()) {
      c.node = it->second;
      c.node_source = "rank " + std::to_string(c.rank) + " runs on this node (stated by the log)";
    }
  }
}

}  // namespace ff::analyze::detail
