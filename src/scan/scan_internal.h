// scan/scan_internal.h — what the scan module's files share and no other module needs:
// the chunk model (Chunk, its lines and ChunkResult), and the three stages a chunk goes
// through: Chunker (scan.chunk.cc: io's bytes → chunks of whole lines), LineWorker
// (scan.lines.cc: phase A) and Merger (scan.merge.cc: phase B). scan.run.cc drives them
// on one thread or as a pipeline, scan.live.cc for sources that grow.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/strings.h"
#include "io/io.h"
#include "scan/scan.h"

// ---------------------------------------------------------------------------------------
// Threads
//
// A job is cut into chunks: runs of whole lines of one source (about chunk_bytes each),
// framed by a reading thread that also decompresses. Each chunk then goes through two
// phases:
//
//   A (any thread, in parallel): clean and parse every line, read progress lines into a
//     SeriesBatch, run the matcher, build the events of the hits as far as the line alone
//     tells, gather per-chunk facts (ranks seen, rank -> node, the last time per rank).
//     Nothing here depends on the lines before the chunk.
//   B (one thread at a time, chunks in order): everything that does. The traceback
//     joiners, the launcher summary and the "X raised:" wrappers are state machines: B
//     feeds them only the lines that can change them (the lines A marked: hits,
//     "Traceback (most recent call last):", a summary header) and, while one of them is
//     open, the lines of that stream. Then it applies the chunk's facts in their order,
//     appends the SeriesBatch, and counts each pattern's events against its cap.
//
// B reaches, line by line, the state the one-line-at-a-time scan would have reached, so
// the events, series and statistics are the same for any thread count and chunk size
// (tests/e2e checks 1 vs 2 threads; the unit tests in metrics check SeriesBatch).
// Where A cannot know enough (a hit with metric captures reads the series as it stands
// at that line), B replays that chunk's progress lines one by one.

