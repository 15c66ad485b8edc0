// scan.merge.cc — Merger, phase B: the chunks of a source in order, through the state
// that depends on the lines before (traceback joiners, the launcher summary, "raised:"
// wrappers, per-pattern caps, inherited times, the lines before an event), their facts
// and series applied, the events handed to the sink in line order.
#include <algorithm>
#include <cstdlib>

#include "scan/scan_internal.h"

namespace ff::scan::detail {

Merger::Merger(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt)
    : engine_(engine), sink_(sink), job_(job), opt_(opt) {}

void Merger::process(Chunk& c) {
  switch (c.kind) {
    case Chunk::Kind::kBegin: begin(c); break;
    case Chunk::Kind::kLines: lines(c); break;
    case Chunk::Kind::kEnd: end(c); break;
  }
}

void Merger::flush_settled() {
  if (summary_.active()) return;
  uint64_t open_from = UINT64_MAX;
  for (int rank : active_joiners_) {
    auto it = joiners_.find(rank);
    if (it != joiners_.end() && it->second.active())
      open_from = std::min<uint64_t>(open_from, it->second.current().first_line);
  }
  for (const auto& [rank, w] : wrapper_) open_from = std::min<uint64_t>(open_from, w.line);
  for (auto& f : summary_.take()) pending_.push_back(summary_event(f));
  emit_pending(open_from);
}

void Merger::settle() {
  finish_open();
  active_joiners_.clear();
  wrapper_.clear();
  summary_ = record::LauncherSummaryTracker();
  emit_pending(UINT64_MAX);
}

void Merger::live_stats(uint64_t bytes, uint64_t lines) {
  stats().bytes = bytes;
  stats().lines = lines;
  stats().ranks.assign(ranks_seen_.begin(), ranks_seen_.end());
  if (!stats().name_origin.node.empty()) {
    for (int r : name_ranks_) stats().rank_node.emplace(r, stats().name_origin.node);
  }
}

void Merger::begin(const Chunk& c) {
  source_ = static_cast<uint32_t>(job_.sources.size());
  job_.sources.push_back({});
  stats().name = c.src->info.name;
  stats().encoding = c.src->info.encoding;
  stats().name_origin = c.src->name_origin;
  joiners_.clear();
  active_joiners_.clear();
  exception_meta_.clear();
  summary_ = record::LauncherSummaryTracker();
  pending_.clear();
  per_pattern_.clear();
  last_time_.clear();
  ranks_seen_.clear();
  name_ranks_.clear();
  wrapper_.clear();
  rank_header_.clear();
  recent_.clear();
  seq_ = 0;
  shrank_ = false;
}

std::string Merger::context_text(std::string_view raw, bool plain, std::string& buf) {
  std::string_view t = plain ? raw : record::clean_line_view(raw, buf);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
  if (t.size() > record::Event::kContextLineBytes) t = t.substr(0, record::Event::kContextLineBytes);
  return sanitize_utf8(t);
}

void Merger::add_context(record::Event& e, const Chunk& c, size_t i, int rank) {
  if (context_snapshots_ >= kMaxContextSnapshots) return;
  ++context_snapshots_;
  const ChunkResult& r = c.res;
  std::string buf;
  size_t looked = 0;
  auto& out = e.context_before;
  for (size_t k = i; k-- > 0 && looked < record::Event::kContextWindow && out.size() < record::Event::kContextLines;
       ++looked) {
    if (r.rank[k] != rank) continue;
    out.emplace_back(c.first_line + k, context_text(c.line(k), c.lines[k].plain, buf));
  }
  for (auto it = recent_.rbegin();
       it != recent_.rend() && looked < record::Event::kContextWindow && out.size() < record::Event::kContextLines;
       ++it, ++looked) {
    if (it->rank != rank) continue;
    out.emplace_back(it->number, context_text(it->raw, it->plain, buf));
  }
  std::reverse(out.begin(), out.end());
}

void Merger::remember_recent(const Chunk& c) {
  const size_t n = c.lines.size();
  const size_t from = n > record::Event::kContextWindow ? n - record::Event::kContextWindow : 0;
  for (size_t k = from; k < n; ++k) {
    std::string_view raw = c.line(k);
    // Raw bytes may hold escapes that cleaning removes: keep room for them.
    if (raw.size() > 4 * record::Event::kContextLineBytes) raw = raw.substr(0, 4 * record::Event::kContextLineBytes);
    recent_.push_back({c.first_line + k, c.res.rank[k], static_cast<bool>(c.lines[k].plain), std::string(raw)});
  }
  while (recent_.size() > record::Event::kContextWindow) recent_.pop_front();
}

bool Merger::stream_busy(int rank) const {
  return summary_.active() || active_joiners_.count(rank) != 0 || wrapper_.count(rank) != 0;
}

void Merger::lines(Chunk& c) {
  ChunkResult& r = c.res;
  const size_t n = c.lines.size();
  metric_events_.clear();
  dropped_.assign(r.hits.size(), false);
  size_t mi = 0, hi = 0;
  size_t i = 0;
  while (i < n) {
    if (!busy()) {
      // Nothing open: only the marked lines can change anything.
      while (mi < r.marks.size() && r.marks[mi] < i) ++mi;
      if (mi == r.marks.size()) break;
      i = r.marks[mi];
    }
    while (mi < r.marks.size() && r.marks[mi] < i) ++mi;
    const bool marked = mi < r.marks.size() && r.marks[mi] == i;
    if (marked || stream_busy(r.rank[i])) {
      while (hi < r.hits.size() && r.hits[hi].line < i) ++hi;
      size_t he = hi;
      while (he < r.hits.size() && r.hits[he].line == i) ++he;
      walk(c, i, hi, he);
      hi = he;
    }
    ++i;
  }
  // Facts, in line order; those of dropped hits were never stated.
  for (const Fact& f : r.facts) {
    if (f.event >= 0 && dropped_[static_cast<size_t>(f.event)]) continue;
    if (f.pid_fact) {
      if (stats().pid_rank.size() < kMaxRanksTracked) stats().pid_rank.emplace(std::make_pair(f.node, f.pid), f.rank);
    } else {
      if (stats().rank_node.size() < kMaxRanksTracked) stats().rank_node.emplace(f.rank, f.node);
    }
  }
  stats().lines_with_rank += r.lines_with_rank;
  stats().lines_with_time += r.lines_with_time;
  stats().traceback_starts += r.traceback_starts;
  for (int rank : r.ranks_seen) {
    if (ranks_seen_.size() < kMaxRanksTracked) ranks_seen_.insert(rank);
  }
  for (int rank : r.name_ranks) {
    if (name_ranks_.size() < kMaxRanksTracked) name_ranks_.insert(rank);
  }
  for (const auto& [rank, t] : r.last_time) {
    if (last_time_.size() < kMaxRanksTracked || last_time_.count(rank) != 0) last_time_[rank] = t;
  }
  if (r.max_time != record::kNoTime && (job_.last_time_us == record::kNoTime || r.max_time > job_.last_time_us)) {
    job_.last_time_us = r.max_time;
    job_.last_time_clock = r.max_clock;
  }
  remember_recent(c);
  // Every read of the chunk's lines is done (phase A, and B above and below): a mapped
  // window that shrank under them has said so by now.
  if (c.keep && c.keep->shrank()) shrank_ = true;
  if (metric_events_.empty()) {
    // The texts of the few points a series keeps: their lines' messages, parsed again.
    record::Record rec;
    job_.series.append(r.series, [&](uint32_t line) {
      reparse(c, line, rec);
      return rec.message;
    });
  } else {
    replay_series(c);
  }
}

void Merger::replay_series(Chunk& c) {
  size_t k = 0;
  for (size_t i = 0; i < c.lines.size(); ++i) {
    record::Record rec;
    reparse(c, i, rec);
    if (might_be_progress(rec.message) &&
        metrics::parse_progress_line(rec.message, engine_.metric_aliases(), progress_))
      job_.series.add(rec.rank, progress_, source_, c.first_line + i, rec.time_us, rec.message);
    for (; k < metric_events_.size() && metric_events_[k].first == i; ++k)
      add_captured_metrics(metric_events_[k].second);
  }
  c.res.series.clear();
}

void Merger::reparse(const Chunk& c, size_t i, record::Record& rec) {
  std::string_view line = c.clean_line(i, clean_);
  engine_.prefixes().parse(line, rec);
  apply_name_origin(rec, c.src->name_origin);
}

TimeMark Merger::time_before(const Chunk& c, size_t i, int rank) const {
  const TimeMark t = c.res.time_before(i, rank);
  if (t.us != record::kNoTime) return t;
  auto it = last_time_.find(rank);
  return it != last_time_.end() ? it->second : TimeMark{};
}

void Merger::walk(Chunk& c, size_t i, size_t hit_begin, size_t hit_end) {
  ChunkResult& r = c.res;
  record::Record rec;
  reparse(c, i, rec);
  const uint64_t number = c.first_line + i;
  const uint64_t offset = c.lines[i].offset;
  bool in_summary = summary_.feed(rec, number);
  int summary_rank = in_summary ? summary_.current_rank() : -1;
  if (engine_.identity().may_be_header(rec.message)) {
    if (const int named = engine_.identity().header_rank(rec.message); named >= 0)
      rank_header_[rec.rank] = {named, number};
  }

  // Tracebacks are joined per rank stream, so interleaved ranks do not mix.
  auto& joiner = joiners_[rec.rank];
  if (auto tb = joiner.feed(rec, number)) on_traceback(*tb, rec.rank);
  if (joiner.active()) {
    active_joiners_.insert(rec.rank);
  } else {
    active_joiners_.erase(rec.rank);
  }
  if (joiner.active() && !joiner.current().exceptions.empty() && joiner.current().exceptions.back().line == number) {
    record::Event e;
    e.kind = record::EventKind::kException;
    fill_context(e, rec, number, offset, c, i);
    add_context(e, c, i, r.rank[i]);
    e.in_launcher_summary = in_summary;
    e.summary_rank = summary_rank;
    exception_meta_[{rec.rank, number}] = std::move(e);
  }

  // "X raised:" (torch._dynamo's BackendCompilerFailed and similar wrappers) puts the
  // real exception on the next line of the stream: the hits of the wrapper line are
  // re-anchored there, so the decisive line is the cause, named by the wrapper's entry.
  if (auto w = wrapper_.find(rec.rank); w != wrapper_.end()) {
    std::string type, msg;
    if (record::parse_exception_line(rec.message, type, msg)) {
      for (size_t k = w->second.first; k < pending_.size(); ++k) {
        if (pending_[k].line != w->second.line || pending_[k].rank != rec.rank) continue;
        pending_[k].line = number;
        pending_[k].offset = offset;
        pending_[k].text = event_text(rec.message);
        pending_[k].exc_type = type;
      }
    }
    wrapper_.erase(w);  // only the line right after the wrapper (on its stream) counts
  }
  size_t first_new = pending_.size();
  for (size_t k = hit_begin; k < hit_end; ++k) {
    HitEvent& h = r.hits[k];
    uint64_t& count = per_pattern_[h.pattern];
    if (++count > opt_.max_events_per_pattern) {
      ++stats().events_dropped;
      dropped_[k] = true;
      continue;
    }
    record::Event e = std::move(h.e);
    if (h.inherit_time) {
      auto it = last_time_.find(h.time_rank);
      if (it != last_time_.end()) inherit_time(e, it->second);
    }
    e.in_launcher_summary = in_summary;
    e.summary_rank = summary_rank;
    if (joiner.active()) e.traceback_first = joiner.current().first_line;
    if (e.role == kb::Role::kRoot || e.role == kb::Role::kCollateral) add_context(e, c, i, r.rank[i]);
    if (h.metric_captures) metric_events_.emplace_back(i, e);
    pending_.push_back(std::move(e));
  }
  if (pending_.size() > first_new && ends_with(trim(rec.message), "raised:")) wrapper_[rec.rank] = {number, first_new};
  // An idle joiner holds nothing; keeping one per rank would let a hostile log (a
  // million distinct "[rankN]:" prefixes) grow memory without bound (issue 7).
  if (!joiner.active() && joiners_.size() > kMaxIdleJoiners) joiners_.erase(rec.rank);
}

void Merger::fill_context(record::Event& e, const record::Record& rec, uint64_t line, uint64_t offset, const Chunk& c,
                          size_t i) {
  rec.to_origin(e);
  e.source = source_;
  e.line = line;
  e.offset = offset;
  if (rec.time_us != record::kNoTime) {
    e.time_text = std::string(rec.time_text);
  } else {
    inherit_time(e, time_before(c, i, rec.rank));
  }
  e.text = event_text(rec.message);
}

void Merger::add_captured_metrics(const record::Event& e) {
  for (const auto& [name, value] : e.captures) {
    if (name.size() < 3 || name.compare(0, 2, "m_") != 0) continue;
    metrics::MetricId id = engine_.metric_aliases().id(std::string_view(name).substr(2));
    if (id == metrics::kNoMetric) continue;
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    double step = -1;
    if (auto st = e.captures.find("step"); st != e.captures.end())
      step = std::strtod(st->second.c_str(), nullptr);
    else if (auto lp = job_.series.last_progress().find(e.rank); lp != job_.series.last_progress().end())
      step = lp->second.step;
    job_.series.add_sample(e.rank, id, step, v, source_, e.line, e.time_us, e.text);
  }
}

void Merger::on_traceback(const record::Traceback& tb, int rank) {
  if (tb.exceptions.empty()) return;
  const auto& fin = tb.exceptions.back();
  auto it = exception_meta_.find({rank, fin.line});
  record::Event e;
  if (it != exception_meta_.end()) e = it->second;
  e.kind = record::EventKind::kException;
  e.source = source_;
  e.line = fin.line;
  e.text = event_text(fin.text);
  e.exc_type = fin.type;
  e.exc_frame = fin.last_frame;
  e.frames = fin.frames;
  e.frames_dropped = fin.frames_dropped;
  e.traceback_first = tb.first_line;
  e.traceback_last = tb.last_line;
  e.exception_line = true;
  e.final_exception = true;
  for (size_t i = 0; i + 1 < tb.exceptions.size(); ++i) e.exc_chain.push_back(event_text(tb.exceptions[i].text));
  // A rank header right above the traceback (a blank line between at most) names its rank
  // where the stream does not.
  int named = -1;
  if (auto h = rank_header_.find(rank); h != rank_header_.end()) {
    if (h->second.second < tb.first_line && tb.first_line - h->second.second <= 2) named = h->second.first;
    if (h->second.second < tb.first_line) rank_header_.erase(h);
  }
  if (named >= 0 && e.rank < 0) e.rank = named;
  // Mark the pattern events that lie inside this traceback, on the same stream.
  for (auto rit = pending_.rbegin(); rit != pending_.rend(); ++rit) {
    if (rit->kind == record::EventKind::kPattern && rit->line < tb.first_line) break;
    if (rit->kind != record::EventKind::kPattern || rit->rank != rank || rit->line > tb.last_line) continue;
    if (named >= 0 && rit->rank < 0) rit->rank = named;
    rit->traceback_first = tb.first_line;
    rit->traceback_last = tb.last_line;
    for (const auto& x : tb.exceptions) {
      if (x.line == rit->line) {
        rit->exception_line = true;
        rit->exc_type = x.type;
        rit->chained_cause = x.chained_cause;
        rit->frames = x.frames;
        rit->frames_dropped = x.frames_dropped;
      }
    }
    rit->final_exception = rit->line == fin.line;
  }
  for (const auto& x : tb.exceptions) exception_meta_.erase({rank, x.line});
  pending_.push_back(std::move(e));
}

record::Event Merger::summary_event(const record::LauncherFailure& f) const {
  record::Event e;
  e.kind = record::EventKind::kLauncherFailure;
  e.source = source_;
  e.line = f.error_line ? f.error_line : f.line;
  e.rank = f.rank;
  e.local_rank = f.local_rank;
  e.pid = f.pid;
  e.node = f.host;
  e.time_text = f.time_text;
  int64_t us;
  record::Clock clock;
  bool sub;
  if (record::parse_time(f.time_text, "torchrun", us, clock, sub)) {
    e.time_us = us;
    e.clock = clock;
    e.time_subsecond = sub;
  }
  e.text = event_text(f.error);
  e.in_launcher_summary = true;
  e.summary_rank = f.rank;
  e.exitcode = f.exitcode;
  e.summary_root_cause = f.root_cause;
  return e;
}

void Merger::finish_open() {
  for (auto& [rank, joiner] : joiners_) {
    if (auto tb = joiner.finish()) on_traceback(*tb, rank);
  }
  for (const auto& f : summary_.take()) pending_.push_back(summary_event(f));
}

void Merger::emit_pending(uint64_t before) {
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const record::Event& a, const record::Event& b) { return a.line < b.line; });
  size_t n = 0;
  while (n < pending_.size() && pending_[n].line < before) ++n;
  for (size_t k = 0; k < n; ++k) {
    pending_[k].seq = ++seq_;
    sink_.event(pending_[k]);
  }
  stats().events += n;
  if (n == pending_.size()) {
    pending_.clear();
  } else if (n > 0) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<long>(n));
  }
  // The wrappers' indexes into pending_ moved (they look for their line from there).
  for (auto& [rank, w] : wrapper_) w.first = 0;
}

