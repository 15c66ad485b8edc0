#include "scan/scan.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>

#include "base/strings.h"
#include "io/io.h"

namespace ff::scan {

Result<std::shared_ptr<const Engine>> Engine::create(const kb::KnowledgeBase& kb, const EngineOptions& options) {
  std::shared_ptr<Engine> e(new Engine(kb));
  std::vector<match::PatternSpec> specs;
  for (size_t i = 0; i < kb.entries.size(); ++i) {
    for (size_t j = 0; j < kb.entries[i].patterns.size(); ++j) {
      specs.push_back({static_cast<uint32_t>(e->refs_.size()), kb.entries[i].patterns[j].regex});
      e->refs_.push_back({i, j});
    }
  }
  match::CompileOptions mo;
  mo.cache_dir = options.cache_dir;
  mo.cache_key = kb.hash;
  mo.use_vectorscan = options.use_vectorscan;
  FF_TRY(e->db_, match::Database::compile(specs, mo));
  for (const auto& r : e->db_->rejected()) {
    if (r.backend == "vectorscan" && r.message == "rejected (cached)") continue;
    const auto& ref = e->refs_.at(r.id);
    const kb::Entry& entry = kb.entries[ref.entry];
    const kb::Pattern& p = entry.patterns[ref.pattern];
    e->warnings_.push_back(make_error(ErrorCode::kInvalidKb,
                                      r.backend + " rejected the pattern (" + r.message + ")" +
                                          (r.backend == "vectorscan" ? "; RE2 serves it, more slowly" : ""),
                                      {entry.file, p.line, "patterns." + p.id}));
  }
  FF_TRY(e->prefixes_, record::PrefixParser::create(kb.prefixes));
  FF_TRY(e->source_names_, record::PrefixParser::create(kb.source_names));
  e->aliases_ = metrics::Aliases::from_kb(kb.metric_specs);
  return std::shared_ptr<const Engine>(std::move(e));
}

record::Origin Engine::origin_of_source(std::string_view name) const {
  // The formats are anchored at the start of what they are given: try the whole name,
  // then every suffix that follows a '/'; the first that says something wins.
  std::vector<std::string_view> tails{name};
  for (size_t p = name.find('/'); p != std::string_view::npos; p = name.find('/', p + 1)) tails.push_back(name.substr(p + 1));
  record::Origin o;
  for (std::string_view tail : tails) {
    record::Record rec;
    source_names_->parse(tail, rec);
    if (rec.rank >= 0 && o.rank < 0) o.rank = rec.rank;
    if (rec.local_rank >= 0 && o.local_rank < 0) o.local_rank = rec.local_rank;
    if (!rec.node.empty() && o.node.empty()) o.node = rec.node;
  }
  return o;
}

namespace {

constexpr size_t kMaxEventText = 2000;

// A cheap test before the progress-line tokenizer: progress lines name a step, an
// iteration or a loss, or a rate.
bool might_be_progress(std::string_view m) {
  return m.find("loss") != std::string_view::npos || m.find("step") != std::string_view::npos ||
         m.find("iter") != std::string_view::npos || m.find("/s") != std::string_view::npos;
}
constexpr size_t kMaxRanksTracked = 1 << 20;

std::string event_text(std::string_view s) {
  s = trim(s);
  if (s.size() > kMaxEventText) s = s.substr(0, kMaxEventText);
  return sanitize_utf8(s);
}

// Per-source state: framing, parsing, tracebacks per rank stream, launcher summary.
class SourceScanner : public io::ByteSink {
 public:
  SourceScanner(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt)
      : engine_(engine), sink_(sink), job_(job), opt_(opt), scanner_(engine.db()) {}

  void begin(const io::SourceInfo& info) override {
    source_ = static_cast<uint32_t>(job_.sources.size());
    job_.sources.push_back({});
    stats().name = info.name;
    stats().encoding = info.encoding;
    stats().name_origin = engine_.origin_of_source(info.name);
    framer_ = record::LineFramer(opt_.max_line);
    joiners_.clear();
    summary_ = record::LauncherSummaryTracker();
    pending_.clear();
    per_pattern_.clear();
    last_time_.clear();
    ranks_seen_.clear();
    name_ranks_.clear();
    wrapper_.clear();
  }

