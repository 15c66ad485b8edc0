#include "analyze/analyze.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <optional>
#include <cstdio>
#include <map>
#include <set>

#include "base/strings.h"
#include "template/template.h"

namespace ff::analyze {

using record::Event;
using record::EventKind;

std::string guess_exception_category(const kb::KnowledgeBase& kb, const std::string& exc_type,
                                     const std::string& frame) {
  for (const auto& r : kb.frames) {
    if (!frame.empty() && frame.find(r.path) != std::string::npos) return r.category;
  }
  std::string_view last = exc_type;
  if (size_t dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
  for (const auto& r : kb.exceptions) {
    if (r.type == last) return r.category;
  }
  return kb.exception_default_category;
}

namespace {

// Exceptions that are the launcher's or the user's reaction, not a failure of their own
// (kb/formats/exceptions.yaml, `teardown`), by the type's last dotted component.
bool is_teardown_exception(const kb::KnowledgeBase& kb, std::string_view type) {
  std::string_view last = type.substr(type.rfind('.') == std::string_view::npos ? 0 : type.rfind('.') + 1);
  return std::find(kb.teardown_exceptions.begin(), kb.teardown_exceptions.end(), last) != kb.teardown_exceptions.end();
}

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
};
constexpr Tuning kTuning;

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
};

// Severity "warning"/"info" entries never fail a run on their own.
bool entry_is_failure(const kb::Entry* e) { return e && (e->severity == "fatal" || e->severity == "error"); }

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

bool earlier(const Event* a, const Event* b, const Clocks& clocks) {
  bool both_timed = a->time_us != record::kNoTime && b->time_us != record::kNoTime && a->clock == b->clock;
  int64_t ta = both_timed ? clocks.aligned(a) : 0, tb = both_timed ? clocks.aligned(b) : 0;
  if (both_timed && a->source != b->source && ta != tb) return ta < tb;
  if (both_timed && a->source == b->source && a->time_subsecond && b->time_subsecond && a->rank != b->rank && ta != tb) {
    // Different ranks interleaved in one file: their own sub-second times decide.
    return ta < tb;
  }
  if (a->source != b->source) {
    if (both_timed) return a->source < b->source;  // same time: keep input order
    return a->source < b->source;
  }
  return a->line < b->line;
}

std::string iso_time(int64_t us, record::Clock clock, bool subsecond);

Evidence to_evidence(const Event& e, const std::vector<SourceSummary>& sources) {
  Evidence ev;
  ev.source = e.source < sources.size() ? sources[e.source].name : "";
  ev.line = e.line;
  int rank = e.rank >= 0 ? e.rank : e.summary_rank;
  if (rank >= 0) ev.rank = rank;
  ev.node = e.node;
  ev.time = e.time_text;
  if (!e.time_text.empty()) ev.time_iso = iso_time(e.time_us, e.clock, e.time_subsecond);
  ev.text = e.text;
  return ev;
}

bool more_specific(const Event* a, const Event* b) {
  if (a->priority != b->priority) return a->priority > b->priority;
  if (a->match_len != b->match_len) return a->match_len > b->match_len;
  return a->entry_id < b->entry_id;
}

// The better of two KB hits for naming an incident: on one line the most specific; on
// different lines of a traceback, a root over a collateral, then the final exception.
// A hit whose pattern captures `exception` only says "an exception line" (kb/README.md,
// the capture vocabulary): any other hit names an incident better.
bool is_exception_line_hit(const Event* e) { return e->captures.count("exception") > 0; }

bool better_hit(const Event* a, const Event* b) {
  if (is_exception_line_hit(a) != is_exception_line_hit(b)) return is_exception_line_hit(b);
  if (a->line == b->line && a->source == b->source) return more_specific(a, b);
  auto role_rank = [](kb::Role r) {
    switch (r) {
      case kb::Role::kRoot: return 0;
      case kb::Role::kCollateral: return 1;
      case kb::Role::kSymptom: return 2;
      case kb::Role::kContext:
      case kb::Role::kCompletion: return 3;
    }
    return 3;
  };
  if (role_rank(a->role) != role_rank(b->role)) return role_rank(a->role) < role_rank(b->role);
  if (a->priority != b->priority) return a->priority > b->priority;
  // "During handling of the above exception, another exception occurred": the first
  // exception is the cause, the later ones its consequences.
  if (a->chained_cause != b->chained_cause) return a->chained_cause;
  if (a->final_exception != b->final_exception) return a->final_exception;
  if (a->exception_line != b->exception_line) return a->exception_line;
  if (a->match_len != b->match_len) return a->match_len > b->match_len;
  return a->entry_id < b->entry_id;
}

std::string normalise(std::string_view text) {
  // Digits and hex runs masked, so the same line on many ranks is one incident.
  std::string out;
  out.reserve(text.size());
  bool in_num = false;
  for (char c : text) {
    bool digit = c >= '0' && c <= '9';
    if (digit) {
      if (!in_num) out.push_back('#');
      in_num = true;
    } else {
      in_num = false;
      out.push_back(c);
    }
  }
  return out;
}

// Node clock offsets from progress lines: for each rank, the time it logged each step;
// a node's offset is the median, over its ranks and the steps they share with the
// reference node (the one with the most ranks), of the time difference. Offsets under
// half a second are ignored (logging jitter).
Clocks estimate_clocks(const std::vector<SourceSummary>& sources, const JobNumbers& numbers) {
  Clocks c;
  for (const auto& s : sources) c.rank_node.insert(s.rank_node.begin(), s.rank_node.end());
  if (!numbers.series || !numbers.aliases || c.rank_node.empty()) return c;
  // step -> time per rank, from the metric with the most points.
  std::map<int, std::map<double, int64_t>> times;
  for (const auto& [key, s] : numbers.series->all()) {
    if (key.second < 0) continue;
    auto& t = times[key.second];
    if (!t.empty()) continue;
    for (const auto& p : s.points) {
      if (p.time_us != INT64_MIN) t.emplace(p.step, p.time_us);
    }
  }
  std::map<std::string, std::vector<int>> node_ranks;
  for (const auto& [r, n] : c.rank_node) {
    if (times.count(r)) node_ranks[n].push_back(r);
  }
  if (node_ranks.size() < 2) return c;
  std::string ref;
  for (const auto& [n, rs] : node_ranks) {
    if (ref.empty() || rs.size() > node_ranks[ref].size()) ref = n;
  }
  // The reference clock: per step, the median time over the reference node's ranks.
  std::map<double, std::vector<int64_t>> ref_samples;
  for (int r : node_ranks[ref]) {
    for (const auto& [step, t] : times[r]) ref_samples[step].push_back(t);
  }
  std::map<double, int64_t> ref_time;
  for (auto& [step, v] : ref_samples) {
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    ref_time[step] = v[v.size() / 2];
  }
  for (const auto& [n, rs] : node_ranks) {
    if (n == ref) continue;
    std::vector<int64_t> deltas;
    for (int r : rs) {
      for (const auto& [step, t] : times[r]) {
        auto it = ref_time.find(step);
        if (it != ref_time.end()) deltas.push_back(t - it->second);
      }
    }
    if (deltas.size() < 3) continue;
    std::nth_element(deltas.begin(), deltas.begin() + static_cast<long>(deltas.size() / 2), deltas.end());
    int64_t off = deltas[deltas.size() / 2];
    if (off > 500000 || off < -500000) c.node_offset[n] = off;
  }
  return c;
}

std::string fmt_progress(double behind, double top) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "progress: the only rank whose last logged step (%g) is behind the others (%g)", behind,
                top);
  return buf;
}

