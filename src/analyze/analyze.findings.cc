// analyze.findings.cc — step 4: the primary finding filled in (traceback, context, fix), collateral
// grouped by entry, hypotheses, symptoms and the timeline.
#include <algorithm>
#include <map>
#include <set>

#include "analyze/analyze_internal.h"
#include "base/strings.h"
#include "template/template.h"

namespace ff::analyze::detail {

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

// A rank's last progress line (its step's point and the text the series kept) as evidence.
Evidence progress_evidence(const JobNumbers& numbers, int rank, const metrics::Point& pt,
                           const std::vector<SourceSummary>& sources) {
  Evidence e;
  e.source = pt.source < sources.size() ? sources[pt.source].name : "";
  e.line = pt.line;
  if (rank >= 0) e.rank = rank;
  if (pt.time_us != record::kNoTime) e.time = format_time(pt.time_us, numbers.last_time_clock);
  e.text = std::string(numbers.series->last_progress_text(rank));
  return e;
}

namespace {

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

// The long tail: no entry names the failure line. The category is a guess from the raising
// frame, the closest known failures by the message's words, or the type, said as a guess
// with what it was inferred from and a lower confidence.
void fill_guess(const Ctx& c, const Incident& inc, const Event& de, Finding& f) {
  std::vector<JobNumbers::NearEntry> near;
  if (c.numbers.nearest_entries) near = c.numbers.nearest_entries(de.text);
  const Guess g = guess_failure(c.kb, inc.exc_type, raising_frame(inc, de),
                                c.on(Rule::kGuessFromWords) ? near : std::vector<JobNumbers::NearEntry>{});
  f.basis = "guess";
  f.category = g.category;
  f.guess_from = g.from;
  f.guess_evidence = g.evidence;
  for (const auto& n : near) {
    if (f.closest.size() >= 3 || n.share < kGuessMinShare / 2) break;
    if (const kb::Entry* e = c.kb.find(n.id)) f.closest.push_back({e->id, e->title, e->category, n.share});
  }
  f.confidence = std::min(f.confidence, g.from == "type" ? 0.4 : 0.5);
  const std::string what = inc.exc_type.empty() ? std::string("a failure") : inc.exc_type;
  std::string from = g.from == "frame"   ? "the frame that raised it (" + g.evidence + ")"
                     : g.from == "words" ? "the closest known failure by its words (" + g.evidence + ")"
                                         : "its exception type (" + g.evidence + ")";
  f.summary = "No knowledge-base entry matches this message. The process raised " + what + "; the category (" +
              g.category + ") is a guess, inferred from " + from + ".";
  if (!f.closest.empty()) {
    f.summary += " Closest known failures:";
    for (size_t i = 0; i < f.closest.size(); ++i) f.summary += (i ? ", " : " ") + f.closest[i].id;
    f.summary += " (entries of `firstfault explain`).";
  }
  f.root_cause =
      "Read the decisive line and the traceback above it: the last frame in your own code is "
      "usually where to start.";
  f.fix = {"Reproduce on one process (no launcher) with the same inputs to get the full traceback.",
           "Search the message: firstfault search '" + de.text.substr(0, 80) + "'"};
  f.verify = "Rerun the job and check that `firstfault diagnose` on the new log no longer reports " + inc.id;
}

}  // namespace

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
  // A hang found by another rung of the rank ladder still gets its collective read.
  if (!c.hang && primary->category == "hang") {
    Hang h = analyse_hang(c.events, incidents_view(c.incidents), c.launcher_failures, c.sources);
    if (h.seq >= 0 || h.timeout_ms > 0 || !h.timed_out.empty()) c.hang = std::move(h);
  }
  if (c.hang) add_last_progress(*c.hang, c.numbers, c.sources);
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
    f.verify_where = e.verify_where;
    f.verify_expect = e.verify_expect;
    for (const auto& r : e.references) f.references.push_back(r.url);
  } else {
    fill_guess(c, *primary, de, f);
  }
  if (primary->wrapper && primary->entry) {
    f.basis = "wrapper-cause";
    f.wrapper_id = primary->wrapper->entry_id;
    f.wrapper_line = to_evidence(*primary->wrapper, c.sources);
    if (std::none_of(f.evidence.begin(), f.evidence.end(), [&](const Evidence& e) {
          return e.line == f.wrapper_line->line && e.source == f.wrapper_line->source;
        }))
      f.evidence.push_back(*f.wrapper_line);
  }
  c.d.primary = std::move(f);
}

// Step 4, collateral: everything else that failed or reacted, grouped by id.
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

// Step 4, hypotheses: other strong candidates with a different id than the primary.
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
    h.why = "also a failure on " +
            (inc.rank >= 0 ? "rank " + std::to_string(inc.rank) : std::string("an unknown rank")) +
            ", but later than the primary (or on a weaker signal)";
    h.evidence.push_back(to_evidence(*inc.decisive, c.sources));
    h.separate_by =
        "Check which of the two happened first on the affected rank's own log; rerun with the "
        "primary's fix and see whether this one remains.";
    c.d.hypotheses.push_back(std::move(h));
    if (c.d.hypotheses.size() >= 5) break;
  }
}

// Step 4, symptoms and warnings seen (deduplicated by entry).
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

// Step 4, timeline: incidents in order, those of one entry in one role merged.
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
    std::string role = inc == c.primary
                           ? "root"
                           : (inc->role == kb::Role::kRoot && c.primary ? "collateral" : kb::role_name(inc->role));
    auto key = std::make_pair(inc->id, role);
    auto it = tl_index.find(key);
    if (it == tl_index.end()) {
      TimelineEntry t;
      t.time = inc->decisive->time_text;
      // A line without a stamp of its own (a traceback's) is dated by the last stamp its
      // stream printed before it: "~" says the time is the stream's, not the line's.
      if (t.time.empty() && inc->decisive->time_us != record::kNoTime) {
        const std::string stream_time = format_time(inc->decisive->time_us, inc->decisive->clock);
        if (!stream_time.empty()) t.time = "~" + stream_time;
      }
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
    // No rank named for the incident (every rank failed alike): the decisive line's own.
    if (r < 0) r = inc->decisive->rank;
    if (r >= 0 && std::find(t.ranks.begin(), t.ranks.end(), r) == t.ranks.end()) t.ranks.push_back(r);
    if (!inc->node.empty() && std::find(t.nodes.begin(), t.nodes.end(), inc->node) == t.nodes.end())
      t.nodes.push_back(inc->node);
  }
  for (auto& t : c.d.timeline) std::sort(t.ranks.begin(), t.ranks.end());
  if (c.d.timeline.size() > 50) c.d.timeline.resize(50);
}

}  // namespace ff::analyze::detail