  void data(std::string_view chunk) override {
    stats().bytes += chunk.size();
    framer_.feed(chunk, [this](const record::RawLine& l) { on_line(l); });
  }

  void end(const io::SourceInfo& info, const Status& status) override {
    framer_.finish([this](const record::RawLine& l) { on_line(l); });
    for (auto& [rank, joiner] : joiners_) {
      if (auto tb = joiner.finish()) on_traceback(*tb, rank);
    }
    for (const auto& f : summary_.take()) {
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
      pending_.push_back(std::move(e));
    }
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const record::Event& a, const record::Event& b) { return a.line < b.line; });
    for (auto& e : pending_) {
      e.seq = ++seq_;
      sink_.event(e);
    }
    stats().events += pending_.size();
    pending_.clear();
    stats().lines = framer_.lines();
    stats().ranks.assign(ranks_seen_.begin(), ranks_seen_.end());
    // Ranks whose lines only the file name places on a node: the name is the evidence.
    if (!stats().name_origin.node.empty()) {
      for (int r : name_ranks_) stats().rank_node.emplace(r, stats().name_origin.node);
    }
    stats().lines_cut = framer_.cut_lines();
    if (!status.ok()) {
      stats().ok = false;
      stats().error = status.error().to_string();
    }
    job_.lines += stats().lines;
    job_.bytes += stats().bytes;
    if (framer_.cut_lines() > 0) {
      job_.notes.push_back(info.name + ": " + std::to_string(framer_.cut_lines()) +
                           " line(s) longer than " + std::to_string(opt_.max_line) +
                           " bytes were examined up to that length");
    }
  }

 private:
  SourceStats& stats() { return job_.sources[source_]; }

  void fill_context(record::Event& e, const record::Record& rec, uint64_t line, uint64_t offset) {
    static_cast<record::Origin&>(e) = rec;
    e.source = source_;
    e.line = line;
    e.offset = offset;
    if (rec.time_us != record::kNoTime) {
      e.time_text = std::string(rec.time_text);
    } else {
      // A line without its own time (a traceback line) inherits the last time seen on
      // its stream, marked as not sub-second so that it never wins a close race.
      auto it = last_time_.find(rec.rank);
      if (it != last_time_.end()) {
        e.time_us = it->second.us;
        e.clock = it->second.clock;
        e.time_subsecond = false;
      }
    }
    e.text = event_text(rec.message);
  }