std::vector<const Incident*> incidents_view(const std::vector<Incident>& incidents) {
  std::vector<const Incident*> v;
  for (const auto& i : incidents) v.push_back(&i);
  return v;
}

long long capture_int(const Event& e, const char* name) {
  auto it = e.captures.find(name);
  long long v = 0;
  if (it == e.captures.end()) return LLONG_MIN;
  std::string_view s = it->second;
  bool neg = !s.empty() && s[0] == '-';
  if (!parse_int(neg ? s.substr(1) : s, v)) return LLONG_MIN;
  return neg ? -v : v;
}

std::string format_time(int64_t us, record::Clock clock) {
  if (us == record::kNoTime) return {};
  int64_t secs = us / 1000000;
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) rem += 86400, --days;
  // civil_from_days (Howard Hinnant)
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  int64_t y = yoe + era * 400 + (m <= 2);
  char buf[48];
  int ms = static_cast<int>((us % 1000000 + 1000000) % 1000000 / 1000);
  if (clock == record::Clock::kWall)
    std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%03d", (long long)y, (long long)m,
                  (long long)d, (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60), ms);
  else if (clock == record::Clock::kWallNoYear)
    std::snprintf(buf, sizeof(buf), "%02lld-%02lld %02lld:%02lld:%02lld.%03d", (long long)m, (long long)d,
                  (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60), ms);
  else
    return {};
  return buf;
}

// ISO 8601 for a wall-clock time with its year (local time, as the log wrote it: logs do
// not say their zone), to the microsecond when the line had sub-second digits; empty
// otherwise (a glog time has no year; an elapsed time is no date).
std::string iso_time(int64_t us, record::Clock clock, bool subsecond) {
  if (us == record::kNoTime || clock != record::Clock::kWall) return {};
  std::string t = format_time(us, clock);  // "YYYY-MM-DD HH:MM:SS.mmm"
  if (t.size() < 19) return {};
  t = t.substr(0, 19);
  t[10] = 'T';
  if (subsecond) {
    char frac[16];
    std::snprintf(frac, sizeof(frac), ".%06d", static_cast<int>((us % 1000000 + 1000000) % 1000000));
    t += frac;
  }
  return t;
}