void Merger::end(const Chunk& c) {
  finish_open();
  emit_pending(UINT64_MAX);
  stats().bytes = c.source_bytes;
  stats().lines = c.total_lines;
  stats().ranks.assign(ranks_seen_.begin(), ranks_seen_.end());
  // Ranks whose lines only the file name places on a node: the name is the evidence.
  if (!stats().name_origin.node.empty()) {
    for (int r : name_ranks_) stats().rank_node.emplace(r, stats().name_origin.node);
  }
  stats().lines_cut = c.cut_lines;
  if (!c.status.ok()) {
    stats().ok = false;
    stats().error = c.status.error().to_string();
  } else if (shrank_ || c.shrank) {
    // io delivered every window before the file was cut; the pages the cut took away
    // read as zeros (io::MappedWindow), so what the source says past the cut is lost.
    Error e = make_error(ErrorCode::kIo, io::kShrankMessage, {c.src->info.name, 0, ""});
    stats().ok = false;
    stats().error = e.to_string();
    job_.errors.push_back(std::move(e));
  }
  job_.lines += stats().lines;
  job_.bytes += stats().bytes;
  if (c.cut_lines > 0) {
    job_.notes.push_back(c.src->info.name + ": " + std::to_string(c.cut_lines) + " line(s) longer than " +
                         std::to_string(opt_.max_line) + " bytes were examined up to that length");
  }
}

}  // namespace ff::scan::detail