namespace ff::scan::detail {

inline constexpr size_t kMaxEventText = 2000;
inline constexpr size_t kJoinedMinLines = 256;  // lines in a chunk for one matcher pass over all
inline constexpr size_t kMaxRanksTracked = 1 << 20;
inline constexpr size_t kMaxIdleJoiners = 4096;  // traceback joiners kept for ranks with none open

// A cheap test before the progress-line tokeniser: progress lines name a step, an
// iteration or a loss, or a rate.
inline bool might_be_progress(std::string_view m) {
  return m.find("loss") != std::string_view::npos || m.find("step") != std::string_view::npos ||
         m.find("iter") != std::string_view::npos || m.find("/s") != std::string_view::npos;
}

inline std::string event_text(std::string_view s) {
  s = trim(s);
  if (s.size() > kMaxEventText) s = s.substr(0, kMaxEventText);
  return sanitize_utf8(s);
}

// LauncherSummaryTracker's header test (the needle has no blank, so it is in the trimmed
// message when it is in the message).
inline constexpr std::string_view kSummaryWord = "ChildFailedError";
inline bool is_summary_header(std::string_view message) {
  return message.find(kSummaryWord) != std::string_view::npos && ends_with(trim(message), ":");
}

inline void apply_name_origin(record::Record& rec, const record::Origin& o) {
  if (rec.rank < 0) rec.rank = o.rank;
  if (rec.local_rank < 0) rec.local_rank = o.local_rank;
  if (rec.node.empty() && !o.node.empty()) rec.node = o.node;
}

struct TimeMark {
  int64_t us = record::kNoTime;
  record::Clock clock = record::Clock::kNone;
};

// The one rule for a line without its own time (a traceback line): it inherits the last
// time seen on its stream (t), marked as not sub-second so that it never wins a close
// race. False when the stream has had no time yet (e is left without one).
inline bool inherit_time(record::Event& e, const TimeMark& t) {
  if (t.us == record::kNoTime) return false;
  e.time_us = t.us;
  e.clock = t.clock;
  e.time_subsecond = false;
  return true;
}

// A byte buffer that grows without zero-filling (io reads straight into it).
class Bytes {
 public:
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max(n, cap_ * 2);
    std::unique_ptr<char[]> d(new char[cap]);
    if (size_ > 0) std::memcpy(d.get(), data_.get(), size_);
    data_ = std::move(d);
    cap_ = cap;
  }
  void append(std::string_view s) {
    reserve(size_ + s.size());
    if (!s.empty()) std::memcpy(data_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }
  void commit(size_t n) { size_ += n; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, cap_ = 0;
};

struct SourceCtx {
  uint32_t index = 0;
  io::SourceInfo info;
  record::Origin name_origin;  // what the source's name says (kb/formats/sources.yaml)
};

struct LineRef {
  uint64_t offset;  // in the source
  uint32_t pos;     // in the chunk's bytes (or side bytes)
  uint32_t len : 30;
  uint32_t side : 1;   // the line spanned reads: its bytes were copied to the side buffer
  uint32_t plain : 1;  // nothing to clean (RawLine::plain)
};

// A fact about who runs where, applied in line order (first one wins, as emplace).
struct Fact {
  uint32_t line;  // index in the chunk: the order they are applied in
  bool pid_fact;  // (node, pid) -> rank; else rank -> node
  int rank;
  int pid;
  std::string node;
  int32_t event = -1;  // the hit it comes from (dropped over the cap: the fact is too), or -1
};

// A hit's event, built in phase A as far as its line alone tells.
struct HitEvent {
  uint32_t line;                 // index in the chunk
  uint32_t pattern;              // database id
  int time_rank;                 // the line's stream, for a time taken from an earlier line
  bool over_cap = false;         // already over the cap within this chunk: counted, not built
  bool inherit_time = false;     // no time on the stream in this chunk before: B fills it in
  bool metric_captures = false;  // has m_<metric> captures (B adds them to the series)
  record::Event e;
};

struct ChunkResult {
  // Per line: the stream (rank) and its own time, for B's walks and inherited times.
  std::vector<int32_t> rank;
  std::vector<int64_t> time_us;
  std::vector<uint8_t> clock;
  std::vector<uint32_t> marks;  // lines B must feed to its state machines, ascending
  std::vector<HitEvent> hits;   // in line order
  std::vector<Fact> facts;      // in line order
  uint64_t lines_with_rank = 0;
  uint64_t lines_with_time = 0;
  uint64_t traceback_starts = 0;
  std::vector<int> ranks_seen;                      // distinct ranks, in first-seen order
  std::vector<int> name_ranks;                      // distinct ranks on lines that do not name their node
  std::vector<std::pair<int, TimeMark>> last_time;  // per rank, its last time in the chunk
  int64_t max_time = record::kNoTime;               // the latest wall-clock time (first one on a tie)
  record::Clock max_clock = record::Clock::kNone;
  bool metric_captures = false;
  metrics::SeriesBatch series;

  void clear() {
    rank.clear();
    time_us.clear();
    clock.clear();
    marks.clear();
    hits.clear();
    facts.clear();
    lines_with_rank = lines_with_time = traceback_starts = 0;
    ranks_seen.clear();
    name_ranks.clear();
    last_time.clear();
    max_time = record::kNoTime;
    max_clock = record::Clock::kNone;
    metric_captures = false;
    series.clear();
  }

  // The last time on `rank`'s stream before line i of the chunk (none: the stream had no
  // time in the chunk before it).
  TimeMark time_before(size_t i, int rank) const {
    for (size_t k = i; k-- > 0;) {
      if (this->rank[k] == rank && time_us[k] != record::kNoTime)
        return {time_us[k], static_cast<record::Clock>(clock[k])};
    }
    return {};
  }
};

struct Chunk {
  enum class Kind : uint8_t { kBegin, kLines, kEnd };
  Kind kind = Kind::kLines;
  uint64_t seq = 0;
  std::shared_ptr<const SourceCtx> src;
  Bytes bytes;
  Bytes side;
  std::vector<LineRef> lines;
  uint64_t first_line = 0;  // number of lines[0]
  // kEnd
  Status status;
  uint64_t source_bytes = 0, total_lines = 0, cut_lines = 0;
  bool shrank = false;  // kEnd: a window of the source came up short while the reader framed it
  ChunkResult res;

  // A chunk of a mapped file (io's data_mapped) has its lines in the mapping: `mapped`
  // is the window's start (LineRef::pos counts from there) and `keep` holds it mapped.
  const char* mapped = nullptr;
  std::shared_ptr<const io::MappedWindow> keep;

  std::string_view line(size_t i) const {
    const LineRef& l = lines[i];
    return std::string_view((l.side ? side.data() : mapped != nullptr ? mapped : bytes.data()) + l.pos, l.len);
  }
  // Line i as record::clean_line_view gives it (buf holds a cleaned copy when needed): the
  // line itself when the framer found nothing to clean in it.
  std::string_view clean_line(size_t i, std::string& buf) const {
    return lines[i].plain ? line(i) : record::clean_line_view(line(i), buf);
  }
  // Done with the lines: the window may be unmapped (the events hold copies).
  void release_mapping() {
    mapped = nullptr;
    keep.reset();
  }
  void reset(Kind k) {
    kind = k;
    src.reset();
    bytes.clear();
    side.clear();
    lines.clear();
    first_line = 0;
    release_mapping();
    status = Status::Ok();
    source_bytes = total_lines = cut_lines = 0;
    shrank = false;
    res.clear();
  }
};

// Ranks -> a small dense index, for per-line bookkeeping without a map lookup: ranks
// -1..65535 through a direct table, others through a hash map. Cleared per chunk.
class RankIndex {
 public:
  // The slot of rank (created when new: `fresh` says so).
  uint32_t slot(int rank, bool& fresh) {
    fresh = false;
    if (rank >= -1 && rank < kDirect) {
      // The direct table grows with the largest rank seen (a pasted snippet does not pay
      // for 65,536 entries).
      const size_t at = static_cast<size_t>(rank + 1);
      if (at >= direct_.size())
        direct_.resize(std::max<size_t>(at + 1, std::min<size_t>(2 * direct_.size(), kDirect + 1)), -1);
      int32_t& d = direct_[at];
      if (d < 0) {
        d = static_cast<int32_t>(ranks_.size());
        ranks_.push_back(rank);
        fresh = true;
      }
      return static_cast<uint32_t>(d);
    }
    auto [it, inserted] = other_.emplace(rank, static_cast<uint32_t>(ranks_.size()));
    if (inserted) {
      ranks_.push_back(rank);
      fresh = true;
    }
    return it->second;
  }
  size_t size() const { return ranks_.size(); }
  int rank(uint32_t slot) const { return ranks_[slot]; }
  void clear() {
    for (int r : ranks_) {
      if (r >= -1 && r < kDirect) direct_[static_cast<size_t>(r + 1)] = -1;
    }
    ranks_.clear();
    other_.clear();
  }

 private:
  static constexpr int kDirect = 65536;
  std::vector<int32_t> direct_;
  std::vector<int> ranks_;
  std::unordered_map<int, uint32_t> other_;
};

class LineWorker {
 public:
  // `grids`: the job's series grids (SeriesSet::grids), to drop samples off them early.
  LineWorker(const Engine& engine, const ScanOptions& opt, const metrics::StepGrids* grids);

  void run(Chunk& c);

 private:
  // What a line of a kept progress shape can be, from the shape's text alone (remembered
  // per shape id): a traceback start or a summary header (their texts hold no number, so
  // only if the shape's text has one of them), and a message with residue glued to it
  // (only if the text holds a glue byte: no byte of a number is one, see glue_in_numbers_).
  // And whether no pattern can match a line of the shape (match::Database::
  // may_match_between_numbers): such lines are left out of the matcher's pass.
  struct ShapeFlags {
    uint32_t id = 0;  // 0: none
    bool may_mark = false, may_glue = false;
    int8_t match_free = -1;  // -1: not asked yet
  };
  ShapeFlags& shape_flags(uint32_t id);
  // Whether a line of this kept shape needs no matching (asked only once this worker has
  // read ScanOptions::skip_matching_after lines: the atoms, when not cached, cost a tenth
  // of a second, which short inputs never pay).
  bool match_free(uint32_t shape);
  uint64_t lines_read_ = 0;

  struct PerRank {
    bool seen = false, name_rank = false, node_fact = false;
    TimeMark time;  // the last time on this stream so far in the chunk
  };
  // (node, pid) facts already stated in the chunk. The set owns its node strings and is
  // searched with views (transparent hash and equality), so a line costs no allocation.
  using PidKey = std::pair<std::string, int>;
  using PidKeyView = std::pair<std::string_view, int>;
  struct PidKeyHash {
    using is_transparent = void;
    size_t operator()(const PidKeyView& k) const {
      return std::hash<std::string_view>()(k.first) ^ (static_cast<size_t>(k.second) * 0x9e3779b97f4a7c15ull);
    }
    size_t operator()(const PidKey& k) const { return (*this)(PidKeyView{k.first, k.second}); }
  };
  struct PidKeyEq {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return a.second == b.second && std::string_view(a.first) == std::string_view(b.first);
    }
  };

  // The chunk's messages were joined in one text: one matcher pass finds the few lines
  // that may match, and those alone are matched one by one (the same hits as matching
  // every line: see Scanner::candidate_lines).
  void match_joined(Chunk& c);

  void add_hit(Chunk& c, size_t i, uint64_t number, uint32_t id, const record::Record& rec, const TimeMark& before);

  const Engine& engine_;
  const ScanOptions& opt_;
  match::Scanner scanner_;
  std::string clean_;
  metrics::ProgressLine progress_;
  metrics::ProgressParser progress_parser_;
  std::array<ShapeFlags, 8> shape_flags_{};
  size_t next_shape_flags_ = 0;
  // A glue byte that a number can hold (a digit, a sign, '.', 'e', a letter of nan or
  // infinity): then every line is searched for glue, as PrefixParser::parse does.
  bool glue_in_numbers_ = false;
  const metrics::StepGrids* grids_;
  std::vector<uint32_t> hits_;
  RankIndex slots_;
  std::vector<PerRank> per_rank_;
  std::unordered_map<uint32_t, uint64_t> local_hits_;
  std::unordered_set<PidKey, PidKeyHash, PidKeyEq> pid_facts_;
  std::string joined_;          // the chunk's messages that need matching, each ended by '\n'
  std::vector<uint32_t> ends_;  // offset of each message's '\n' in joined_
  std::vector<uint32_t> joined_lines_;  // the chunk's line of each message in joined_
  std::vector<uint32_t> candidates_, hit_lines_;
};

class Merger {
 public:
  Merger(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt);

