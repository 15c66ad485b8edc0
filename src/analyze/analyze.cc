#include "analyze/analyze.h"

#include <algorithm>
#include <climits>
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

// Exceptions that are the launcher's or the user's reaction, not a failure of their own.
bool is_teardown_exception(std::string_view type) {
  std::string_view last = type.substr(type.rfind('.') == std::string_view::npos ? 0 : type.rfind('.') + 1);
  return last == "ChildFailedError" || last == "KeyboardInterrupt" || last == "SystemExit" ||
         last == "SignalException";
}

// Tiers of candidate root incidents, best first.
enum Tier {
  kHardware = 0,        // Xid, ECC, fallen off the bus: outranks distributed symptoms
  kRecognised = 1,      // a KB root on a rank's own lines
  kWeak = 2,            // unrecognised crash, or a KB root with negative priority
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

Evidence to_evidence(const Event& e, const std::vector<SourceSummary>& sources) {
  Evidence ev;
  ev.source = e.source < sources.size() ? sources[e.source].name : "";
  ev.line = e.line;
  int rank = e.rank >= 0 ? e.rank : e.summary_rank;
  if (rank >= 0) ev.rank = rank;
  ev.node = e.node;
  ev.time = e.time_text;
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
bool better_hit(const Event* a, const Event* b) {
  if (a->line == b->line && a->source == b->source) return more_specific(a, b);
  auto role_rank = [](kb::Role r) {
    switch (r) {
      case kb::Role::kRoot: return 0;
      case kb::Role::kCollateral: return 1;
      case kb::Role::kSymptom: return 2;
      case kb::Role::kContext: return 3;
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
    ++m.ranks;
    if (s.has_finite) {
      m.min = std::min(m.min, s.min);
      m.max = std::max(m.max, s.max);
    }
    if (s.last.step >= m.last_step) {
      m.last_step = s.last.step;
      m.last_value = s.last.value;
    }
    if (!m.points_rank || key.second < *m.points_rank) {
      m.points_rank = key.second;
      m.points.clear();
      size_t stride = std::max<size_t>(1, s.points.size() / 200);
      for (size_t i = 0; i < s.points.size(); i += stride) m.points.emplace_back(s.points[i].step, s.points[i].value);
    }
  }
}

// What the verdicts change: a terminal loss scale or a loss that ends non-finite is a
// numerical failure even without an error line; a transient loss scale is healthy.
void apply_verdicts(Diagnosis& d) {
  const Verdict* terminal = nullptr;
  const Verdict* nonfinite = nullptr;
  const Verdict* transient = nullptr;
  for (const auto& v : d.verdicts) {
    if (v.id == "loss-scale" && v.verdict == "terminal") terminal = &v;
    if (v.id == "loss-scale" && v.verdict == "transient") transient = &v;
    if (v.id == "non-finite") nonfinite = &v;
  }
  if (d.primary) {
    if (d.primary->category == "numerical" && (terminal || nonfinite)) {
      d.primary->confidence = std::max(d.primary->confidence, 0.95);
      const Verdict& v = terminal ? *terminal : *nonfinite;
      for (const auto& e : v.evidence) d.primary->evidence.push_back(e);
    }
    return;
  }
  if (terminal) {
    Finding f;
    f.id = "series.loss-scale-terminal";
    f.title = "Dynamic loss scale collapsed (from the numbers in the log)";
    f.category = "numerical";
    f.role = "root";
    f.confidence = 0.7;
    f.evidence = terminal->evidence;
    f.summary = terminal->summary + ". No error line says so, but the fp16 loss scale only falls this far when "
                "gradients overflow at every step.";
    f.fix = {"Find the first step where the loss or grad norm grew; lower the learning rate or add warm-up and gradient clipping.",
             "Switch to bf16 if the hardware supports it."};
    f.verify = "Rerun and check that the loss scale recovers after warm-up (firstfault reports it as transient).";
    f.fingerprint = template_::fingerprint(f.id, "");
    d.primary = std::move(f);
    d.verdict = "failed";
  } else if (transient) {
    d.notes.push_back(transient->summary + ": normal for dynamic loss scaling at warm-up.");
  }
}

}  // namespace

Diagnosis diagnose(const std::vector<Event>& events, const std::vector<SourceSummary>& sources,
                   const kb::KnowledgeBase& kb, const JobNumbers& numbers) {
  Diagnosis d;
  d.sources = sources;
  for (const auto& s : sources) {
    d.lines += s.lines;
    d.bytes += s.bytes;
  }

  // 1. Incidents: one per traceback (with the KB hits inside it), one per hit outside.
  std::vector<Incident> incidents;
  std::map<std::tuple<uint32_t, int, uint64_t>, size_t> traceback_incident;  // (source, rank, first line)
  for (const Event& e : events) {
    if (e.kind != EventKind::kException) continue;
    Incident inc;
    inc.decisive = &e;
    inc.exc_type = e.exc_type;
    inc.members.push_back(&e);
    traceback_incident[{e.source, e.rank, e.traceback_first}] = incidents.size();
    incidents.push_back(std::move(inc));
  }
  std::vector<const Event*> launcher_failures;
  std::map<std::pair<uint32_t, uint64_t>, size_t> line_incident;
  for (const Event& e : events) {
    if (e.kind == EventKind::kLauncherFailure) {
      launcher_failures.push_back(&e);
      continue;
    }
    if (e.kind != EventKind::kPattern) continue;
    if (e.traceback_last != 0) {
      auto it = traceback_incident.find({e.source, e.rank, e.traceback_first});
      if (it != traceback_incident.end()) {
        Incident& inc = incidents[it->second];
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
      Incident& inc = incidents[it->second];
      inc.members.push_back(&e);
      if (more_specific(&e, inc.hit)) inc.hit = inc.decisive = &e;
      continue;
    }
    Incident inc;
    inc.decisive = &e;
    inc.hit = &e;
    inc.members.push_back(&e);
    line_incident[line_key] = incidents.size();
    incidents.push_back(std::move(inc));
  }

  // 2. Name each incident and give it a role and tier.
  for (Incident& inc : incidents) {
    const Event& dec = *inc.decisive;
    if (inc.hit) {
      inc.entry = kb.find(inc.hit->entry_id);
      inc.role = inc.hit->role;
      // The hit's own line is decisive when it is the final exception, its continuation,
      // or an exception that caused the rest; after "Original Traceback" the wrapped
      // (final) exception stays decisive and the hit only names the entry.
      if (dec.kind == EventKind::kPattern || inc.hit->line > dec.line || inc.hit->chained_cause)
        inc.decisive = inc.hit;
    }
    if (inc.entry) {
      inc.id = inc.entry->id;
      inc.title = inc.entry->title;
      inc.category = inc.entry->category;
    } else if (!inc.exc_type.empty()) {
      inc.id = "unrecognized." + inc.exc_type;
      inc.title = "Unrecognised " + inc.exc_type;
      inc.category = guess_exception_category(kb, inc.exc_type, dec.exc_frame);
      inc.role = is_teardown_exception(inc.exc_type) ? kb::Role::kCollateral : kb::Role::kRoot;
    }
    // A traceback whose hits are only collateral/symptoms but whose final exception is
    // an unrecognised crash: the crash is the incident, the hit is context.
    if (inc.hit && inc.role != kb::Role::kRoot && dec.kind == EventKind::kException &&
        inc.hit->role != kb::Role::kCollateral && !is_teardown_exception(inc.exc_type)) {
      inc.entry = nullptr;
      inc.id = "unrecognized." + inc.exc_type;
      inc.title = "Unrecognised " + inc.exc_type;
      inc.category = guess_exception_category(kb, inc.exc_type, dec.exc_frame);
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
      if (in_summary) inc.tier = kSummary;
      else if (inc.category == "hardware") inc.tier = kHardware;
      else if (!inc.entry || (inc.hit && inc.hit->priority < 0)) inc.tier = kWeak;
      else inc.tier = kRecognised;
    } else if (inc.role == kb::Role::kCollateral && !in_summary) {
      inc.tier = kCollateralOnly;
    }
  }

  // Lines a healthy control run also prints are noise, not the failure.
  if (numbers.seen_in_control) {
    for (Incident& inc : incidents) {
      if (inc.tier != kNone && numbers.seen_in_control(inc.decisive->text)) {
        inc.tier = kNone;
        d.notes.push_back("also in the control run, treated as noise: " + inc.decisive->text.substr(0, 160));
      }
    }
  }

  Clocks clocks = estimate_clocks(sources, numbers);
  for (const auto& [node, off] : clocks.node_offset) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "clock of node %s is %+.2f s off the others (aligned on step lines)", node.c_str(),
                  double(off) / 1e6);
    d.notes.push_back(buf);
  }

  // 3. The initiating failure: best tier, then earliest.
  const Incident* primary = nullptr;
  for (const Incident& inc : incidents) {
    if (inc.tier == kNone) continue;
    if (!primary || inc.tier < primary->tier ||
        (inc.tier == primary->tier && earlier(inc.decisive, primary->decisive, clocks))) {
      primary = &inc;
    }
  }

  // 4. Rank from the launcher summary when the primary's own line does not say:
  // the summary entry whose error text is the primary's decisive line.
  int primary_rank = primary ? primary->rank : -1;
  std::string rank_source = primary ? primary->rank_source : "";
  std::string primary_node = primary ? primary->node : "";
  if (primary && primary_rank < 0) {
    // Texts that belong to the primary incident: its decisive line and every exception
    // line of its traceback (a chained traceback ends on a consequence).
    std::set<std::string> mine;
    for (const Event* m : primary->members) {
      mine.insert(normalise(trim(m->text)));
      for (const auto& x : m->exc_chain) mine.insert(normalise(trim(x)));
    }
    std::set<std::string> others;  // what the collateral incidents said
    for (const Incident& inc : incidents) {
      if (&inc != primary && inc.role == kb::Role::kCollateral && !inc.decisive->in_launcher_summary)
        others.insert(normalise(trim(inc.decisive->text)));
    }
    std::set<int> same, unexplained;
    for (const Event* f : launcher_failures) {
      if (f->rank < 0) continue;
      std::string t = normalise(trim(f->text));
      if (!t.empty() && mine.count(t)) same.insert(f->rank);
      else if (t.empty() || !others.count(t)) unexplained.insert(f->rank);
    }
    if (same.size() == 1) {
      primary_rank = *same.begin();
      rank_source = "launcher summary (same error text)";
    } else if (same.empty() && unexplained.size() == 1 && launcher_failures.size() > 1) {
      // Every other failed rank reported a collateral error; the one left is the origin.
      primary_rank = *unexplained.begin();
      rank_source = "launcher summary (the only failed rank without a collateral error)";
    }
  }
  // A hang: read the stuck collective from the watchdog lines, and find the rank that
  // never entered it: a rank whose last enqueued work is below the stuck sequence number,
  // or the only rank of the job without a timeout of its own.
  std::optional<Hang> hang;
  if (primary && primary->category == "hang") {
    hang = analyse_hang(events, incidents_view(incidents), launcher_failures, sources);
    if (hang->suspects.size() == 1) {
      primary_rank = hang->suspects[0];
      rank_source = "straggler: " + hang->reasoning;
    }
  }
  // All ranks alike: when every rank of the job reports the primary's failure at about
  // the same time (a NaN loss seen by all data-parallel ranks), no rank initiated it.
  if (primary && primary_rank >= 0 && rank_source == "log prefix") {
    std::set<int> world, alike;
    for (const auto& s : sources) world.insert(s.ranks.begin(), s.ranks.end());
    for (const Incident& inc : incidents) {
      if (inc.id != primary->id || inc.rank < 0 || inc.decisive->in_launcher_summary) continue;
      bool close = inc.decisive->time_us == record::kNoTime || primary->decisive->time_us == record::kNoTime ||
                   std::llabs(inc.decisive->time_us - primary->decisive->time_us) <= 2000000;
      if (close) alike.insert(inc.rank);
    }
    if (world.size() >= 2 && alike == world) {
      primary_rank = -1;
      rank_source = "all " + std::to_string(world.size()) + " ranks failed alike at the same time";
    }
  }
  // Identity maps the log states (rank -> node, (node, pid) -> rank), plus torchrun's table.
  std::map<int, std::string> rank_node;
  std::map<std::pair<std::string, int>, int> pid_rank;
  std::set<std::string> nodes;
  for (const auto& s : sources) {
    rank_node.insert(s.rank_node.begin(), s.rank_node.end());
    pid_rank.insert(s.pid_rank.begin(), s.pid_rank.end());
    for (const auto& [r, n] : s.rank_node) nodes.insert(n);
  }
  for (const Event* f : launcher_failures) {
    if (f->rank < 0) continue;
    if (!f->node.empty()) rank_node.emplace(f->rank, f->node), nodes.insert(f->node);
    if (!f->node.empty() && f->pid >= 0) pid_rank.emplace(std::make_pair(f->node, f->pid), f->rank);
  }
  std::string node_source = primary_node.empty() ? "" : "log line";
  if (primary && primary_rank < 0) {
    const Event& de = *primary->decisive;
    if (!de.node.empty() && de.pid >= 0) {
      auto it = pid_rank.find({de.node, de.pid});
      if (it != pid_rank.end()) {
        primary_rank = it->second;
        rank_source = "process id " + std::to_string(de.pid) + " on " + de.node + " (NCCL / launcher lines map it)";
      }
    }
    if (primary_rank < 0 && de.local_rank >= 0 && nodes.size() <= 1) {
      primary_rank = de.local_rank;
      rank_source = "local rank on a single-node job";
    }
  }
  // Progress: the failing rank usually stops logging steps first. When exactly one rank's
  // last progress step is behind all the others, it is the likely origin.
  if (primary && primary_rank < 0 && numbers.series) {
    const auto& lp = numbers.series->last_progress();
    double top = -1e300;
    for (const auto& [r, p] : lp) top = std::max(top, p.step);
    std::vector<int> behind;
    for (const auto& [r, p] : lp) {
      if (r >= 0 && p.step < top) behind.push_back(r);
    }
    if (lp.size() >= 2 && behind.size() == 1 && !lp.count(-1)) {
      primary_rank = behind[0];
      rank_source = fmt_progress(lp.at(behind[0]).step, top);
    }
  }
  if (primary && primary_node.empty() && primary_rank >= 0) {
    auto it = rank_node.find(primary_rank);
    if (it != rank_node.end()) {
      primary_node = it->second;
      node_source = "rank " + std::to_string(primary_rank) + " runs on this node (stated by the log)";
    }
  }

  if (primary) {
    d.verdict = "failed";
    Finding f;
    f.id = primary->id;
    f.title = primary->title;
    f.category = primary->category;
    f.role = "root";
    static const double kConfidence[] = {0.9, 0.85, 0.6, 0.5, 0.35};
    f.confidence = primary->tier <= kCollateralOnly ? kConfidence[primary->tier] : 0.3;
    if (primary_rank >= 0) f.rank = primary_rank;
    const Event& de = *primary->decisive;
    if (de.local_rank >= 0) f.local_rank = de.local_rank;
    if (de.gpu >= 0) f.gpu = de.gpu;
    f.node = primary_node;
    f.time = de.time_text;
    // For a straggler the quoted line is another rank's timeout: its time is not when the
    // suspect failed; the collective's start is the better estimate.
    if (hang && rank_source.rfind("straggler", 0) == 0) f.time = hang->started;
    f.rank_source = rank_source;
    f.node_source = node_source;
    f.fingerprint = template_::fingerprint(f.id, de.text);
    f.hang = hang;
    f.exception_type = primary->exc_type;
    Evidence dec = to_evidence(de, sources);
    if (!dec.rank && primary_rank >= 0 && rank_source.rfind("straggler", 0) != 0) dec.rank = primary_rank;
    if (dec.node.empty() && rank_source.rfind("straggler", 0) != 0) dec.node = primary_node;
    f.evidence.push_back(dec);
    // Supporting lines: the exception chain and other hits in the same incident.
    for (const Event* m : primary->members) {
      if (m == &de || f.evidence.size() >= 6) continue;
      if (m->kind == EventKind::kPattern && m->role == kb::Role::kContext) continue;
      f.evidence.push_back(to_evidence(*m, sources));
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
    d.primary = std::move(f);
  } else {
    d.verdict = "healthy";
  }

  // 5. Collateral: everything else that failed or reacted, grouped by id.
  std::map<std::string, size_t> coll_index;
  for (const Incident& inc : incidents) {
    if (&inc == primary || inc.id.empty()) continue;
    // The launcher's failure table restates what the ranks printed; counting it again
    // would double every collateral line and list the primary as its own collateral.
    if (inc.decisive->in_launcher_summary) continue;
    bool reactive = inc.role == kb::Role::kCollateral || inc.role == kb::Role::kRoot;
    if (!reactive) continue;
    if (inc.role == kb::Role::kRoot && inc.entry && !entry_is_failure(inc.entry)) continue;
    auto it = coll_index.find(inc.id);
    if (it == coll_index.end()) {
      Collateral c;
      c.id = inc.id;
      c.title = inc.title;
      c.category = inc.category;
      c.explained_by = primary ? primary->id : "";
      c.first = to_evidence(*inc.decisive, sources);
      c.fingerprint = template_::fingerprint(inc.id, inc.decisive->text);
      coll_index[inc.id] = d.collateral.size();
      d.collateral.push_back(std::move(c));
      it = coll_index.find(inc.id);
    }
    Collateral& c = d.collateral[it->second];
    ++c.count;
    if (inc.rank >= 0 && std::find(c.ranks.begin(), c.ranks.end(), inc.rank) == c.ranks.end()) c.ranks.push_back(inc.rank);
    if (!inc.node.empty() && std::find(c.nodes.begin(), c.nodes.end(), inc.node) == c.nodes.end())
      c.nodes.push_back(inc.node);
  }
  for (auto& c : d.collateral) std::sort(c.ranks.begin(), c.ranks.end());

  // 6. Hypotheses: other strong candidates with a different id than the primary.
  if (primary) {
    std::set<std::string> seen{primary->id};
    for (const Incident& inc : incidents) {
      if (inc.tier > kWeak || seen.count(inc.id)) continue;
      seen.insert(inc.id);
      Hypothesis h;
      h.id = inc.id;
      h.title = inc.title;
      h.category = inc.category;
      h.confidence = 0.3;
      h.why = "also a failure on " + (inc.rank >= 0 ? "rank " + std::to_string(inc.rank) : std::string("an unknown rank")) +
              ", but later than the primary (or on a weaker signal)";
      h.evidence.push_back(to_evidence(*inc.decisive, sources));
      h.separate_by = "Check which of the two happened first on the affected rank's own log; rerun with the "
                      "primary's fix and see whether this one remains.";
      d.hypotheses.push_back(std::move(h));
      if (d.hypotheses.size() >= 5) break;
    }
  }

  // 7. Symptoms and warnings seen (deduplicated by entry).
  std::map<std::string, size_t> sym_index;
  for (const Incident& inc : incidents) {
    if (!inc.entry) continue;
    bool symptom = inc.role == kb::Role::kSymptom || (inc.role == kb::Role::kRoot && !entry_is_failure(inc.entry));
    if (!symptom) continue;
    if (sym_index.count(inc.id)) continue;
    sym_index[inc.id] = d.symptoms.size();
    Finding f;
    f.id = inc.id;
    f.title = inc.title;
    f.category = inc.category;
    f.role = kb::role_name(inc.role);
    if (inc.rank >= 0) f.rank = inc.rank;
    f.evidence.push_back(to_evidence(*inc.decisive, sources));
    d.symptoms.push_back(std::move(f));
  }

  // 8. Timeline: incidents in order, the same normalised line across ranks merged.
  std::vector<const Incident*> ordered;
  for (const Incident& inc : incidents) {
    if (inc.id.empty() || inc.role == kb::Role::kContext) continue;
    if (inc.decisive->in_launcher_summary && &inc != primary) continue;
    ordered.push_back(&inc);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [&](const Incident* a, const Incident* b) {
                     if (earlier(a->decisive, b->decisive, clocks)) return true;
                     if (earlier(b->decisive, a->decisive, clocks)) return false;
                     // A tie (whole-second stamps): causes before their effects.
                     return a->role == kb::Role::kRoot && b->role != kb::Role::kRoot;
                   });
  std::map<std::pair<std::string, std::string>, size_t> tl_index;
  for (const Incident* inc : ordered) {
    std::string role = inc == primary ? "root" : (inc->role == kb::Role::kRoot && primary ? "collateral" : kb::role_name(inc->role));
    auto key = std::make_pair(inc->id, role);
    auto it = tl_index.find(key);
    if (it == tl_index.end()) {
      TimelineEntry t;
      t.time = inc->decisive->time_text;
      t.id = inc->id;
      t.role = role;
      t.source = inc->decisive->source < sources.size() ? sources[inc->decisive->source].name : "";
      t.line = inc->decisive->line;
      t.text = inc->decisive->text;
      tl_index[key] = d.timeline.size();
      d.timeline.push_back(std::move(t));
      it = tl_index.find(key);
    }
    TimelineEntry& t = d.timeline[it->second];
    ++t.count;
    int r = inc == primary ? primary_rank : inc->rank;
    if (r >= 0 && std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) t.ranks.push_back(r);
    if (!inc->node.empty() && std::find(t.nodes.begin(), t.nodes.end(), inc->node) == t.nodes.end())
      t.nodes.push_back(inc->node);
  }
  for (auto& t : d.timeline) std::sort(t.ranks.begin(), t.ranks.end());
  if (d.timeline.size() > 50) d.timeline.resize(50);

  // 9. Numbers: verdicts on the series confirm or settle the diagnosis.
  if (numbers.series && numbers.aliases) {
    d.verdicts = judge_series(*numbers.series, *numbers.aliases, sources, numbers.last_time_us, numbers.last_time_clock);
    summarise_series(*numbers.series, *numbers.aliases, d.series);
    apply_verdicts(d);
  }

  if (!primary && !d.primary && !d.symptoms.empty()) {
    for (const auto& s : d.symptoms) {
      const kb::Entry* e = kb.find(s.id);
      if (e && (e->severity == "error" || e->severity == "fatal")) d.verdict = "degraded";
    }
  }
  return d;
}

}  // namespace ff::analyze
