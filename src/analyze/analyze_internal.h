// analyze/analyze_internal.h — what the analyze module's files share and no other module
// needs: the incident model, node clocks, the context the rules share while one diagnosis
// is made (Ctx), and the steps diagnose() runs in order (analyze.cc), each in its own file.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/analyze.h"
#include "analyze/rules.h"

namespace ff::analyze::detail {

using record::Event;
using record::EventKind;

// The thresholds of the rules, in one place.
struct Tuning {
  // order.recovered: progress after an error on the same rank. With times on both lines,
  // progress at a later time of at least this many steps; without times (stdout may be
  // flushed after stderr's traceback), this many steps past the last step before it.
  double recovered_min_steps_timed = 2;
  double recovered_min_steps_untimed = 50;
  // rank.all-alike: failures this close in time on every rank are one, everywhere.
  int64_t all_alike_window_us = 2000000;
  size_t max_completion_evidence = 3;
  // rank.detail-line: how far below the decisive line a detail line of the same message
  // may be (DDP's unused-parameter message runs over five lines).
  uint64_t detail_span_lines = 12;
};

inline constexpr Tuning kTuning;

// Tiers of candidate root incidents, best first.
enum Tier {
  kHardware = 0,        // precedence hardware (Xid, ECC, fallen off the bus)
  kRecognised = 1,      // precedence root, on a rank's own lines
  kWeak = 2,            // precedence weak, or an unrecognised crash
  kSummary = 3,         // only the launcher's summary says it
  kCollateralOnly = 4,  // nothing but collateral (peer lost, timeouts)
  kNone = 9,
};

struct Incident {
  const Event* decisive = nullptr;  // the line quoted as "this is where it broke"
  const Event* hit = nullptr;       // the KB pattern event that names the entry (may be null)
  const kb::Entry* entry = nullptr;
  kb::Role role = kb::Role::kContext;
  std::string id;
  std::string title;
  std::string category;
  std::string exc_type;
  int tier = kNone;
  int rank = -1;
  std::string rank_source;
  std::string node;
  std::vector<const Event*> members;
  // A wrapper's hit (kb `wrapper: true`) whose failure this incident's specific cause
  // explains: in the incident's own lines, or a wrapper line nearby that was absorbed.
  const Event* wrapper = nullptr;
};

// Orders two events by time where both carry comparable times, else by position.
// Per-node clock offsets, estimated from the progress lines every rank prints (the same
// step is logged at about the same moment everywhere), so skewed node clocks do not
// reorder failures. Times are compared after subtracting the offset of the event's node.
struct Clocks {
  std::map<std::string, int64_t> node_offset;
  std::map<int, std::string> rank_node;
  int64_t aligned(const Event* e) const {
    if (node_offset.empty()) return e->time_us;
    const std::string* node = &e->node;
    if (node->empty()) {
      auto it = rank_node.find(e->rank);
      if (it == rank_node.end()) return e->time_us;
      node = &it->second;
    }
    auto off = node_offset.find(*node);
    return off == node_offset.end() ? e->time_us : e->time_us - off->second;
  }
};

struct IdentityMaps {
  std::map<int, std::string> rank_node;
  std::map<std::pair<std::string, int>, int> pid_rank;
  std::set<std::string> nodes;
};

struct Ctx;

// analyze.incidents.cc
// The file of the frame that raised the incident's exception: its traceback's (the
// exception event among its members), else the given line's.
inline const std::string& raising_frame(const Incident& inc, const Event& fallback) {
  for (const Event* m : inc.members)
    if (m->kind == EventKind::kException && !m->exc_frame.empty()) return m->exc_frame;
  return fallback.exc_frame;
}
inline bool entry_is_failure(const kb::Entry* e) { return e && (e->severity == "fatal" || e->severity == "error"); }
std::vector<const Incident*> incidents_view(const std::vector<Incident>& incidents);
void build_incidents(Ctx& c);
void name_incidents(Ctx& c);
void absorb_wrappers(Ctx& c);
void name_hang_at_exit(Ctx& c);
void drop_control_noise(Ctx& c);
void mark_recovered(Ctx& c);
void choose_primary(Ctx& c);

// analyze.clocks.cc
bool earlier(const Event* a, const Event* b, const Clocks& clocks);
Clocks estimate_clocks(const std::vector<SourceSummary>& sources, const JobNumbers& numbers);
std::string format_time(int64_t us, record::Clock clock);
std::string iso_time(int64_t us, record::Clock clock, bool subsecond);

// analyze.findings.cc
Evidence to_evidence(const Event& e, const std::vector<SourceSummary>& sources);
Evidence progress_evidence(const JobNumbers& numbers, int rank, const metrics::Point& pt,
                           const std::vector<SourceSummary>& sources);
void fill_primary(Ctx& c);
void group_collateral(Ctx& c);
void list_hypotheses(Ctx& c);
void list_symptoms(Ctx& c);
void build_timeline(Ctx& c);

// analyze.rank.cc
const IdentityMaps& identity_maps(Ctx& c);
void attribute_rank(Ctx& c);

// analyze.hang.cc
Hang analyse_hang(const std::vector<Event>& events, const std::vector<const Incident*>& incidents,
                  const std::vector<const Event*>& launcher_failures, const std::vector<SourceSummary>& sources);
void add_last_progress(Hang& h, const JobNumbers& numbers, const std::vector<SourceSummary>& sources);

// analyze.verdict.cc
void read_numbers(Ctx& c);
void read_progress(Ctx& c);
void decide_verdict(Ctx& c);

// Everything the rules share while one diagnosis is made.
struct Ctx {
  Ctx(const std::vector<Event>& ev, const std::vector<SourceSummary>& src, const kb::KnowledgeBase& k,
      const JobNumbers& n, const RuleSwitches& r, Diagnosis& out)
      : events(ev), sources(src), kb(k), numbers(n), rules(r), d(out) {}

  const std::vector<Event>& events;
  const std::vector<SourceSummary>& sources;
  const kb::KnowledgeBase& kb;
  const JobNumbers& numbers;
  const RuleSwitches& rules;
  Diagnosis& d;

  std::vector<Incident> incidents;
  std::vector<const Event*> launcher_failures;
  std::vector<const Event*> completions;
  Clocks clocks;
  const Incident* primary = nullptr;
  // The primary's rank and node, as the attribution rules leave them.
  int rank = -1;
  RankSource rank_how = RankSource::kNone;
  std::string rank_source;
  std::string node, node_source;
  std::optional<Hang> hang;
  std::optional<IdentityMaps> identity;  // identity_maps(), once

  bool on(Rule r) const { return rules.on(r); }
  void reason(Rule r, std::string text, const Event* e = nullptr) {
    Reason x{rule_name(r), std::move(text), std::nullopt};
    if (e) x.evidence = to_evidence(*e, sources);
    d.reasons.push_back(std::move(x));
  }
};

}  // namespace ff::analyze::detail