  void process(Chunk& c);

  // Live sources (LiveScan): the events that nothing open on the source's streams can
  // still change come out now: all of them when nothing is open, else those before the
  // first line of what is open (a traceback being joined, a "raised:" wrapper; during a
  // launcher summary, none).
  void flush_settled();
  // Live sources gone quiet: what is open is closed as at the source's end, and every
  // event comes out; the source's next lines start with nothing open.
  void settle();
  bool holds_open() const { return busy(); }
  // The source's statistics as far as it has been read (end() sets them for good).
  void live_stats(uint64_t bytes, uint64_t lines);

 private:
  SourceStats& stats() { return job_.sources[source_]; }

  void begin(const Chunk& c);

  // The text of a line before an event, as shown: cleaned, trimmed on the right, capped.
  static std::string context_text(std::string_view raw, bool plain, std::string& buf);

  // Gives e the lines before line i of the chunk on its stream (issue 15: the context an
  // engineer asks for first), for the first kMaxContextSnapshots failure events of the
  // job; kept bounded: Event::kContextLines lines out of the kContextWindow before it.
  void add_context(record::Event& e, const Chunk& c, size_t i, int rank);

  // After a chunk: its last lines join the window of lines before the next chunk's events.
  void remember_recent(const Chunk& c);

  bool busy() const { return summary_.active() || !active_joiners_.empty() || !wrapper_.empty(); }
  bool stream_busy(int rank) const;