Hang analyse_hang(const std::vector<Event>& events, const std::vector<const Incident*>& incidents,
                  const std::vector<const Event*>& launcher_failures, const std::vector<SourceSummary>& sources) {
  Hang h;
  std::set<int> world, timed_out;
  std::map<int, long long> enqueued;  // rank -> last enqueued work
  std::set<std::string> hang_texts;
  std::map<long long, int> seq_votes;
  int64_t started_us = record::kNoTime;
  record::Clock started_clock = record::Clock::kNone;
  for (const auto& s : sources) world.insert(s.ranks.begin(), s.ranks.end());
  for (const Incident* inc : incidents) {
    if (inc->category != "hang" || (inc->role != kb::Role::kRoot && inc->role != kb::Role::kCollateral)) continue;
    if (inc->rank >= 0) timed_out.insert(inc->rank);
    hang_texts.insert(normalise(trim(inc->decisive->text)));
  }
  for (const Event& e : events) {
    if (e.kind != EventKind::kPattern) continue;
    long long seq = capture_int(e, "seq"), enq = capture_int(e, "enqueued"), tmo = capture_int(e, "timeout_ms");
    if (seq != LLONG_MIN) seq_votes[seq]++;
    if (enq != LLONG_MIN && e.rank >= 0) enqueued[e.rank] = enq;
    if (tmo != LLONG_MIN && tmo > 0) {
      h.timeout_ms = tmo;
      if (auto op = e.captures.find("op"); op != e.captures.end()) h.op = op->second;
      if (e.time_us != record::kNoTime && e.time_subsecond) {
        int64_t start = e.time_us - tmo * 1000;
        if (started_us == record::kNoTime || start < started_us) started_us = start, started_clock = e.clock;
      }
    }
  }
  for (const Event* f : launcher_failures) {
    if (f->rank < 0) continue;
    world.insert(f->rank);
    if (hang_texts.count(normalise(trim(f->text)))) timed_out.insert(f->rank);
  }
  // The stuck collective: the sequence number most ranks report.
  int best = 0;
  for (const auto& [seq, votes] : seq_votes) {
    if (votes > best) best = votes, h.seq = seq;
  }
  h.started = format_time(started_us, started_clock);
  h.timed_out.assign(timed_out.begin(), timed_out.end());
  std::set<int> never_entered;
  if (h.seq >= 0) {
    for (const auto& [rank, enq] : enqueued) {
      if (enq < h.seq) never_entered.insert(rank);
    }
  }
  if (!never_entered.empty()) {
    h.suspects.assign(never_entered.begin(), never_entered.end());
    h.reasoning = "its last enqueued work is below the stuck collective's sequence number " + std::to_string(h.seq) +
                  ": it never entered the collective the other ranks wait in";
  } else if (world.size() >= 2 && !timed_out.empty()) {
    for (int r : world) {
      if (!timed_out.count(r)) h.suspects.push_back(r);
    }
    if (h.suspects.size() == 1) {
      h.reasoning = "the only rank of the job (" + std::to_string(world.size()) +
                    " ranks seen) that did not time out: the others were waiting for it";
    } else if (h.suspects.size() > 1) {
      h.reasoning = std::to_string(h.suspects.size()) + " ranks did not time out; any of them may be the one the others waited for";
    }
  }
  return h;
}

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
      auto top = std::max_element(ranks.begin(), ranks.end(), [](const RankSeries& a, const RankSeries& b) { return a.max < b.max; });
      if (std::none_of(keep.begin(), keep.end(), [&](const RankSeries& k) { return k.rank == top->rank; })) keep.back() = *top;
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

struct IdentityMaps {
  std::map<int, std::string> rank_node;
  std::map<std::pair<std::string, int>, int> pid_rank;
  std::set<std::string> nodes;
};

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

kb::Precedence precedence_of(const Incident& inc) {
  if (!inc.entry || !inc.hit) return kb::Precedence::kWeak;  // an unrecognised crash
  for (const auto& p : inc.entry->patterns) {
    if (p.id == inc.hit->pattern_id) return p.precedence;
  }
  return inc.role == kb::Role::kCollateral ? kb::Precedence::kCollateral : kb::Precedence::kRoot;
}

// 1. Incidents: one per traceback (with the KB hits inside it), one per hit outside.
void build_incidents(Ctx& c) {
  std::map<std::tuple<uint32_t, int, uint64_t>, size_t> traceback_incident;  // (source, rank, first line)
  for (const Event& e : c.events) {
    if (e.kind != EventKind::kException) continue;
    Incident inc;
    inc.decisive = &e;
    inc.exc_type = e.exc_type;
    inc.members.push_back(&e);
    traceback_incident[{e.source, e.rank, e.traceback_first}] = c.incidents.size();
    c.incidents.push_back(std::move(inc));
  }
  std::map<std::pair<uint32_t, uint64_t>, size_t> line_incident;
  for (const Event& e : c.events) {
    if (e.kind == EventKind::kLauncherFailure) {
      c.launcher_failures.push_back(&e);
      continue;
    }
    if (e.kind != EventKind::kPattern) continue;
    if (e.role == kb::Role::kCompletion) {
      c.completions.push_back(&e);
      continue;
    }
    if (e.traceback_last != 0) {
      auto it = traceback_incident.find({e.source, e.rank, e.traceback_first});
      if (it != traceback_incident.end()) {
        Incident& inc = c.incidents[it->second];
        inc.members.push_back(&e);
        // Only hits on the traceback's exception lines (and their continuation) name it;
        // a frame's source line does not.
        if (e.line >= inc.decisive->line || e.exception_line) {
          if (!inc.hit || better_hit(&e, inc.hit)) inc.hit = &e;
        }
        continue;
      }
    }
    // Several entries can match one line: one incident, named by the most specific
    // hit (the KB rule: priority, then the longest match, then the id).
    auto line_key = std::make_pair(e.source, e.line);
    if (auto it = line_incident.find(line_key); it != line_incident.end()) {
      Incident& inc = c.incidents[it->second];
      inc.members.push_back(&e);
      if (more_specific(&e, inc.hit)) inc.hit = inc.decisive = &e;
      continue;
    }
    Incident inc;
    inc.decisive = &e;
    inc.hit = &e;
    inc.members.push_back(&e);
    line_incident[line_key] = c.incidents.size();
    c.incidents.push_back(std::move(inc));
  }
}

