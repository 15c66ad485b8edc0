// analyze.incidents.cc — step 1 and 2 of the reasoning: events grouped into incidents (a traceback with the hits on
// its lines, several entries on one line), each named by its best hit or as an unrecognised
// exception; control noise dropped, errors recovered from marked, the primary chosen by tier
// and time.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "analyze/analyze_internal.h"
#include "base/strings.h"

namespace ff::analyze::detail {

namespace {

// Exceptions that are the launcher's or the user's reaction, not a failure of their own
// (kb/formats/exceptions.yaml, `teardown`), by the type's last dotted component.
bool is_teardown_exception(const kb::KnowledgeBase& kb, std::string_view type) {
  std::string_view last = type.substr(type.rfind('.') == std::string_view::npos ? 0 : type.rfind('.') + 1);
  return std::find(kb.teardown_exceptions.begin(), kb.teardown_exceptions.end(), last) != kb.teardown_exceptions.end();
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

// A wrapper's hit (kb `wrapper: true`: DistBackendError's "unhandled system error", a
// launcher's exit code, the watchdog echoing an error) against a hit that names a specific
// failure: the specific one names the incident (the cause, with its category and fix).
bool is_wrapper_hit(const kb::KnowledgeBase& kb, const Event* e) {
  const kb::Entry* en = kb.find(e->entry_id);
  return en && en->wrapper;
}

bool is_cause_hit(const kb::KnowledgeBase& kb, const Event* e) {
  if (is_exception_line_hit(e) || (e->role != kb::Role::kRoot && e->role != kb::Role::kCollateral)) return false;
  const kb::Entry* en = kb.find(e->entry_id);
  return en && !en->wrapper && entry_is_failure(en);
}

// -1: a names it better, 1: b does, 0: the wrapper rule does not decide.
int wrapper_order(const kb::KnowledgeBase& kb, const Event* a, const Event* b) {
  const bool wa = is_wrapper_hit(kb, a), wb = is_wrapper_hit(kb, b);
  if (wa == wb) return 0;
  if (wb && is_cause_hit(kb, a)) return -1;
  if (wa && is_cause_hit(kb, b)) return 1;
  return 0;
}

bool better_hit(const kb::KnowledgeBase& kb, bool wrappers, const Event* a, const Event* b) {
  if (is_exception_line_hit(a) != is_exception_line_hit(b)) return is_exception_line_hit(b);
  if (int w = wrappers ? wrapper_order(kb, a, b) : 0; w != 0) return w < 0;
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
  // On one line too, a failure's pattern names it before a hint's (a symptom pattern on
  // the same exception line: "It is possible that dataloader's workers are out of shared memory").
  if (role_rank(a->role) != role_rank(b->role)) return role_rank(a->role) < role_rank(b->role);
  if (a->line == b->line && a->source == b->source) return more_specific(a, b);
  if (a->priority != b->priority) return a->priority > b->priority;
  // "During handling of the above exception, another exception occurred": the first
  // exception is the cause, the later ones its consequences.
  if (a->chained_cause != b->chained_cause) return a->chained_cause;
  if (a->final_exception != b->final_exception) return a->final_exception;
  if (a->exception_line != b->exception_line) return a->exception_line;
  if (a->match_len != b->match_len) return a->match_len > b->match_len;
  return a->entry_id < b->entry_id;
}

}  // namespace

std::vector<const Incident*> incidents_view(const std::vector<Incident>& incidents) {
  std::vector<const Incident*> v;
  for (const auto& i : incidents) v.push_back(&i);
  return v;
}

namespace {

kb::Precedence precedence_of(const Incident& inc) {
  if (!inc.entry || !inc.hit) return kb::Precedence::kWeak;  // an unrecognised crash
  for (const auto& p : inc.entry->patterns) {
    if (p.id == inc.hit->pattern_id) return p.precedence;
  }
  return inc.role == kb::Role::kCollateral ? kb::Precedence::kCollateral : kb::Precedence::kRoot;
}

}  // namespace

// Step 1 (ARCHITECTURE.md, Reasoning), incidents: one per traceback (with the KB hits inside it), one per hit outside.
void build_incidents(Ctx& c) {
  // (source, first line) -> the tracebacks starting there, one per rank. A hit on a
  // traceback's lines belongs to the traceback of its rank; a hit whose pattern captured a
  // rank the traceback's lines do not carry (or the reverse) still belongs to it.
  const bool wrappers = c.on(Rule::kWrapperCause);
  std::map<std::pair<uint32_t, uint64_t>, std::vector<size_t>> traceback_incident;
  for (const Event& e : c.events) {
    if (e.kind != EventKind::kException) continue;
    Incident inc;
    inc.decisive = &e;
    inc.exc_type = e.exc_type;
    inc.members.push_back(&e);
    traceback_incident[{e.source, e.traceback_first}].push_back(c.incidents.size());
    c.incidents.push_back(std::move(inc));
  }
  // The exception lines of the tracebacks, by (source, line): a hit on one whose event was
  // not marked as inside the traceback (its pattern captured another rank) still names it.
  std::map<std::pair<uint32_t, uint64_t>, size_t> exception_line_incident;
  for (size_t i = 0; i < c.incidents.size(); ++i)
    exception_line_incident.emplace(std::make_pair(c.incidents[i].decisive->source, c.incidents[i].decisive->line), i);
  // A paste that starts at PyTorch's re-raised exception ("X: Caught X in DataLoader worker
  // process 0.") has the worker's "Original Traceback (most recent call last):" right
  // below it, and no header of its own: the line is that traceback's first exception, as
  // it is in the whole traceback (the wrapped, final exception stays decisive).
  auto original_traceback_below = [&](const Event& e) -> Incident* {
    auto it = traceback_incident.find({e.source, e.line + 1});
    if (it == traceback_incident.end() || it->second.size() != 1) return nullptr;
    Incident& inc = c.incidents[it->second[0]];
    for (const auto& [line, text] : inc.decisive->context_before) {
      if (line == e.line + 1) return starts_with(trim(text), "Original Traceback") ? &inc : nullptr;
    }
    return nullptr;
  };
  auto traceback_of = [&](const Event& e) -> Incident* {
    if (e.traceback_last == 0) {
      auto at = exception_line_incident.find({e.source, e.line});
      return at == exception_line_incident.end() ? original_traceback_below(e) : &c.incidents[at->second];
    }
    auto it = traceback_incident.find({e.source, e.traceback_first});
    if (it == traceback_incident.end()) return nullptr;
    Incident* loose = nullptr;
    for (size_t i : it->second) {
      Incident& inc = c.incidents[i];
      if (inc.decisive->rank == e.rank) return &inc;
      if (inc.decisive->rank < 0 || e.rank < 0) loose = &inc;
    }
    return it->second.size() == 1 ? loose : nullptr;
  };
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
    if (Incident* tb = traceback_of(e)) {
      Incident& inc = *tb;
      inc.members.push_back(&e);
      // Only hits on the traceback's exception lines (and their continuation) name it;
      // a frame's source line does not.
      if (e.line >= inc.decisive->line || e.exception_line || e.traceback_last == 0) {
        if (!inc.hit || better_hit(c.kb, wrappers, &e, inc.hit)) inc.hit = &e;
      }
      continue;
    }
    // Several entries can match one line: one incident, named by the most specific
    // hit (the KB rule: priority, then the longest match, then the id).
    auto line_key = std::make_pair(e.source, e.line);
    if (auto it = line_incident.find(line_key); it != line_incident.end()) {
      Incident& inc = c.incidents[it->second];
      inc.members.push_back(&e);
      int w = wrappers ? wrapper_order(c.kb, &e, inc.hit) : 0;
      if (w < 0 || (w == 0 && more_specific(&e, inc.hit))) inc.hit = inc.decisive = &e;
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

namespace {

void name_unrecognised(Ctx& c, Incident& inc, const Event& dec) {
  inc.entry = nullptr;
  inc.id = "unrecognized." + inc.exc_type;
  inc.title = "Unrecognised " + inc.exc_type;
  inc.category = guess_exception_category(c.kb, inc.exc_type, raising_frame(inc, dec));
  inc.role = c.on(Rule::kTeardownIsCollateral) && is_teardown_exception(c.kb, inc.exc_type) ? kb::Role::kCollateral
                                                                                            : kb::Role::kRoot;
}

}  // namespace

// Step 1, names: name each incident, give it a role, and a tier from the KB's precedence.
void name_incidents(Ctx& c) {
  for (Incident& inc : c.incidents) {
    const Event& dec = *inc.decisive;
    if (inc.hit) {
      inc.entry = c.kb.find(inc.hit->entry_id);
      inc.role = inc.hit->role;
      // The hit's own line is decisive when it is the final exception, its continuation,
      // or an exception that caused the rest; after "Original Traceback" the wrapped
      // (final) exception stays decisive and the hit only names the entry.
      if (dec.kind == EventKind::kPattern || inc.hit->line > dec.line || inc.hit->chained_cause) inc.decisive = inc.hit;
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
    if (inc.entry && !inc.entry->wrapper && c.on(Rule::kWrapperCause)) {
      for (const Event* m : inc.members) {
        if (m != inc.hit && m->kind == EventKind::kPattern && is_wrapper_hit(c.kb, m)) {
          inc.wrapper = m;
          break;
        }
      }
    }
    const Event& de = *inc.decisive;
    inc.rank = de.rank;
    inc.node = de.node;
    if (inc.rank >= 0) inc.rank_source = "log prefix";
    // The exception line's own words name the rank ("Rank 3: found NaN ..."), which the
    // naming hit captured on that very line.
    if (inc.rank < 0 && inc.hit && inc.hit != &de && inc.hit->source == de.source && inc.hit->line == de.line &&
        inc.hit->rank >= 0) {
      inc.rank = inc.hit->rank;
      inc.rank_source = "the message";
    }
    bool in_summary = de.in_launcher_summary;
    if (inc.rank < 0 && in_summary && de.summary_rank >= 0) {
      inc.rank = de.summary_rank;
      inc.rank_source = "launcher summary";
    }
    if (inc.role == kb::Role::kRoot && (inc.entry == nullptr || entry_is_failure(inc.entry))) {
      kb::Precedence p = precedence_of(inc);
      if (!c.on(Rule::kPrecedence)) p = kb::Precedence::kRoot;  // every failure alike: time alone decides
      if (in_summary)
        inc.tier = kSummary;
      else if (p == kb::Precedence::kHardware)
        inc.tier = kHardware;
      else if (p == kb::Precedence::kWeak)
        inc.tier = kWeak;
      else if (p == kb::Precedence::kCollateral)
        inc.tier = kCollateralOnly;
      else if (p == kb::Precedence::kRoot)
        inc.tier = kRecognised;
    } else if (inc.role == kb::Role::kCollateral && !in_summary) {
      inc.tier = kCollateralOnly;
    }
  }
}

namespace {

// Lines apart within which a wrapper line printed on its own (not in a traceback: a C++
// `what():`, a launcher's exit line, NCCL's error printed by the watchdog) takes the
// specific failure of the same stream as its cause: the detail lines come just before it
// (NCCL's WARN lines, the signal) or just after (`Last error:`).
constexpr uint64_t kWrapperLinesBefore = 40;
constexpr uint64_t kWrapperLinesAfter = 6;

bool same_stream(const Event& a, const Event& b) {
  return a.source == b.source && (a.rank == b.rank || a.rank < 0 || b.rank < 0);
}

}  // namespace

// Step 1, wrappers: a wrapper's incident whose cause printed nearby on the same stream is
// that cause's (the cause names it, the wrapper is kept as its evidence); a wrapper with no
// cause in sight is a weak candidate, so any specific failure of the job names it first.
void absorb_wrappers(Ctx& c) {
  if (!c.on(Rule::kWrapperCause)) return;
  for (Incident& w : c.incidents) {
    if (w.tier == kNone || w.tier == kSummary || !w.entry || !w.entry->wrapper) continue;
    const Event& we = *w.decisive;
    Incident* cause = nullptr;
    for (Incident& k : c.incidents) {
      if (&k == &w || k.tier == kNone || k.tier == kSummary || !k.hit || !is_cause_hit(c.kb, k.hit)) continue;
      const Event& ke = *k.decisive;
      if (!same_stream(ke, we)) continue;
      if (ke.line + kWrapperLinesBefore < we.line || ke.line > we.line + kWrapperLinesAfter) continue;
      if (!cause || ke.line > cause->decisive->line) cause = &k;  // the nearest before (or after) it
    }
    if (cause) {
      if (!cause->wrapper) cause->wrapper = w.hit ? w.hit : &we;
      w.tier = kNone;
    } else if (w.tier < kWeak) {
      w.tier = kWeak;
    }
  }
}

// A hang at exit (corpus CATEGORIES.md rule 8): a teardown line whose entry names an
// `after_completion` entry, after the run reported its completion, is no failure's
// consequence but the workers not exiting; the first such line is that entry's failure.
// A failure printed before it still comes first by time (choose_primary).
void name_hang_at_exit(Ctx& c) {
  if (!c.on(Rule::kHangAtExit) || c.completions.empty()) return;
  // The order choose_primary uses (clocks compared only when both lines have the same kind
  // of time); the node offsets are not estimated yet, so none apply.
  const Clocks none;
  auto before = [&](const Event& a, const Event& b) { return earlier(&a, &b, none); };
  Incident* first = nullptr;
  for (Incident& inc : c.incidents) {
    if (!inc.entry || inc.entry->after_completion.empty() || inc.decisive->in_launcher_summary) continue;
    bool after = false;
    for (const Event* done : c.completions) after = after || before(*done, *inc.decisive);
    if (after && (!first || before(*inc.decisive, *first->decisive))) first = &inc;
  }
  if (!first) return;
  const kb::Entry* to = c.kb.find(first->entry->after_completion);
  if (!to) return;
  first->entry = to;
  first->id = to->id;
  first->title = to->title;
  first->category = to->category;
  first->role = kb::Role::kRoot;
  first->tier = kRecognised;
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

namespace {

// The last step a rank logged before a line (from the series' points), or NaN.
double step_before(const metrics::SeriesSet& set, int rank, const Event& e) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const auto& [key, s] : set.all()) {
    if (key.second != rank) continue;
    for (const auto& p : s.points) {
      bool before = p.source == e.source
                        ? p.line < e.line
                        : (p.time_us != INT64_MIN && e.time_us != record::kNoTime && p.time_us < e.time_us);
      if (before && !(p.step <= best)) best = p.step;
    }
  }
  return best;
}

}  // namespace

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
    // A line with no rank in another file (a node's kernel log, the scheduler's) says
    // nothing of a rank going on; and only full dates compare across files (a syslog
    // time has no year, a time of day no date).
    if (e.rank < 0 && last.source != e.source) continue;
    bool timed = last.time_us != INT64_MIN && e.time_us != record::kNoTime && e.clock == record::Clock::kWall;
    bool after = last.source == e.source ? last.line > e.line : (timed && last.time_us > e.time_us);
    if (!after) continue;
    double before = step_before(*c.numbers.series, e.rank, e);
    double gained = std::isnan(before) ? last.step : last.step - before;
    double need =
        timed && last.time_us > e.time_us ? kTuning.recovered_min_steps_timed : kTuning.recovered_min_steps_untimed;
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

// Step 2, order: the initiating failure: best tier, then earliest (node clocks aligned).
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
    c.rank_how = c.rank < 0                                 ? RankSource::kNone
                 : c.primary->decisive->in_launcher_summary ? RankSource::kLauncherSummary
                                                            : RankSource::kPrefix;
    c.rank_source = c.primary->rank_source;
    c.node = c.primary->node;
  }
}

}  // namespace ff::analyze::detail