  void on_line(const record::RawLine& raw) {
    record::clean_line(raw.bytes, clean_);
    record::Record rec;
    engine_.prefixes().parse(clean_, rec);
    bool line_states_node = !rec.node.empty();
    apply_name_origin(rec);
    if (!line_states_node && rec.rank >= 0) name_ranks_.insert(rec.rank);
    if (rec.rank >= 0) {
      ++stats().lines_with_rank;
      if (ranks_seen_.size() < kMaxRanksTracked) ranks_seen_.insert(rec.rank);
    }
    if (rec.rank >= 0 && line_states_node) {
      if (stats().rank_node.size() < kMaxRanksTracked) stats().rank_node.emplace(rec.rank, rec.node);
      if (rec.pid >= 0 && stats().pid_rank.size() < kMaxRanksTracked)
        stats().pid_rank.emplace(std::make_pair(rec.node, rec.pid), rec.rank);
    }
    if (rec.time_us != record::kNoTime) {
      ++stats().lines_with_time;
      last_time_[rec.rank] = {rec.time_us, rec.clock};
      if (rec.clock == record::Clock::kWall || rec.clock == record::Clock::kWallNoYear) {
        if (job_.last_time_us == record::kNoTime || rec.time_us > job_.last_time_us) {
          job_.last_time_us = rec.time_us;
          job_.last_time_clock = rec.clock;
        }
      }
    }
    if (might_be_progress(rec.message) && metrics::parse_progress_line(rec.message, engine_.metric_aliases(), progress_))
      job_.series.add(rec.rank, progress_, source_, raw.number, rec.time_us, rec.message);
    bool in_summary = summary_.feed(rec, raw.number);
    int summary_rank = in_summary ? summary_.current_rank() : -1;

    // Tracebacks are joined per rank stream, so interleaved ranks do not mix.
    auto& joiner = joiners_[rec.rank];
    if (auto tb = joiner.feed(rec, raw.number)) on_traceback(*tb, rec.rank);
    if (joiner.active() && !joiner.current().exceptions.empty() &&
        joiner.current().exceptions.back().line == raw.number) {
      exception_meta_[{rec.rank, raw.number}] = make_exception_event(rec, raw, in_summary, summary_rank);
    }

    // "X raised:" (torch._dynamo's BackendCompilerFailed and similar wrappers) puts the
    // real exception on the next line of the stream: the hits of the wrapper line are
    // re-anchored there, so the decisive line is the cause, named by the wrapper's entry.
    if (auto w = wrapper_.find(rec.rank); w != wrapper_.end()) {
      std::string type, msg;
      if (record::parse_exception_line(rec.message, type, msg)) {
        for (size_t i = w->second.first; i < pending_.size(); ++i) {
          if (pending_[i].line != w->second.line || pending_[i].rank != rec.rank) continue;
          pending_[i].line = raw.number;
          pending_[i].offset = raw.offset;
          pending_[i].text = event_text(rec.message);
          pending_[i].exc_type = type;
        }
      }
      wrapper_.erase(w);  // only the line right after the wrapper (on its stream) counts
    }
    size_t first_new = pending_.size();
    hits_.clear();
    scanner_.scan(rec.message, hits_);
    for (uint32_t id : hits_) {
      const auto& ref = engine_.ref(id);
      uint64_t& n = per_pattern_[id];
      if (++n > opt_.max_events_per_pattern) {
        ++stats().events_dropped;
        continue;
      }
      const kb::Entry& entry = engine_.kb().entries[ref.entry];
      const kb::Pattern& pat = entry.patterns[ref.pattern];
      record::Event e;
      e.kind = record::EventKind::kPattern;
      fill_context(e, rec, raw.number, raw.offset);
      e.entry_id = entry.id;
      e.pattern_id = pat.id;
      e.role = pat.role;
      e.priority = pat.priority;
      std::pair<size_t, size_t> span{0, 0};
      engine_.db().captures(id, rec.message, &e.captures, &span);
      e.match_len = span.second - span.first;
      apply_captured_identity(e);
      add_captured_metrics(e);
      e.in_launcher_summary = in_summary;
      e.summary_rank = summary_rank;
      if (joiner.active()) e.traceback_first = joiner.current().first_line;
      pending_.push_back(std::move(e));
    }
    if (pending_.size() > first_new && ends_with(trim(rec.message), "raised:"))
      wrapper_[rec.rank] = {raw.number, first_new};
  }

  // A pattern that captures `rank` / `node` (NCCL "comm ... rank 3", srun "task 3",
  // "Rank 3") states who the line is about; the line's prefix still wins when it has one.
  void apply_captured_identity(record::Event& e) {
    auto rank = e.captures.find("rank");
    long long n = 0;
    if (rank != e.captures.end() && parse_int(rank->second, n) && n < 100000000) {
      if (e.rank < 0) e.rank = static_cast<int>(n);
      if (!e.node.empty() && e.pid >= 0 && stats().pid_rank.size() < kMaxRanksTracked)
        stats().pid_rank.emplace(std::make_pair(e.node, e.pid), static_cast<int>(n));
      if (!e.node.empty() && stats().rank_node.size() < kMaxRanksTracked) stats().rank_node.emplace(static_cast<int>(n), e.node);
    }
    auto node = e.captures.find("node");
    if (node != e.captures.end() && e.node.empty()) e.node = node->second;
  }

  // Captures named m_<metric> ("(?P<m_loss_scale>[0-9.]+)") are samples of that metric,
  // at the captured `step` or the rank's last step.
  void add_captured_metrics(const record::Event& e) {
    for (const auto& [name, value] : e.captures) {
      if (name.size() < 3 || name.compare(0, 2, "m_") != 0) continue;
      metrics::MetricId id = engine_.metric_aliases().id(std::string_view(name).substr(2));
      if (id == metrics::kNoMetric) continue;
      char* end = nullptr;
      double v = std::strtod(value.c_str(), &end);
      if (end == value.c_str()) continue;
      double step = -1;
      if (auto st = e.captures.find("step"); st != e.captures.end()) step = std::strtod(st->second.c_str(), nullptr);
      else if (auto lp = job_.series.last_progress().find(e.rank); lp != job_.series.last_progress().end()) step = lp->second.step;
      job_.series.add_sample(e.rank, id, step, v, source_, e.line, e.time_us, e.text);
    }
  }