void name_unrecognised(Ctx& c, Incident& inc, const Event& dec) {
  inc.entry = nullptr;
  inc.id = "unrecognized." + inc.exc_type;
  inc.title = "Unrecognised " + inc.exc_type;
  inc.category = guess_exception_category(c.kb, inc.exc_type, dec.exc_frame);
  inc.role = c.on(Rule::kTeardownIsCollateral) && is_teardown_exception(c.kb, inc.exc_type) ? kb::Role::kCollateral
                                                                                              : kb::Role::kRoot;
}

// 2. Name each incident, give it a role, and a tier from the KB's precedence.
void name_incidents(Ctx& c) {
  for (Incident& inc : c.incidents) {
    const Event& dec = *inc.decisive;
    if (inc.hit) {
      inc.entry = c.kb.find(inc.hit->entry_id);
      inc.role = inc.hit->role;
      // The hit's own line is decisive when it is the final exception, its continuation,
      // or an exception that caused the rest; after "Original Traceback" the wrapped
      // (final) exception stays decisive and the hit only names the entry.
      if (dec.kind == EventKind::kPattern || inc.hit->line > dec.line || inc.hit->chained_cause)
        inc.decisive = inc.hit;
    }
    if (inc.entry && is_exception_line_hit(inc.hit)) {
      // A bare exception line ("ValueError: ..."), or a traceback no specific entry
      // names: the crash of that type, named as an unrecognised traceback would be.
      if (inc.exc_type.empty()) inc.exc_type = inc.hit->captures.at("exception");
      name_unrecognised(c, inc, dec);
    } else if (inc.entry) {
      inc.id = inc.entry->id;
      inc.title = inc.entry->title;
      inc.category = inc.entry->category;
    } else if (!inc.exc_type.empty()) {
      name_unrecognised(c, inc, dec);
    }
    // A traceback whose hits are only symptoms or context but whose final exception is
    // an unrecognised crash: the crash is the incident, the hit is context.
    if (c.on(Rule::kUnrecognisedCrash) && inc.hit && inc.role != kb::Role::kRoot && dec.kind == EventKind::kException &&
        inc.hit->role != kb::Role::kCollateral && !is_teardown_exception(c.kb, inc.exc_type)) {
      name_unrecognised(c, inc, dec);
      inc.role = kb::Role::kRoot;
      inc.decisive = &dec;
    }
    const Event& de = *inc.decisive;
    inc.rank = de.rank;
    inc.node = de.node;
    if (inc.rank >= 0) inc.rank_source = "log prefix";
    bool in_summary = de.in_launcher_summary;
    if (inc.rank < 0 && in_summary && de.summary_rank >= 0) {
      inc.rank = de.summary_rank;
      inc.rank_source = "launcher summary";
    }
    if (inc.role == kb::Role::kRoot && (inc.entry == nullptr || entry_is_failure(inc.entry))) {
      kb::Precedence p = precedence_of(inc);
      if (!c.on(Rule::kPrecedence)) p = kb::Precedence::kRoot;  // every failure alike: time alone decides
      if (in_summary) inc.tier = kSummary;
      else if (p == kb::Precedence::kHardware) inc.tier = kHardware;
      else if (p == kb::Precedence::kWeak) inc.tier = kWeak;
      else if (p == kb::Precedence::kCollateral) inc.tier = kCollateralOnly;
      else if (p == kb::Precedence::kRoot) inc.tier = kRecognised;
    } else if (inc.role == kb::Role::kCollateral && !in_summary) {
      inc.tier = kCollateralOnly;
    }
  }
}

// Lines a healthy control run also prints are noise, not the failure.
void drop_control_noise(Ctx& c) {
  if (!c.numbers.seen_in_control || !c.on(Rule::kControlNoise)) return;
  for (Incident& inc : c.incidents) {
    if (inc.tier != kNone && c.numbers.seen_in_control(inc.decisive->text)) {
      inc.tier = kNone;
      c.d.notes.push_back("also in the control run, treated as noise: " + inc.decisive->text.substr(0, 160));
    }
  }
}

// The last step a rank logged before a line (from the series' points), or NaN.
double step_before(const metrics::SeriesSet& set, int rank, const Event& e) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [key, s] : set.all()) {
    if (key.second != rank) continue;
    for (const auto& p : s.points) {
      bool before = p.source == e.source ? p.line < e.line
                                         : (p.time_us != INT64_MIN && e.time_us != record::kNoTime && p.time_us < e.time_us);
      if (before && !(p.step <= best)) best = p.step;
    }
  }
  return best;
}

