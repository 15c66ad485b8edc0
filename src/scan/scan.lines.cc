// scan.lines.cc — LineWorker, phase A: every line of a chunk cleaned, its prefixes
// peeled, its progress numbers read into the chunk's SeriesBatch, matched (in one pass
// over the joined messages when the chunk is long), the hits' events built as far as the
// line alone tells, and the chunk's facts gathered. Any thread, in parallel.
#include <algorithm>
#include <iterator>

#include "scan/scan_internal.h"

namespace ff::scan::detail {

LineWorker::LineWorker(const Engine& engine, const ScanOptions& opt, const metrics::StepGrids* grids)
    : engine_(engine), opt_(opt), scanner_(engine.db()), progress_parser_(engine.metric_aliases()), grids_(grids) {
  const std::string& glue = engine.prefixes().glue_bytes();
  glue_in_numbers_ = glue.size() > 3 || glue.find_first_of("0123456789+-.eEiInNfFtTyYaA") != std::string::npos;
}

// Long because it is the per-line loop of phase A, the scan's hot path: each line's
// parse, facts, progress numbers, marks and match in one pass with the state in locals.
void LineWorker::run(Chunk& c) {
  if (c.kind != Chunk::Kind::kLines) return;
  ChunkResult& r = c.res;
  const SourceCtx& src = *c.src;
  const size_t n = c.lines.size();
  r.rank.resize(n);
  r.time_us.resize(n);
  r.clock.resize(n);
  slots_.clear();
  per_rank_.clear();
  local_hits_.clear();
  pid_facts_.clear();
  // Many lines: match them in one pass (a few lines, e.g. a pasted snippet, are matched
  // one by one, and the joined database is never loaded).
  const bool joined = n >= kJoinedMinLines && scanner_.joins_lines();
  joined_.clear();
  ends_.clear();
  joined_lines_.clear();
  lines_read_ += n;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t number = c.first_line + i;
    std::string_view line = c.clean_line(i, clean_);
    record::Record rec;
    // The prefixes, then the progress shape, then the glue search (PrefixParser::parse)
    // unless the line is of a shape whose text holds no glue byte: its numbers hold none
    // either, so the search would find nothing (a scan of every message's bytes spared).
    // When the search moves the message, the shape is looked up again on what is left
    // (the first lookup changed only the slots' value memos and the order the shapes are
    // tried in, and neither changes what a line reads as: a line fits one shape at most).
    engine_.prefixes().parse_prefixes(line, rec);
    bool known = progress_parser_.known(rec.message, progress_);
    if ((!known || glue_in_numbers_ || shape_flags(progress_.shape).may_glue) && engine_.prefixes().glue(rec))
      known = progress_parser_.known(rec.message, progress_);
    const bool line_states_node = !rec.node.empty();
    apply_name_origin(rec, src.name_origin);
    r.rank[i] = rec.rank;
    r.time_us[i] = rec.time_us;
    r.clock[i] = static_cast<uint8_t>(rec.clock);
    bool fresh;
    const uint32_t slot = slots_.slot(rec.rank, fresh);
    if (fresh) per_rank_.push_back(PerRank{});
    PerRank& pr = per_rank_[slot];
    if (!line_states_node && rec.rank >= 0 && !pr.name_rank) {
      pr.name_rank = true;
      r.name_ranks.push_back(rec.rank);
    }
    if (rec.rank >= 0) {
      ++r.lines_with_rank;
      if (!pr.seen) {
        pr.seen = true;
        r.ranks_seen.push_back(rec.rank);
      }
    }
    if (rec.rank >= 0 && line_states_node) {
      if (!pr.node_fact) {
        pr.node_fact = true;
        r.facts.push_back(Fact{static_cast<uint32_t>(i), false, rec.rank, -1, std::string(rec.node)});
      }
      // Looked up by view, stored as a copy: rec.node may point into clean_, which the
      // next line's cleaning overwrites or reallocates (a view kept here read freed memory).
      if (rec.pid >= 0 && pid_facts_.find(PidKeyView{rec.node, rec.pid}) == pid_facts_.end()) {
        pid_facts_.emplace(std::string(rec.node), rec.pid);
        r.facts.push_back(Fact{static_cast<uint32_t>(i), true, rec.rank, rec.pid, std::string(rec.node)});
      }
    } else if (rec.rank < 0 && line_states_node && rec.pid >= 0 &&
               pid_facts_.find(PidKeyView{rec.node, rec.pid}) == pid_facts_.end()) {
      // A line of a process that says which rank it is (NCCL's "Trees [0] 2/-1/-1->1->0"):
      // its (node, pid) is that rank, and the rank runs on the node.
      if (const int stated = engine_.identity().writer_rank(rec.message); stated >= 0) {
        pid_facts_.emplace(std::string(rec.node), rec.pid);
        r.facts.push_back(Fact{static_cast<uint32_t>(i), true, stated, rec.pid, std::string(rec.node)});
        r.facts.push_back(Fact{static_cast<uint32_t>(i), false, stated, -1, std::string(rec.node)});
      }
    }
    if (rec.time_us != record::kNoTime) {
      ++r.lines_with_time;
      pr.time = {rec.time_us, rec.clock};
      if ((rec.clock == record::Clock::kWall || rec.clock == record::Clock::kWallNoYear) &&
          (r.max_time == record::kNoTime || rec.time_us > r.max_time)) {
        r.max_time = rec.time_us;
        r.max_clock = rec.clock;
      }
    }
    // A line of a known progress shape has the words might_be_progress looks for (they
    // hold no digit, so they lie in the shape's text): test for them only before tokenising.
    if (known || (might_be_progress(rec.message) && progress_parser_.learn(rec.message, progress_)))
      r.series.add(rec.rank, progress_, src.index, number, rec.time_us, static_cast<uint32_t>(i), grids_);
    const bool starts = (!known || shape_flags(progress_.shape).may_mark) &&
                        (is_summary_header(rec.message) || record::may_start_traceback(rec.message));
    r.traceback_starts += starts;
    bool mark = starts || engine_.identity().may_be_header(rec.message);
    if (known && match_free(progress_.shape)) {
      // No pattern can match a line of this shape: nothing to match.
    } else if (joined) {
      // Matched below, all lines in one pass.
      joined_.append(rec.message);
      ends_.push_back(static_cast<uint32_t>(joined_.size()));
      joined_.push_back('\n');
      joined_lines_.push_back(static_cast<uint32_t>(i));
    } else {
      hits_.clear();
      scanner_.scan(rec.message, hits_);
      for (uint32_t id : hits_) {
        mark = true;
        add_hit(c, i, number, id, rec, pr.time);
      }
    }
    if (mark) r.marks.push_back(static_cast<uint32_t>(i));
  }
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    if (per_rank_[s].time.us != record::kNoTime) r.last_time.emplace_back(slots_.rank(s), per_rank_[s].time);
  }
  if (joined) match_joined(c);
}