  void lines(Chunk& c);

  // The series of a chunk with metric captures: its progress lines and the captured
  // samples, one at a time in line order, as the one-line scan adds them.
  void replay_series(Chunk& c);

  void reparse(const Chunk& c, size_t i, record::Record& rec);

  // The last time on `rank`'s stream before line i of the chunk (or before the chunk).
  TimeMark time_before(const Chunk& c, size_t i, int rank) const;

  // One line, through the state machines and the cap, as the one-line scan does it.
  void walk(Chunk& c, size_t i, size_t hit_begin, size_t hit_end);

  void fill_context(record::Event& e, const record::Record& rec, uint64_t line, uint64_t offset, const Chunk& c,
                    size_t i);

  // Captures named m_<metric> ("(?P<m_loss_scale>[0-9.]+)") are samples of that metric,
  // at the captured `step` or the rank's last step.
  void add_captured_metrics(const record::Event& e);

  void on_traceback(const record::Traceback& tb, int rank);

  // The launcher summary's failure rows, as events.
  record::Event summary_event(const record::LauncherFailure& f) const;

  // Closes the tracebacks still being joined and the launcher summary (the source ends).
  void finish_open();

  // Hands the pending events before line `before` to the sink, in line order.
  void emit_pending(uint64_t before);

  void end(const Chunk& c);