// An error followed by progress on the same rank is not the job's failure: the rank
// went on training. Such incidents leave the candidates and are listed as recovered.
void mark_recovered(Ctx& c) {
  if (!c.on(Rule::kRecovered) || !c.numbers.series) return;
  const auto& lp = c.numbers.series->last_progress();
  for (Incident& inc : c.incidents) {
    if (inc.tier == kNone || inc.tier == kSummary) continue;
    const Event& e = *inc.decisive;
    auto it = lp.find(e.rank);
    if (it == lp.end()) continue;
    const metrics::Point& last = it->second;
    bool timed = last.time_us != INT64_MIN && e.time_us != record::kNoTime && e.clock != record::Clock::kNone;
    bool after = last.source == e.source ? last.line > e.line : (timed && last.time_us > e.time_us);
    if (!after) continue;
    double before = step_before(*c.numbers.series, e.rank, e);
    double gained = std::isnan(before) ? last.step : last.step - before;
    double need = timed && last.time_us > e.time_us ? kTuning.recovered_min_steps_timed
                                                     : kTuning.recovered_min_steps_untimed;
    if (!(gained >= need)) continue;
    inc.tier = kNone;
    Recovery r;
    r.id = inc.id;
    if (e.rank >= 0) r.rank = e.rank;
    r.steps_after = gained;
    r.evidence = to_evidence(e, c.sources);
    c.d.recovered.push_back(std::move(r));
  }
}

// 3. The initiating failure: best tier, then earliest (node clocks aligned).
void choose_primary(Ctx& c) {
  if (c.on(Rule::kClockAlignment)) c.clocks = estimate_clocks(c.sources, c.numbers);
  for (const auto& [node, off] : c.clocks.node_offset) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "clock of node %s is %+.2f s off the others (aligned on step lines)", node.c_str(),
                  double(off) / 1e6);
    c.d.notes.push_back(buf);
  }
  for (const Incident& inc : c.incidents) {
    if (inc.tier == kNone) continue;
    if (!c.primary || inc.tier < c.primary->tier ||
        (inc.tier == c.primary->tier && earlier(inc.decisive, c.primary->decisive, c.clocks))) {
      c.primary = &inc;
    }
  }
  if (c.primary) {
    c.rank = c.primary->rank;
    c.rank_how = c.rank < 0 ? RankSource::kNone
                 : c.primary->decisive->in_launcher_summary ? RankSource::kLauncherSummary
                                                            : RankSource::kPrefix;
    c.rank_source = c.primary->rank_source;
    c.node = c.primary->node;
  }
}

// 4. Rank attribution: an ordered table of rules, each of which may give (or, for
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
    mine.insert(normalise(trim(m->text)));
    for (const auto& x : m->exc_chain) mine.insert(normalise(trim(x)));
  }
  std::set<std::string> others;  // what the collateral incidents said
  for (const Incident& inc : c.incidents) {
    if (&inc != c.primary && inc.role == kb::Role::kCollateral && !inc.decisive->in_launcher_summary)
      others.insert(normalise(trim(inc.decisive->text)));
  }
  std::set<int> same, unexplained;
  for (const Event* f : c.launcher_failures) {
    if (f->rank < 0) continue;
    std::string t = normalise(trim(f->text));
    if (!t.empty() && mine.count(t)) same.insert(f->rank);
    else if (t.empty() || !others.count(t)) unexplained.insert(f->rank);
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
  return RankAnswer{-1, RankSource::kAllAlike, "all " + std::to_string(world.size()) + " ranks failed alike at the same time"};
}

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

std::optional<RankAnswer> rank_pid_map(Ctx& c) {
  const Event& de = *c.primary->decisive;
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || de.node.empty() || de.pid < 0) return std::nullopt;
  const IdentityMaps& m = identity_maps(c);
  auto it = m.pid_rank.find({de.node, de.pid});
  if (it == m.pid_rank.end()) return std::nullopt;
  return RankAnswer{it->second, RankSource::kPidMap,
                    "process id " + std::to_string(de.pid) + " on " + de.node + " (NCCL / launcher lines map it)"};
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
  if (c.rank >= 0 || c.rank_how == RankSource::kAllAlike || de.pid < 0 || de.node.empty() || !c.launcher_failures.empty())
    return std::nullopt;
  std::set<int> world;
  for (const auto& s : c.sources) world.insert(s.ranks.begin(), s.ranks.end());
  if (world.size() != 1 || *world.begin() < 0) return std::nullopt;
  return RankAnswer{*world.begin(), RankSource::kOnlyRankNamed,
                    "the only rank the log names (the line is a process's own: " + de.node + ":" + std::to_string(de.pid) +
                        ")"};
}