bool LineWorker::match_free(uint32_t shape) {
  if (lines_read_ < opt_.skip_matching_after) return false;
  ShapeFlags& f = shape_flags(shape);
  if (f.match_free < 0) f.match_free = !engine_.db().may_match_between_numbers(progress_parser_.shape_pieces(shape));
  return f.match_free > 0;
}

LineWorker::ShapeFlags& LineWorker::shape_flags(uint32_t id) {
  for (ShapeFlags& f : shape_flags_) {
    if (f.id == id) return f;
  }
  const std::string_view text = progress_parser_.shape_text(id);
  ShapeFlags& f = shape_flags_[next_shape_flags_++ % shape_flags_.size()];
  f.id = id;
  f.match_free = -1;
  f.may_mark = text.find(kSummaryWord) != std::string_view::npos || record::may_start_traceback(text);
  f.may_glue = text.find_first_of(engine_.prefixes().glue_bytes()) != std::string_view::npos;
  return f;
}

void LineWorker::match_joined(Chunk& c) {
  ChunkResult& r = c.res;
  candidates_.clear();
  if (scanner_.candidate_lines(joined_, ends_, candidates_)) {
    for (uint32_t& k : candidates_) k = joined_lines_[k];  // a message of joined_ -> its line
  } else {
    candidates_ = joined_lines_;  // could not: every line that needs matching is a candidate
  }
  hit_lines_.clear();
  for (uint32_t i : candidates_) {
    record::Record rec;
    std::string_view line = c.clean_line(i, clean_);
    engine_.prefixes().parse(line, rec);
    apply_name_origin(rec, c.src->name_origin);
    hits_.clear();
    scanner_.scan(rec.message, hits_);
    if (hits_.empty()) continue;
    // The stream's last time before this line, as the one-pass loop had it.
    const TimeMark before = r.time_before(i, rec.rank);
    for (uint32_t id : hits_) add_hit(c, i, c.first_line + i, id, rec, before);
    hit_lines_.push_back(i);
  }
  if (hit_lines_.empty()) return;
  // Lines with hits join the marks; hit facts go to their place in line order (after
  // the prefix facts of the same line, as in the one-pass loop).
  std::vector<uint32_t> marks;
  marks.reserve(r.marks.size() + hit_lines_.size());
  std::merge(r.marks.begin(), r.marks.end(), hit_lines_.begin(), hit_lines_.end(), std::back_inserter(marks));
  marks.erase(std::unique(marks.begin(), marks.end()), marks.end());
  r.marks = std::move(marks);
  std::stable_sort(r.facts.begin(), r.facts.end(), [](const Fact& a, const Fact& b) { return a.line < b.line; });
}