  void apply_name_origin(record::Record& rec) {
    const record::Origin& o = stats().name_origin;
    if (rec.rank < 0) rec.rank = o.rank;
    if (rec.local_rank < 0) rec.local_rank = o.local_rank;
    if (rec.node.empty() && !o.node.empty()) rec.node = o.node;
  }

  record::Event make_exception_event(const record::Record& rec, const record::RawLine& raw, bool in_summary,
                                     int summary_rank) {
    record::Event e;
    e.kind = record::EventKind::kException;
    fill_context(e, rec, raw.number, raw.offset);
    e.in_launcher_summary = in_summary;
    e.summary_rank = summary_rank;
    return e;
  }

  void on_traceback(const record::Traceback& tb, int rank) {
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
    e.traceback_first = tb.first_line;
    e.traceback_last = tb.last_line;
    e.exception_line = true;
    e.final_exception = true;
    for (size_t i = 0; i + 1 < tb.exceptions.size(); ++i) e.exc_chain.push_back(event_text(tb.exceptions[i].text));
    // Mark the pattern events that lie inside this traceback, on the same stream.
    for (auto rit = pending_.rbegin(); rit != pending_.rend(); ++rit) {
      if (rit->kind == record::EventKind::kPattern && rit->line < tb.first_line) break;
      if (rit->kind != record::EventKind::kPattern || rit->rank != rank || rit->line > tb.last_line) continue;
      rit->traceback_first = tb.first_line;
      rit->traceback_last = tb.last_line;
      for (const auto& x : tb.exceptions) {
        if (x.line == rit->line) {
          rit->exception_line = true;
          rit->exc_type = x.type;
          rit->chained_cause = x.chained_cause;
        }
      }
      rit->final_exception = rit->line == fin.line;
    }
    for (const auto& x : tb.exceptions) exception_meta_.erase({rank, x.line});
    pending_.push_back(std::move(e));
  }

  struct TimeMark {
    int64_t us;
    record::Clock clock;
  };

  const Engine& engine_;
  EventSink& sink_;
  JobStats& job_;
  const ScanOptions& opt_;
  match::Scanner scanner_;
  uint32_t source_ = 0;
  uint64_t seq_ = 0;
  record::LineFramer framer_;
  std::map<int, record::TracebackJoiner> joiners_;
  std::map<std::pair<int, uint64_t>, record::Event> exception_meta_;
  record::LauncherSummaryTracker summary_;
  std::vector<record::Event> pending_;
  std::unordered_map<uint32_t, uint64_t> per_pattern_;
  std::unordered_map<int, TimeMark> last_time_;
  std::vector<uint32_t> hits_;
  std::string clean_;
  metrics::ProgressLine progress_;
  std::set<int> ranks_seen_;
  std::set<int> name_ranks_;  // ranks seen on lines that do not name their node
  struct Wrapper {
    uint64_t line;   // the "... raised:" line
    size_t first;    // its first event in pending_
  };
  std::unordered_map<int, Wrapper> wrapper_;
};

}  // namespace

JobStats scan_job(const Engine& engine, const std::vector<std::string>& inputs, EventSink& sink,
                  const ScanOptions& options) {
  JobStats job;
  SourceScanner scanner(engine, sink, job, options);
  io::InputReport rep = io::read_inputs(inputs, scanner, options.read);
  for (auto& e : rep.errors) job.errors.push_back(std::move(e));
  for (auto& n : rep.notes) job.notes.push_back(std::move(n));
  return job;
}

namespace {
class TextSource {
 public:
  static void run(io::ByteSink& sink, std::string_view name, std::string_view text) {
    io::SourceInfo info{std::string(name), text.size(), "plain"};
    sink.begin(info);
    sink.data(text);
    sink.end(info, Status::Ok());
  }
};
}  // namespace

JobStats scan_text(const Engine& engine, std::string_view name, std::string_view text, EventSink& sink,
                   const ScanOptions& options) {
  JobStats job;
  SourceScanner scanner(engine, sink, job, options);
  TextSource::run(scanner, name, text);
  return job;
}

}  // namespace ff::scan