void attribute_rank(Ctx& c) {
  if (!c.primary) return;
  static const std::pair<Rule, RankRuleFn> kRankRules[] = {
      {Rule::kRankLauncherSameText, rank_launcher_same_text},
      {Rule::kRankLauncherExclusion, rank_launcher_exclusion},
      {Rule::kRankHangStraggler, rank_hang_straggler},
      {Rule::kRankAllAlike, rank_all_alike},
      {Rule::kRankPidMap, rank_pid_map},
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

bool is_library_frame(const kb::KnowledgeBase& kb, const std::string& file) {
  return std::any_of(kb.library_frames.begin(), kb.library_frames.end(),
                     [&](const std::string& m) { return file.find(m) != std::string::npos; });
}

// The decisive line's frames and the lines before it: its own, or else those of the
// incident's traceback (the exception event joined from it).
void fill_traceback_and_context(const Ctx& c, const Incident& inc, Finding& f) {
  const Event* framed = !inc.decisive->frames.empty() ? inc.decisive : nullptr;
  const Event* context = !inc.decisive->context_before.empty() ? inc.decisive : nullptr;
  for (const Event* m : inc.members) {
    if (!framed && !m->frames.empty() && m->kind == EventKind::kException) framed = m;
    if (!context && !m->context_before.empty()) context = m;
  }
  if (framed) {
    for (const auto& fr : framed->frames) f.traceback.push_back({fr.file, fr.line, fr.function});
    f.traceback_dropped = framed->frames_dropped;
    for (auto it = f.traceback.rbegin(); it != f.traceback.rend(); ++it) {
      if (!is_library_frame(c.kb, it->file)) {
        f.user_frame = *it;
        break;
      }
    }
  }
  if (context) {
    for (const auto& [line, text] : context->context_before) f.context_before.push_back({line, text});
  }
}

// The primary's finding: what the incident says, with the KB's fix and verification.
void fill_primary(Ctx& c) {
  if (!c.primary) return;
  const Incident* primary = c.primary;
  Finding f;
  f.id = primary->id;
  f.title = primary->title;
  f.category = primary->category;
  f.role = "root";
  static const double kConfidence[] = {0.9, 0.85, 0.6, 0.5, 0.35};
  f.confidence = primary->tier <= kCollateralOnly ? kConfidence[primary->tier] : 0.3;
  if (c.rank >= 0) f.rank = c.rank;
  const Event& de = *primary->decisive;
  if (de.local_rank >= 0) f.local_rank = de.local_rank;
  if (de.gpu >= 0) f.gpu = de.gpu;
  f.node = c.node;
  f.time = de.time_text;
  if (!de.time_text.empty()) f.time_iso = iso_time(de.time_us, de.clock, de.time_subsecond);
  const bool straggler = c.rank_how == RankSource::kHangStraggler;
  // For a straggler the quoted line is another rank's timeout: its time is not when the
  // suspect failed; the collective's start is the better estimate.
  if (c.hang && straggler) f.time = c.hang->started;
  f.rank_source = c.rank_source;
  f.rank_how = c.rank_how;
  f.node_source = c.node_source;
  f.fingerprint = template_::fingerprint(f.id, de.text);
  f.hang = c.hang;
  f.exception_type = primary->exc_type;
  Evidence dec = to_evidence(de, c.sources);
  if (!dec.rank && c.rank >= 0 && !straggler) dec.rank = c.rank;
  if (dec.node.empty() && !straggler) dec.node = c.node;
  f.evidence.push_back(dec);
  fill_traceback_and_context(c, *primary, f);
  // Supporting lines: the exception chain and other hits in the same incident.
  for (const Event* m : primary->members) {
    if (m == &de || f.evidence.size() >= 6) continue;
    if (m->kind == EventKind::kPattern && m->role == kb::Role::kContext) continue;
    f.evidence.push_back(to_evidence(*m, c.sources));
  }
  if (primary->entry) {
    const kb::Entry& e = *primary->entry;
    f.summary = e.summary;
    f.root_cause = e.root_cause;
    f.fix = e.fix;
    f.verify = e.verify;
    for (const auto& r : e.references) f.references.push_back(r.url);
  } else {
    f.summary = "The process raised " + primary->exc_type +
                " and no knowledge-base entry recognises its message; the category is a guess from the exception type.";
    f.root_cause = "Read the decisive line and the traceback above it: the last frame in your own code is "
                   "usually where to start.";
    f.fix = {"Reproduce on one process (no launcher) with the same inputs to get the full traceback.",
             "Search the message: firstfault search '" + de.text.substr(0, 80) + "'"};
    f.verify = "Rerun the job and check that `firstfault diagnose` on the new log no longer reports " + primary->id;
  }
  c.d.primary = std::move(f);
}

// 5. Collateral: everything else that failed or reacted, grouped by id.
void group_collateral(Ctx& c) {
  std::map<std::string, size_t> coll_index;
  for (const Incident& inc : c.incidents) {
    if (&inc == c.primary || inc.id.empty()) continue;
    // The launcher's failure table restates what the ranks printed; counting it again
    // would double every collateral line and list the primary as its own collateral.
    if (inc.decisive->in_launcher_summary) continue;
    bool reactive = inc.role == kb::Role::kCollateral || inc.role == kb::Role::kRoot;
    if (!reactive) continue;
    if (inc.role == kb::Role::kRoot && inc.entry && !entry_is_failure(inc.entry)) continue;
    // A recovered error is listed as recovered, not as the primary's collateral.
    if (inc.tier == kNone && std::any_of(c.d.recovered.begin(), c.d.recovered.end(), [&](const Recovery& r) {
          return r.evidence.line == inc.decisive->line && r.id == inc.id;
        }))
      continue;
    auto it = coll_index.find(inc.id);
    if (it == coll_index.end()) {
      Collateral col;
      col.id = inc.id;
      col.title = inc.title;
      col.category = inc.category;
      col.explained_by = c.primary ? c.primary->id : "";
      col.first = to_evidence(*inc.decisive, c.sources);
      col.fingerprint = template_::fingerprint(inc.id, inc.decisive->text);
      coll_index[inc.id] = c.d.collateral.size();
      c.d.collateral.push_back(std::move(col));
      it = coll_index.find(inc.id);
    }
    Collateral& col = c.d.collateral[it->second];
    ++col.count;
    if (inc.rank >= 0 && std::find(col.ranks.begin(), col.ranks.end(), inc.rank) == col.ranks.end())
      col.ranks.push_back(inc.rank);
    if (!inc.node.empty() && std::find(col.nodes.begin(), col.nodes.end(), inc.node) == col.nodes.end())
      col.nodes.push_back(inc.node);
  }
  for (auto& col : c.d.collateral) std::sort(col.ranks.begin(), col.ranks.end());
}

// 6. Hypotheses: other strong candidates with a different id than the primary.
void list_hypotheses(Ctx& c) {
  if (!c.primary) return;
  std::set<std::string> seen{c.primary->id};
  for (const Incident& inc : c.incidents) {
    if (inc.tier > kWeak || seen.count(inc.id)) continue;
    seen.insert(inc.id);
    Hypothesis h;
    h.id = inc.id;
    h.title = inc.title;
    h.category = inc.category;
    h.confidence = 0.3;
    h.why = "also a failure on " + (inc.rank >= 0 ? "rank " + std::to_string(inc.rank) : std::string("an unknown rank")) +
            ", but later than the primary (or on a weaker signal)";
    h.evidence.push_back(to_evidence(*inc.decisive, c.sources));
    h.separate_by = "Check which of the two happened first on the affected rank's own log; rerun with the "
                    "primary's fix and see whether this one remains.";
    c.d.hypotheses.push_back(std::move(h));
    if (c.d.hypotheses.size() >= 5) break;
  }
}

// 7. Symptoms and warnings seen (deduplicated by entry).
void list_symptoms(Ctx& c) {
  std::set<std::string> seen;
  for (const Incident& inc : c.incidents) {
    if (!inc.entry) continue;
    bool symptom = inc.role == kb::Role::kSymptom || (inc.role == kb::Role::kRoot && !entry_is_failure(inc.entry));
    if (!symptom || !seen.insert(inc.id).second) continue;
    Finding f;
    f.id = inc.id;
    f.title = inc.title;
    f.category = inc.category;
    f.role = kb::role_name(inc.role);
    if (inc.rank >= 0) f.rank = inc.rank;
    f.evidence.push_back(to_evidence(*inc.decisive, c.sources));
    c.d.symptoms.push_back(std::move(f));
  }
}

// 8. Timeline: incidents in order, the same normalised line across ranks merged.
void build_timeline(Ctx& c) {
  std::vector<const Incident*> ordered;
  for (const Incident& inc : c.incidents) {
    if (inc.id.empty() || inc.role == kb::Role::kContext) continue;
    if (inc.decisive->in_launcher_summary && &inc != c.primary) continue;
    ordered.push_back(&inc);
  }
  std::stable_sort(ordered.begin(), ordered.end(), [&](const Incident* a, const Incident* b) {
    if (earlier(a->decisive, b->decisive, c.clocks)) return true;
    if (earlier(b->decisive, a->decisive, c.clocks)) return false;
    // A tie (whole-second stamps): causes before their effects.
    return a->role == kb::Role::kRoot && b->role != kb::Role::kRoot;
  });
  std::map<std::pair<std::string, std::string>, size_t> tl_index;
  for (const Incident* inc : ordered) {
    std::string role = inc == c.primary ? "root"
                       : (inc->role == kb::Role::kRoot && c.primary ? "collateral" : kb::role_name(inc->role));
    auto key = std::make_pair(inc->id, role);
    auto it = tl_index.find(key);
    if (it == tl_index.end()) {
      TimelineEntry t;
      t.time = inc->decisive->time_text;
      t.id = inc->id;
      t.role = role;
      t.source = inc->decisive->source < c.sources.size() ? c.sources[inc->decisive->source].name : "";
      t.line = inc->decisive->line;
      t.text = inc->decisive->text;
      tl_index[key] = c.d.timeline.size();
      c.d.timeline.push_back(std::move(t));
      it = tl_index.find(key);
    }
    TimelineEntry& t = c.d.timeline[it->second];
    ++t.count;
    int r = inc == c.primary ? c.rank : inc->rank;
    if (r >= 0 && std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) t.ranks.push_back(r);
    if (!inc->node.empty() && std::find(t.nodes.begin(), t.nodes.end(), inc->node) == t.nodes.end())
      t.nodes.push_back(inc->node);
  }
  for (auto& t : c.d.timeline) std::sort(t.ranks.begin(), t.ranks.end());
  if (c.d.timeline.size() > 50) c.d.timeline.resize(50);
}

// 9. Numbers: a terminal loss scale or a loss that ends non-finite confirms a numerical
// primary, or makes one when no error line says so; a transient loss scale is a note.
void read_numbers(Ctx& c) {
  if (!c.numbers.series || !c.numbers.aliases) return;
  Diagnosis& d = c.d;
  d.verdicts = judge_series(*c.numbers.series, *c.numbers.aliases, c.sources, c.numbers.last_time_us,
                            c.numbers.last_time_clock);
  summarise_series(*c.numbers.series, *c.numbers.aliases, d.series);
  const Verdict* terminal = nullptr;
  const Verdict* nonfinite = nullptr;
  const Verdict* transient = nullptr;
  for (const auto& v : d.verdicts) {
    if (v.id == "loss-scale" && v.verdict == "terminal") terminal = &v;
    if (v.id == "loss-scale" && v.verdict == "transient") transient = &v;
    if (v.id == "non-finite") nonfinite = &v;
  }
  if (d.primary) {
    if (c.on(Rule::kSeriesConfirm) && d.primary->category == "numerical" && (terminal || nonfinite)) {
      d.primary->confidence = std::max(d.primary->confidence, 0.95);
      const Verdict& v = terminal ? *terminal : *nonfinite;
      for (const auto& e : v.evidence) d.primary->evidence.push_back(e);
    }
    return;
  }
  if (terminal && c.on(Rule::kSeriesTerminalLossScale)) {
    // The finding's words come from the KB entry of the series rule when there is one.
    constexpr const char* kEntry = "series.loss-scale-terminal";
    const kb::Entry* e = c.kb.find(kEntry);
    Finding f;
    f.id = kEntry;
    f.title = e ? e->title : "Dynamic loss scale collapsed (from the numbers in the log)";
    f.category = "numerical";
    f.role = "root";
    f.confidence = 0.7;
    f.evidence = terminal->evidence;
    // No KB entry can hold it yet (an entry needs a pattern a real program prints), so
    // the words are here unless a --kb entry of this id supplies them.
    f.summary = terminal->summary + ". " +
                (e ? e->summary
                   : std::string("No error line says so, but the fp16 loss scale only falls this far when "
                                 "gradients overflow at every step."));
    if (e) {
      f.root_cause = e->root_cause;
      f.fix = e->fix;
      f.verify = e->verify;
      for (const auto& r : e->references) f.references.push_back(r.url);
    } else {
      f.fix = {"Find the first step where the loss or grad norm grew; lower the learning rate or add warm-up and "
               "gradient clipping.",
               "Switch to bf16 if the hardware supports it."};
      f.verify = "Rerun and check that the loss scale recovers after warm-up (firstfault reports it as transient).";
    }
    f.fingerprint = template_::fingerprint(f.id, "");
    d.primary = std::move(f);
  } else if (transient) {
    d.notes.push_back(transient->summary + ": normal for dynamic loss scaling at warm-up.");
  }
}

std::string fmt_step(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.15g", v);
  return buf;
}

// How far the run got: progress lines per rank, the stated total, completion lines.
void read_progress(Ctx& c) {
  Progress& p = c.d.progress;
  if (c.numbers.series) {
    const auto& lp = c.numbers.series->last_progress();
    int64_t last_us = INT64_MIN;
    if (const uint64_t others = c.numbers.series->other_ranks(); others > 0) {
      c.d.notes.push_back(std::to_string(others) + " ranks past the first " + std::to_string(metrics::SeriesSet::kMaxRanks) +
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

std::string ranks_phrase(int n) { return n == 1 ? "1 rank" : std::to_string(n) + " ranks"; }

// What was not read, one reason each (a failed verdict keeps them as notes).
void add_unread_reasons(Ctx& c) {
  for (const auto& u : c.numbers.unread) c.d.reasons.push_back({rule_name(Rule::kVerdictIncompleteInput), "not read: " + u, {}});
}

// 10. The verdict, by the first rule that holds, with its reasons.
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
  // Degraded: the run went on, with problems.
  if (c.on(Rule::kVerdictDegradedSymptoms)) {
    for (const auto& s : d.symptoms) {
      const kb::Entry* e = c.kb.find(s.id);
      if (e && entry_is_failure(e)) {
        d.verdict = VerdictKind::kDegraded;
        d.reasons.push_back({rule_name(Rule::kVerdictDegradedSymptoms), "an error-severity warning: " + s.title,
                             s.evidence.empty() ? std::nullopt : std::optional<Evidence>(s.evidence.front())});
      }
    }
  }
  if (c.on(Rule::kVerdictDegradedRecovered) && d.recovered.size() >= 2) {
    d.verdict = VerdictKind::kDegraded;
    d.reasons.push_back({rule_name(Rule::kVerdictDegradedRecovered),
                         std::to_string(d.recovered.size()) + " errors were recovered from (they recur)", {}});
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
    return;
  }
  if (c.on(Rule::kVerdictUnknownEmpty) && c.events.empty() && !p.last_step) {
    d.verdict = VerdictKind::kUnknown;
    d.reasons.push_back({rule_name(Rule::kVerdictUnknownEmpty),
                         d.lines == 0 ? "the input is empty" : "nothing in the input reads as a training or serving log",
                         {}});
    return;
  }
  d.verdict = VerdictKind::kIncomplete;
  d.reasons.push_back({"verdict.incomplete-excerpt", "the log shows neither a failure nor the run's end", {}});
}

}  // namespace

Diagnosis diagnose(const std::vector<Event>& events, const std::vector<SourceSummary>& sources,
                   const kb::KnowledgeBase& kb, const JobNumbers& numbers) {
  Diagnosis d;
  d.sources = sources;
  d.errors = numbers.unread;  // the input problems, shown beside the verdict
  for (const auto& s : sources) {
    d.lines += s.lines;
    d.bytes += s.bytes;
  }
  Ctx c(events, sources, kb, numbers, numbers.rules, d);
  build_incidents(c);
  name_incidents(c);
  drop_control_noise(c);
  mark_recovered(c);
  choose_primary(c);
  attribute_rank(c);
  fill_primary(c);
  group_collateral(c);
  list_hypotheses(c);
  list_symptoms(c);
  build_timeline(c);
  read_numbers(c);
  read_progress(c);
  decide_verdict(c);
  return d;
}

}  // namespace ff::analyze