void LineWorker::add_hit(Chunk& c, size_t i, uint64_t number, uint32_t id, const record::Record& rec,
                         const TimeMark& before) {
  ChunkResult& r = c.res;
  HitEvent h;
  h.line = static_cast<uint32_t>(i);
  h.pattern = id;
  h.time_rank = rec.rank;
  // Over the cap within this chunk alone: over it in the source too; only counted.
  if (++local_hits_[id] > opt_.max_events_per_pattern) {
    h.over_cap = true;
    r.hits.push_back(std::move(h));
    return;
  }
  const auto& ref = engine_.ref(id);
  const kb::Entry& entry = engine_.kb().entries[ref.entry];
  const kb::Pattern& pat = entry.patterns[ref.pattern];
  record::Event& e = h.e;
  e.kind = record::EventKind::kPattern;
  rec.to_origin(e);
  e.source = c.src->index;
  e.line = number;
  e.offset = c.lines[i].offset;
  if (rec.time_us != record::kNoTime) {
    e.time_text = std::string(rec.time_text);
  } else if (!inherit_time(e, before)) {
    h.inherit_time = true;  // no time on the stream in this chunk: phase B knows the one before
  }
  e.text = event_text(rec.message);
  e.entry_id = entry.id;
  e.pattern_id = pat.id;
  e.role = pat.role;
  e.priority = pat.priority;
  std::pair<size_t, size_t> span{0, 0};
  engine_.db().captures(id, rec.message, &e.captures, &span);
  e.match_len = span.second - span.first;
  // A pattern that captures `rank` / `node` (NCCL "comm ... rank 3", srun "task 3",
  // "Rank 3") states who the line is about; the line's prefix still wins when it has one.
  const int32_t event_index = static_cast<int32_t>(r.hits.size());
  auto cr = e.captures.find("rank");
  long long v = 0;
  if (cr != e.captures.end() && parse_int(cr->second, v) && v < 100000000) {
    if (e.rank < 0) e.rank = static_cast<int>(v);
    if (!e.node.empty() && e.pid >= 0)
      r.facts.push_back(Fact{h.line, true, static_cast<int>(v), e.pid, e.node, event_index});
    if (!e.node.empty()) r.facts.push_back(Fact{h.line, false, static_cast<int>(v), -1, e.node, event_index});
  }
  auto cn = e.captures.find("node");
  if (cn != e.captures.end() && e.node.empty()) e.node = cn->second;
  // The rest of the identity captures (kb/README.md): torchrun's "local_rank: 3", a
  // "Device: 3", a "PID 1177", when the prefix does not say.
  for (auto [name, field] :
       {std::pair<const char*, int*>{"local_rank", &e.local_rank}, {"gpu", &e.gpu}, {"pid", &e.pid}}) {
    auto it = e.captures.find(name);
    long long x = 0;
    if (it != e.captures.end() && *field < 0 && parse_int(it->second, x) && x >= 0 && x < 100000000)
      *field = static_cast<int>(x);
  }
  for (const auto& [name, value] : e.captures) {
    if (name.size() >= 3 && name.compare(0, 2, "m_") == 0) h.metric_captures = true;
  }
  if (h.metric_captures) r.metric_captures = true;
  r.hits.push_back(std::move(h));
}

}  // namespace ff::scan::detail