  const Engine& engine_;
  EventSink& sink_;
  JobStats& job_;
  const ScanOptions& opt_;
  uint32_t source_ = 0;
  uint64_t seq_ = 0;
  std::map<int, record::TracebackJoiner> joiners_;
  std::set<int> active_joiners_;
  std::map<std::pair<int, uint64_t>, record::Event> exception_meta_;
  record::LauncherSummaryTracker summary_;
  std::vector<record::Event> pending_;
  std::unordered_map<uint32_t, uint64_t> per_pattern_;
  std::unordered_map<int, TimeMark> last_time_;
  std::set<int> ranks_seen_;
  std::set<int> name_ranks_;  // ranks seen on lines that do not name their node
  struct Wrapper {
    uint64_t line;  // the "... raised:" line
    size_t first;   // its first event in pending_
  };
  std::unordered_map<int, Wrapper> wrapper_;
  // Per stream, the last rank header ("-- Process 1 terminated with the following error:"):
  // the rank it names and its line; the traceback that starts right below takes that rank.
  std::unordered_map<int, std::pair<int, uint64_t>> rank_header_;
  std::vector<std::pair<size_t, record::Event>> metric_events_;  // (line in chunk, event) of this chunk
  std::vector<bool> dropped_;                                    // per hit of the chunk: over the cap
  std::string clean_;
  metrics::ProgressLine progress_;
  bool shrank_ = false;  // a mapped window of this source shrank under its chunks
  // The last Event::kContextWindow lines of the source before the current chunk (raw
  // bytes, capped): with the chunk's own lines, the "lines before" of an event, the same
  // for any chunk size.
  struct RecentLine {
    uint64_t number;
    int32_t rank;
    bool plain;
    std::string raw;
  };
  std::deque<RecentLine> recent_;
  size_t context_snapshots_ = 0;  // events given their lines before, in this job
  static constexpr size_t kMaxContextSnapshots = 256;
};

class Chunker : public io::ByteSink {
 public:
  // `emit` takes each finished chunk (in order); `recycle` gives a chunk to fill.
  Chunker(const Engine& engine, const ScanOptions& opt, std::function<void(std::unique_ptr<Chunk>)> emit,
          std::function<std::unique_ptr<Chunk>()> fresh);

  void begin(const io::SourceInfo& info) override;

  char* data_buffer(size_t size) override;

  void data(std::string_view piece) override;

  bool accepts_mapped() const override { return opt_.chunk_bytes >= kZeroCopyMin; }

  // Ends the chunk being filled (scan_text's pieces are copied in: without this a text
  // would be one chunk, and a chunk's work grows faster than its lines).
  void cut() { flush(); }

  // A window of a mapped file: cut into chunks of about chunk_bytes whose lines point into
  // the window (a line that starts in the window before comes from the framer's copy, in
  // `side`).
  void data_mapped(std::string_view window, std::shared_ptr<const io::MappedWindow> keep) override;

  // Live sources (LiveScan): each Chunker holds one source, numbered as the job's.
  void number_from(uint32_t first) { next_source_ = first; }
  // Sends the complete lines fed so far (a line still open waits for its end).
  void sync() { flush(); }
  uint64_t lines() const { return framer_.lines(); }
  uint64_t bytes() const { return source_bytes_; }

  void end(const io::SourceInfo&, const Status& status) override;

 private:
  static constexpr size_t kZeroCopyMin = 64 << 10;

  // Adds a framed line to chunk c: in place when its bytes lie in `piece`, whose first
  // byte is at `base` in the chunk's bytes (or mapped window); else copied to the chunk's
  // side buffer (a line begun in an earlier piece: the framer's copy).
  void add_line(Chunk& c, const record::RawLine& l, std::string_view piece, size_t base);

  bool keeps(const record::Record& rec) const;
  // gpu-node-7 is gpu-node-7.cluster.example (syslog writes the short name or the FQDN).
  static bool same_host(std::string_view a, std::string_view b);
  // train is train.service (a syslog tag names the program, systemd the unit).
  static bool same_unit(std::string_view a, std::string_view b);

 public:
  uint64_t left_out() const { return left_out_; }

 private:
  std::unique_ptr<Chunk> take(Chunk::Kind kind);
  // Chunks are numbered as they are sent: phase B takes them in this order.
  void send(std::unique_ptr<Chunk> c);

  // Sends the current chunk when it has lines, and starts the next.
  void flush();

  const Engine& engine_;
  const ScanOptions& opt_;
  std::function<void(std::unique_ptr<Chunk>)> emit_;
  std::function<std::unique_ptr<Chunk>()> fresh_;
  std::shared_ptr<const SourceCtx> src_;
  std::unique_ptr<Chunk> cur_;
  bool shrank_ = false;  // a mapped window of the current source shrank (io::MappedWindow)
  record::LineFramer framer_;
  uint32_t next_source_ = 0;
  uint64_t next_seq_ = 0;
  std::string filter_buf_;
  uint64_t left_out_ = 0;  // lines of other hosts or units (--host, --unit)
  uint64_t source_bytes_ = 0, total_bytes_ = 0;
};

}  // namespace ff::scan::detail
