#include "scan/scan.h"

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

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
    if (!rec.node.empty() && o.node.empty()) o.node = std::string(rec.node);
  }
  return o;
}

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

namespace {

constexpr size_t kMaxEventText = 2000;
constexpr size_t kJoinedMinLines = 256;  // lines in a chunk for one matcher pass over all
constexpr size_t kMaxRanksTracked = 1 << 20;
constexpr size_t kMaxIdleJoiners = 4096;  // traceback joiners kept for ranks with none open

// A cheap test before the progress-line tokenizer: progress lines name a step, an
// iteration or a loss, or a rate.
bool might_be_progress(std::string_view m) {
  return m.find("loss") != std::string_view::npos || m.find("step") != std::string_view::npos ||
         m.find("iter") != std::string_view::npos || m.find("/s") != std::string_view::npos;
}

std::string event_text(std::string_view s) {
  s = trim(s);
  if (s.size() > kMaxEventText) s = s.substr(0, kMaxEventText);
  return sanitize_utf8(s);
}

// LauncherSummaryTracker's header test (the needle has no blank, so it is in the trimmed
// message when it is in the message).
constexpr std::string_view kSummaryWord = "ChildFailedError";
bool is_summary_header(std::string_view message) {
  return message.find(kSummaryWord) != std::string_view::npos && ends_with(trim(message), ":");
}


void apply_name_origin(record::Record& rec, const record::Origin& o) {
  if (rec.rank < 0) rec.rank = o.rank;
  if (rec.local_rank < 0) rec.local_rank = o.local_rank;
  if (rec.node.empty() && !o.node.empty()) rec.node = o.node;
}

struct TimeMark {
  int64_t us = record::kNoTime;
  record::Clock clock = record::Clock::kNone;
};

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
  uint32_t line;      // index in the chunk: the order they are applied in
  bool pid_fact;      // (node, pid) -> rank; else rank -> node
  int rank;
  int pid;
  std::string node;
  int32_t event = -1;  // the hit it comes from (dropped over the cap: the fact is too), or -1
};

// A hit's event, built in phase A as far as its line alone tells.
struct HitEvent {
  uint32_t line;          // index in the chunk
  uint32_t pattern;       // database id
  int time_rank;          // the line's stream, for a time taken from an earlier line
  bool over_cap = false;  // already over the cap within this chunk: counted, not built
  bool inherit_time = false;  // no time on the stream in this chunk before: B fills it in
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
  std::vector<int> ranks_seen;  // distinct ranks, in first-seen order
  std::vector<int> name_ranks;  // distinct ranks on lines that do not name their node
  std::vector<std::pair<int, TimeMark>> last_time;  // per rank, its last time in the chunk
  int64_t max_time = record::kNoTime;  // the latest wall-clock time (first one on a tie)
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
    lines_with_rank = lines_with_time = 0;
    ranks_seen.clear();
    name_ranks.clear();
    last_time.clear();
    max_time = record::kNoTime;
    max_clock = record::Clock::kNone;
    metric_captures = false;
    series.clear();
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
      if (at >= direct_.size()) direct_.resize(std::max<size_t>(at + 1, std::min<size_t>(2 * direct_.size(), kDirect + 1)), -1);
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

// ---------------------------------------------------------------------------------------
// Phase A: one per thread.

class LineWorker {
 public:
  // `grids`: the job's series grids (SeriesSet::grids), to drop samples off them early.
  LineWorker(const Engine& engine, const ScanOptions& opt, const metrics::StepGrids* grids)
      : engine_(engine), opt_(opt), scanner_(engine.db()), progress_parser_(engine.metric_aliases()), grids_(grids) {}

  void run(Chunk& c) {
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
    for (size_t i = 0; i < n; ++i) {
      const uint64_t number = c.first_line + i;
      std::string_view line = c.clean_line(i, clean_);
      record::Record rec;
      engine_.prefixes().parse(line, rec);
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
      // hold no digit, so they lie in the shape's text): test for them only before tokenizing.
      const bool known = progress_parser_.known(rec.message, progress_);
      if (known || (might_be_progress(rec.message) && progress_parser_.learn(rec.message, progress_)))
        r.series.add(rec.rank, progress_, src.index, number, rec.time_us, static_cast<uint32_t>(i), grids_);
      bool mark = (!known || shape_may_mark(progress_.shape)) &&
                  (is_summary_header(rec.message) || record::may_start_traceback(rec.message));
      if (joined) {
        // Matched below, all lines in one pass.
        joined_.append(rec.message);
        ends_.push_back(static_cast<uint32_t>(joined_.size()));
        joined_.push_back('\n');
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

 private:
  // Whether a line of a kept progress shape can be a traceback start or a summary header:
  // their texts hold no number, so only if the shape's text has one of them (remembered
  // per shape id).
  bool shape_may_mark(uint32_t id) {
    for (const auto& [known_id, may] : shape_marks_) {
      if (known_id == id) return may;
    }
    const std::string_view text = progress_parser_.shape_text(id);
    const bool may = text.find(kSummaryWord) != std::string_view::npos || record::may_start_traceback(text);
    shape_marks_[next_shape_mark_++ % shape_marks_.size()] = {id, may};
    return may;
  }

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
  void match_joined(Chunk& c) {
    ChunkResult& r = c.res;
    candidates_.clear();
    if (!scanner_.candidate_lines(joined_, ends_, candidates_)) {
      candidates_.resize(c.lines.size());  // could not: every line is a candidate
      for (uint32_t i = 0; i < candidates_.size(); ++i) candidates_[i] = i;
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
      TimeMark before;
      for (size_t k = i; k-- > 0;) {
        if (r.rank[k] == rec.rank && r.time_us[k] != record::kNoTime) {
          before = {r.time_us[k], static_cast<record::Clock>(r.clock[k])};
          break;
        }
      }
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

  void add_hit(Chunk& c, size_t i, uint64_t number, uint32_t id, const record::Record& rec, const TimeMark& before) {
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
    } else if (before.us != record::kNoTime) {
      // A line without its own time (a traceback line) inherits the last time seen on
      // its stream, marked as not sub-second so that it never wins a close race.
      e.time_us = before.us;
      e.clock = before.clock;
      e.time_subsecond = false;
    } else {
      h.inherit_time = true;
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
      if (!e.node.empty() && e.pid >= 0) r.facts.push_back(Fact{h.line, true, static_cast<int>(v), e.pid, e.node, event_index});
      if (!e.node.empty()) r.facts.push_back(Fact{h.line, false, static_cast<int>(v), -1, e.node, event_index});
    }
    auto cn = e.captures.find("node");
    if (cn != e.captures.end() && e.node.empty()) e.node = cn->second;
    // The rest of the identity captures (kb/README.md): torchrun's "local_rank: 3", a
    // "Device: 3", a "PID 1177", when the prefix does not say.
    for (auto [name, field] : {std::pair<const char*, int*>{"local_rank", &e.local_rank}, {"gpu", &e.gpu}, {"pid", &e.pid}}) {
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

  const Engine& engine_;
  const ScanOptions& opt_;
  match::Scanner scanner_;
  std::string clean_;
  metrics::ProgressLine progress_;
  metrics::ProgressParser progress_parser_;
  std::array<std::pair<uint32_t, bool>, 8> shape_marks_{};  // (shape id, may mark); id 0: none
  size_t next_shape_mark_ = 0;
  const metrics::StepGrids* grids_;
  std::vector<uint32_t> hits_;
  RankIndex slots_;
  std::vector<PerRank> per_rank_;
  std::unordered_map<uint32_t, uint64_t> local_hits_;
  std::unordered_set<PidKey, PidKeyHash, PidKeyEq> pid_facts_;
  std::string joined_;            // the chunk's messages, each ended by '\n'
  std::vector<uint32_t> ends_;    // offset of each message's '\n' in joined_
  std::vector<uint32_t> candidates_, hit_lines_;
};

// ---------------------------------------------------------------------------------------
// Phase B: one per job, fed the chunks in order.

class Merger {
 public:
  Merger(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt)
      : engine_(engine), sink_(sink), job_(job), opt_(opt) {}

  void process(Chunk& c) {
    switch (c.kind) {
      case Chunk::Kind::kBegin: begin(c); break;
      case Chunk::Kind::kLines: lines(c); break;
      case Chunk::Kind::kEnd: end(c); break;
    }
  }

  // Live sources (LiveScan): the events that nothing open on the source's streams can
  // still change come out now: all of them when nothing is open, else those before the
  // first line of what is open (a traceback being joined, a "raised:" wrapper; during a
  // launcher summary, none).
  void flush_settled() {
    if (summary_.active()) return;
    uint64_t open_from = UINT64_MAX;
    for (int rank : active_joiners_) {
      auto it = joiners_.find(rank);
      if (it != joiners_.end() && it->second.active()) open_from = std::min<uint64_t>(open_from, it->second.current().first_line);
    }
    for (const auto& [rank, w] : wrapper_) open_from = std::min<uint64_t>(open_from, w.line);
    for (auto& f : summary_.take()) pending_.push_back(summary_event(f));
    emit_pending(open_from);
  }
  // Live sources gone quiet: what is open is closed as at the source's end, and every
  // event comes out; the source's next lines start with nothing open.
  void settle() {
    finish_open();
    active_joiners_.clear();
    wrapper_.clear();
    summary_ = record::LauncherSummaryTracker();
    emit_pending(UINT64_MAX);
  }
  bool holds_open() const { return busy(); }
  // The source's statistics as far as it has been read (end() sets them for good).
  void live_stats(uint64_t bytes, uint64_t lines) {
    stats().bytes = bytes;
    stats().lines = lines;
    stats().ranks.assign(ranks_seen_.begin(), ranks_seen_.end());
    if (!stats().name_origin.node.empty()) {
      for (int r : name_ranks_) stats().rank_node.emplace(r, stats().name_origin.node);
    }
  }

 private:
  SourceStats& stats() { return job_.sources[source_]; }

  void begin(const Chunk& c) {
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
    recent_.clear();
    seq_ = 0;
    shrank_ = false;
  }

  // The text of a line before an event, as shown: cleaned, trimmed on the right, capped.
  static std::string context_text(std::string_view raw, bool plain, std::string& buf) {
    std::string_view t = plain ? raw : record::clean_line_view(raw, buf);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r')) t.remove_suffix(1);
    if (t.size() > record::Event::kContextLineBytes) t = t.substr(0, record::Event::kContextLineBytes);
    return sanitize_utf8(t);
  }

  // Gives e the lines before line i of the chunk on its stream (issue 15: the context an
  // engineer asks for first), for the first kMaxContextSnapshots failure events of the
  // job; kept bounded: Event::kContextLines lines out of the kContextWindow before it.
  void add_context(record::Event& e, const Chunk& c, size_t i, int rank) {
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
    for (auto it = recent_.rbegin(); it != recent_.rend() && looked < record::Event::kContextWindow &&
                                     out.size() < record::Event::kContextLines;
         ++it, ++looked) {
      if (it->rank != rank) continue;
      out.emplace_back(it->number, context_text(it->raw, it->plain, buf));
    }
    std::reverse(out.begin(), out.end());
  }

  // After a chunk: its last lines join the window of lines before the next chunk's events.
  void remember_recent(const Chunk& c) {
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

  bool busy() const { return summary_.active() || !active_joiners_.empty() || !wrapper_.empty(); }
  bool stream_busy(int rank) const {
    return summary_.active() || active_joiners_.count(rank) != 0 || wrapper_.count(rank) != 0;
  }

  void lines(Chunk& c) {
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

  // The series of a chunk with metric captures: its progress lines and the captured
  // samples, one at a time in line order, as the one-line scan adds them.
  void replay_series(Chunk& c) {
    size_t k = 0;
    for (size_t i = 0; i < c.lines.size(); ++i) {
      record::Record rec;
      reparse(c, i, rec);
      if (might_be_progress(rec.message) &&
          metrics::parse_progress_line(rec.message, engine_.metric_aliases(), progress_))
        job_.series.add(rec.rank, progress_, source_, c.first_line + i, rec.time_us, rec.message);
      for (; k < metric_events_.size() && metric_events_[k].first == i; ++k) add_captured_metrics(metric_events_[k].second);
    }
    c.res.series.clear();
  }

  void reparse(const Chunk& c, size_t i, record::Record& rec) {
    std::string_view line = c.clean_line(i, clean_);
    engine_.prefixes().parse(line, rec);
    apply_name_origin(rec, c.src->name_origin);
  }

  // The last time on `rank`'s stream before line i of the chunk (or before the chunk).
  TimeMark time_before(const Chunk& c, size_t i, int rank) const {
    const ChunkResult& r = c.res;
    for (size_t k = i; k-- > 0;) {
      if (r.rank[k] == rank && r.time_us[k] != record::kNoTime) return {r.time_us[k], static_cast<record::Clock>(r.clock[k])};
    }
    auto it = last_time_.find(rank);
    return it != last_time_.end() ? it->second : TimeMark{};
  }

  // One line, through the state machines and the cap, as the one-line scan does it.
  void walk(Chunk& c, size_t i, size_t hit_begin, size_t hit_end) {
    ChunkResult& r = c.res;
    record::Record rec;
    reparse(c, i, rec);
    const uint64_t number = c.first_line + i;
    const uint64_t offset = c.lines[i].offset;
    bool in_summary = summary_.feed(rec, number);
    int summary_rank = in_summary ? summary_.current_rank() : -1;

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
        if (it != last_time_.end()) {
          e.time_us = it->second.us;
          e.clock = it->second.clock;
          e.time_subsecond = false;
        }
      }
      e.in_launcher_summary = in_summary;
      e.summary_rank = summary_rank;
      if (joiner.active()) e.traceback_first = joiner.current().first_line;
      if (e.role == kb::Role::kRoot || e.role == kb::Role::kCollateral) add_context(e, c, i, r.rank[i]);
      if (h.metric_captures) metric_events_.emplace_back(i, e);
      pending_.push_back(std::move(e));
    }
    if (pending_.size() > first_new && ends_with(trim(rec.message), "raised:"))
      wrapper_[rec.rank] = {number, first_new};
    // An idle joiner holds nothing; keeping one per rank would let a hostile log (a
    // million distinct "[rankN]:" prefixes) grow memory without bound (issue 7).
    if (!joiner.active() && joiners_.size() > kMaxIdleJoiners) joiners_.erase(rec.rank);
  }

  void fill_context(record::Event& e, const record::Record& rec, uint64_t line, uint64_t offset, const Chunk& c,
                    size_t i) {
    rec.to_origin(e);
    e.source = source_;
    e.line = line;
    e.offset = offset;
    if (rec.time_us != record::kNoTime) {
      e.time_text = std::string(rec.time_text);
    } else {
      TimeMark t = time_before(c, i, rec.rank);
      if (t.us != record::kNoTime) {
        e.time_us = t.us;
        e.clock = t.clock;
        e.time_subsecond = false;
      }
    }
    e.text = event_text(rec.message);
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
    e.frames = fin.frames;
    e.frames_dropped = fin.frames_dropped;
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
          rit->frames = x.frames;
          rit->frames_dropped = x.frames_dropped;
        }
      }
      rit->final_exception = rit->line == fin.line;
    }
    for (const auto& x : tb.exceptions) exception_meta_.erase({rank, x.line});
    pending_.push_back(std::move(e));
  }

  // The launcher summary's failure rows, as events.
  record::Event summary_event(const record::LauncherFailure& f) const {
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

  // Closes the tracebacks still being joined and the launcher summary (the source ends).
  void finish_open() {
    for (auto& [rank, joiner] : joiners_) {
      if (auto tb = joiner.finish()) on_traceback(*tb, rank);
    }
    for (const auto& f : summary_.take()) pending_.push_back(summary_event(f));
  }

  // Hands the pending events before line `before` to the sink, in line order.
  void emit_pending(uint64_t before) {
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

  void end(const Chunk& c) {
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
    uint64_t line;   // the "... raised:" line
    size_t first;    // its first event in pending_
  };
  std::unordered_map<int, Wrapper> wrapper_;
  std::vector<std::pair<size_t, record::Event>> metric_events_;  // (line in chunk, event) of this chunk
  std::vector<bool> dropped_;  // per hit of the chunk: over the cap
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

// ---------------------------------------------------------------------------------------
// Reading: io's bytes -> chunks of whole lines.

class Chunker : public io::ByteSink {
 public:
  // `emit` takes each finished chunk (in order); `recycle` gives a chunk to fill.
  Chunker(const Engine& engine, const ScanOptions& opt, std::function<void(std::unique_ptr<Chunk>)> emit,
          std::function<std::unique_ptr<Chunk>()> fresh)
      : engine_(engine), opt_(opt), emit_(std::move(emit)), fresh_(std::move(fresh)) {}

  void begin(const io::SourceInfo& info) override {
    auto src = std::make_shared<SourceCtx>();
    src->index = next_source_++;
    src->info = info;
    src->name_origin = engine_.origin_of_source(info.name);
    src_ = src;
    framer_ = record::LineFramer(opt_.max_line);
    source_bytes_ = 0;
    send(take(Chunk::Kind::kBegin));
    cur_ = take(Chunk::Kind::kLines);
  }

  char* data_buffer(size_t size) override {
    if (opt_.chunk_bytes < kZeroCopyMin) return nullptr;  // small chunks: copy (tests)
    if (cur_->bytes.size() >= opt_.chunk_bytes || cur_->bytes.capacity() - cur_->bytes.size() < size) flush();
    cur_->bytes.reserve(cur_->bytes.size() + std::max(size, opt_.chunk_bytes + size));
    return cur_->bytes.data() + cur_->bytes.size();
  }

  void data(std::string_view piece) override {
    source_bytes_ += piece.size();
    total_bytes_ += piece.size();
    size_t base;
    if (piece.data() == cur_->bytes.data() + cur_->bytes.size()) {
      base = cur_->bytes.size();  // io read straight into the chunk
      cur_->bytes.commit(piece.size());
    } else {
      base = cur_->bytes.size();
      cur_->bytes.append(piece);
    }
    Chunk* c = cur_.get();
    framer_.feed(piece, [&](const record::RawLine& l) { add_line(*c, l, piece, base); });
    if (opt_.progress) opt_.progress(total_bytes_);
    // Without zero-copy reads, chunks are cut here (data_buffer cuts them otherwise).
    if (opt_.chunk_bytes < kZeroCopyMin && cur_->bytes.size() >= opt_.chunk_bytes) flush();
  }

  bool accepts_mapped() const override { return opt_.chunk_bytes >= kZeroCopyMin; }

  // Ends the chunk being filled (scan_text's pieces are copied in: without this a text
  // would be one chunk, and a chunk's work grows faster than its lines).
  void cut() { flush(); }

  // A window of a mapped file: cut into chunks of about chunk_bytes whose lines point into
  // the window (a line that starts in the window before comes from the framer's copy, in
  // `side`).
  void data_mapped(std::string_view window, std::shared_ptr<const io::MappedWindow> keep) override {
    flush();
    for (size_t pos = 0; pos < window.size();) {
      const std::string_view piece = window.substr(pos, opt_.chunk_bytes);
      source_bytes_ += piece.size();
      total_bytes_ += piece.size();
      Chunk* c = cur_.get();
      c->mapped = window.data();
      c->keep = keep;
      framer_.feed(piece, [&](const record::RawLine& l) { add_line(*c, l, piece, pos); });
      if (opt_.progress) opt_.progress(total_bytes_);
      pos += piece.size();
      flush();
    }
    // The framer read every byte of the window (a line still open is copied out of it):
    // a window that shrank meanwhile may be one no chunk points into.
    shrank_ = shrank_ || keep->shrank();
  }

  // Live sources (LiveScan): each Chunker holds one source, numbered as the job's.
  void number_from(uint32_t first) { next_source_ = first; }
  // Sends the complete lines fed so far (a line still open waits for its end).
  void sync() { flush(); }
  uint64_t lines() const { return framer_.lines(); }
  uint64_t bytes() const { return source_bytes_; }

  void end(const io::SourceInfo&, const Status& status) override {
    Chunk* c = cur_.get();
    framer_.finish([&](const record::RawLine& l) { add_line(*c, l, {}, 0); });
    flush();
    cur_.reset();
    auto e = take(Chunk::Kind::kEnd);
    e->status = status;
    e->source_bytes = source_bytes_;
    e->total_lines = framer_.lines();
    e->cut_lines = framer_.cut_lines();
    e->shrank = shrank_;
    shrank_ = false;
    send(std::move(e));
    src_.reset();
  }

 private:
  static constexpr size_t kZeroCopyMin = 64 << 10;

  // Adds a framed line to chunk c: in place when its bytes lie in `piece`, whose first
  // byte is at `base` in the chunk's bytes (or mapped window); else copied to the chunk's
  // side buffer (a line begun in an earlier piece: the framer's copy).
  void add_line(Chunk& c, const record::RawLine& l, std::string_view piece, size_t base) {
    LineRef ref;
    ref.offset = l.offset;
    ref.len = static_cast<uint32_t>(l.bytes.size());
    ref.plain = l.plain ? 1 : 0;
    if (!opt_.only_host.empty() || !opt_.only_unit.empty()) {
      // --host / --unit: a line another host or unit wrote is kept as an empty line, so
      // the others keep their line numbers; a line that names neither is kept.
      record::Record rec;
      engine_.prefixes().parse(ref.plain ? l.bytes : record::clean_line_view(l.bytes, filter_buf_), rec);
      if (!keeps(rec)) {
        ref.len = 0;
        ref.plain = 1;
        ++left_out_;
      }
    }
    const char* p0 = piece.data();
    if (!l.bytes.empty() && !piece.empty() && l.bytes.data() >= p0 && l.bytes.data() + l.bytes.size() <= p0 + piece.size()) {
      ref.pos = static_cast<uint32_t>(base + static_cast<size_t>(l.bytes.data() - p0));
      ref.side = 0;
    } else {
      ref.pos = static_cast<uint32_t>(c.side.size());
      ref.side = 1;
      c.side.append(l.bytes);
    }
    if (c.lines.empty()) c.first_line = l.number;
    c.lines.push_back(ref);
  }

  bool keeps(const record::Record& rec) const {
    if (!opt_.only_host.empty() && !rec.node.empty() && !same_host(rec.node, opt_.only_host)) return false;
    if (!opt_.only_unit.empty() && !rec.program.empty() && !same_unit(rec.program, opt_.only_unit)) return false;
    return true;
  }
  // gpu-node-7 is gpu-node-7.cluster.example (syslog writes the short name or the FQDN).
  static bool same_host(std::string_view a, std::string_view b) {
    if (a == b) return true;
    const std::string_view s = a.size() < b.size() ? a : b, l = a.size() < b.size() ? b : a;
    return l.size() > s.size() && starts_with(l, s) && l[s.size()] == '.';
  }
  // train is train.service (a syslog tag names the program, systemd the unit).
  static bool same_unit(std::string_view a, std::string_view b) {
    if (a == b) return true;
    const std::string_view s = a.size() < b.size() ? a : b, l = a.size() < b.size() ? b : a;
    return starts_with(l, s) && l.substr(s.size()) == ".service";
  }

 public:
  uint64_t left_out() const { return left_out_; }

 private:
  std::unique_ptr<Chunk> take(Chunk::Kind kind) {
    auto c = fresh_();
    c->reset(kind);
    c->src = src_;
    return c;
  }
  // Chunks are numbered as they are sent: phase B takes them in this order.
  void send(std::unique_ptr<Chunk> c) {
    c->seq = next_seq_++;
    emit_(std::move(c));
  }

  // Sends the current chunk when it has lines, and starts the next.
  void flush() {
    if (cur_->lines.empty()) {
      cur_->bytes.clear();  // bytes of a line still pending in the framer: it keeps its copy
      cur_->side.clear();
      cur_->release_mapping();
      return;
    }
    send(std::move(cur_));
    cur_ = take(Chunk::Kind::kLines);
  }

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

// ---------------------------------------------------------------------------------------
// The two ways to run: inline (one thread) and the pipeline.

class Inline {
 public:
  Inline(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt)
      : worker_(engine, opt, job.series.grids(engine.metric_aliases().size())), merger_(engine, sink, job, opt) {}
  void emit(std::unique_ptr<Chunk> c) {
    worker_.run(*c);
    merger_.process(*c);
    c->release_mapping();
    spare_ = std::move(c);
  }
  std::unique_ptr<Chunk> fresh() {
    if (spare_) return std::move(spare_);
    return std::make_unique<Chunk>();
  }

 private:
  LineWorker worker_;
  Merger merger_;
  std::unique_ptr<Chunk> spare_;
};

class Pipeline {
 public:
  Pipeline(const Engine& engine, EventSink& sink, JobStats& job, const ScanOptions& opt, unsigned threads)
      : engine_(engine),
        opt_(opt),
        merger_(engine, sink, job, opt),
        grids_(job.series.grids(engine.metric_aliases().size())),
        max_in_flight_(2 * threads + 2) {}

  // Reader side. While too many chunks are in flight (memory stays bounded), the reader
  // does a queued chunk's work itself rather than wait: on a machine with as many
  // scanning threads as cores, the reader (idle most of the time with mmap) then takes
  // its share instead of competing with the scanning threads for a core.
  void submit(std::unique_ptr<Chunk> c) {
    std::unique_lock<std::mutex> lk(mu_);
    while (in_flight_ >= max_in_flight_) {
      if (queue_.empty()) {
        space_.wait(lk);
        continue;
      }
      if (!reader_worker_) reader_worker_ = std::make_unique<LineWorker>(engine_, opt_, grids_);
      run_one(*reader_worker_, lk);
    }
    ++in_flight_;
    queue_.push_back(std::move(c));
    work_.notify_one();
  }
  std::unique_ptr<Chunk> fresh() {
    std::lock_guard<std::mutex> lk(mu_);
    if (spares_.empty()) return std::make_unique<Chunk>();
    auto c = std::move(spares_.back());
    spares_.pop_back();
    return c;
  }
  void close() {
    std::lock_guard<std::mutex> lk(mu_);
    closed_ = true;
    work_.notify_all();
  }

  // A scanning thread: phase A on whatever chunk comes next, then phase B on every chunk
  // whose turn it is (one thread at a time).
  void work() {
    LineWorker worker(engine_, opt_, grids_);
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      work_.wait(lk, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty()) return;
      run_one(worker, lk);
    }
  }

 private:
  // Phase A on the next queued chunk, then phase B on every chunk whose turn it is
  // (unless another thread is merging). Called with lk held and queue_ not empty.
  void run_one(LineWorker& worker, std::unique_lock<std::mutex>& lk) {
    {
      std::unique_ptr<Chunk> c = std::move(queue_.front());
      queue_.pop_front();
      lk.unlock();
      worker.run(*c);
      lk.lock();
      uint64_t seq = c->seq;
      done_.emplace(seq, std::move(c));
      if (merging_) return;
      merging_ = true;
      for (auto it = done_.find(next_merge_); it != done_.end(); it = done_.find(next_merge_)) {
        std::unique_ptr<Chunk> m = std::move(it->second);
        done_.erase(it);
        ++next_merge_;
        lk.unlock();
        merger_.process(*m);
        m->release_mapping();
        lk.lock();
        spares_.push_back(std::move(m));
        --in_flight_;
        space_.notify_one();
      }
      merging_ = false;
    }
  }

  const Engine& engine_;
  const ScanOptions& opt_;
  Merger merger_;
  const metrics::StepGrids* grids_;
  const size_t max_in_flight_;
  std::mutex mu_;
  std::condition_variable work_, space_;
  std::deque<std::unique_ptr<Chunk>> queue_;
  std::map<uint64_t, std::unique_ptr<Chunk>> done_;
  std::vector<std::unique_ptr<Chunk>> spares_;
  uint64_t next_merge_ = 0;
  size_t in_flight_ = 0;
  bool merging_ = false;
  bool closed_ = false;
  std::unique_ptr<LineWorker> reader_worker_;  // the reader's, made when it first helps
};

// Threads for a job: as asked; by default one per core, but one for a small job (a
// pasted snippet: starting threads would cost more than they save).
unsigned threads_for(const std::vector<std::string>& inputs, const ScanOptions& options) {
  if (options.threads != 0) return options.threads;
  unsigned t = std::max(1u, std::thread::hardware_concurrency());
  if (t <= 1) return 1;
  uint64_t total = 0;
  for (const auto& in : inputs) {
    struct stat st {};
    if (in == "-" || ::stat(in.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return t;  // unknown size
    // A small compressed file can hold a big log: decompress in a thread of its own.
    for (const char* ext : {".gz", ".tgz", ".zst", ".xz", ".bz2", ".tar"}) {
      if (ends_with(in, ext)) return t;
    }
    total += static_cast<uint64_t>(st.st_size);
  }
  return total < (4u << 20) ? 1 : t;
}

}  // namespace

namespace {

// One job over whatever `read` hands the chunker (named inputs, or a feed of streams).
JobStats scan_with(const Engine& engine, unsigned threads, EventSink& sink, const ScanOptions& options,
                   const std::function<io::InputReport(io::ByteSink&, const io::ReadOptions&)>& read) {
  JobStats job;
  io::ReadOptions ro = options.read;
  if (options.chunk_bytes < ro.chunk_size) ro.chunk_size = std::max<size_t>(options.chunk_bytes, 1);
  io::InputReport rep;
  uint64_t left_out = 0;
  if (threads <= 1) {
    Inline run(engine, sink, job, options);
    Chunker chunker(
        engine, options, [&](std::unique_ptr<Chunk> c) { run.emit(std::move(c)); }, [&] { return run.fresh(); });
    rep = read(chunker, ro);
    left_out = chunker.left_out();
  } else {
    Pipeline pipe(engine, sink, job, options, threads);
    // Ctrl-C and SIGTERM go to the reading thread only (base/interrupt.h), so a read()
    // blocked on a pipe that never ends returns at once: the other threads block them.
    sigset_t stop_signals, before;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
    std::thread reader([&] {
      pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
      Chunker chunker(
          engine, options, [&](std::unique_ptr<Chunk> c) { pipe.submit(std::move(c)); }, [&] { return pipe.fresh(); });
      rep = read(chunker, ro);
      left_out = chunker.left_out();
      pipe.close();
    });
    // `threads` in all: the reader (which scans too, when the scanning threads fall
    // behind), this thread, and threads - 2 more.
    std::vector<std::thread> workers;
    for (unsigned i = 2; i < threads; ++i) workers.emplace_back([&] { pipe.work(); });
    pipe.work();
    for (auto& w : workers) w.join();
    reader.join();
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
  }
  for (auto& e : rep.errors) job.errors.push_back(std::move(e));
  for (auto& n : rep.notes) job.notes.push_back(std::move(n));
  if (!options.only_host.empty() || !options.only_unit.empty()) {
    std::string which = !options.only_host.empty() ? "host " + options.only_host : "";
    if (!options.only_unit.empty()) which += (which.empty() ? "unit " : ", unit ") + options.only_unit;
    job.notes.push_back(fmt::format("{} line{} of other hosts or units left out (only {})", left_out,
                                    left_out == 1 ? "" : "s", which));
  }
  return job;
}

}  // namespace

JobStats scan_job(const Engine& engine, const std::vector<std::string>& inputs, EventSink& sink,
                  const ScanOptions& options) {
  return scan_with(engine, threads_for(inputs, options), sink, options,
                   [&](io::ByteSink& chunker, const io::ReadOptions& ro) { return io::read_inputs(inputs, chunker, ro); });
}

JobStats scan_feed(const Engine& engine, io::StreamFeed& feed, EventSink& sink, const ScanOptions& options) {
  // The size is unknown until the end: as asked, else one per core.
  const unsigned threads = options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  return scan_with(engine, threads, sink, options,
                   [&](io::ByteSink& chunker, const io::ReadOptions& ro) { return io::read_streams(feed, chunker, ro); });
}

JobStats scan_text(const Engine& engine, std::string_view name, std::string_view text, EventSink& sink,
                   const ScanOptions& options) {
  JobStats job;
  Inline run(engine, sink, job, options);
  Chunker chunker(
      engine, options, [&](std::unique_ptr<Chunk> c) { run.emit(std::move(c)); }, [&] { return run.fresh(); });
  io::SourceInfo info{std::string(name), text.size(), "plain"};
  chunker.begin(info);
  // Pieces of at most chunk_bytes, copied into chunks (the text is not io's to read).
  for (size_t off = 0; off < text.size(); off += options.chunk_bytes) {
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) {
      chunker.end(info, Status(make_error(ErrorCode::kInternal, "cancelled")));
      return job;
    }
    chunker.data(text.substr(off, std::max<size_t>(options.chunk_bytes, 1)));
    chunker.cut();
  }
  chunker.end(info, Status::Ok());
  return job;
}


// ---------------------------------------------------------------------------------------
// Live sources: each has its own Chunker (framing) and Merger (phase B state: tracebacks,
// summary, caps), all share one LineWorker (phase A) and the job; everything runs on the
// calling thread, a chunk per piece fed.

struct LiveScan::Impl {
  class Collect : public EventSink {
   public:
    void event(const record::Event& e) override { events.push_back(e); }
    std::vector<record::Event> events;
  };
  struct Source {
    std::unique_ptr<Merger> merger;
    std::unique_ptr<Chunker> chunker;
    io::SourceInfo info;
    bool open = true;
    bool fed = false;
    char last = '\n';  // the last byte fed
  };
  Impl(const Engine& e, const ScanOptions& o)
      : engine(e), options(o), worker(e, options, job.series.grids(e.metric_aliases().size())) {}

  std::unique_ptr<Chunk> fresh() {
    if (spare) return std::move(spare);
    return std::make_unique<Chunk>();
  }

  const Engine& engine;
  ScanOptions options;
  JobStats job;
  Collect sink;
  LineWorker worker;
  std::vector<std::unique_ptr<Source>> sources;
  std::unique_ptr<Chunk> spare;
  uint64_t closed_lines = 0, closed_bytes = 0;
};

// Pieces fed are cut to this size: each source's chunk keeps the capacity of its largest
// piece, so 64 sources hold at most a few MiB between them.
static constexpr size_t kLivePiece = 256 << 10;

LiveScan::LiveScan(const Engine& engine, const ScanOptions& options) : impl_(std::make_unique<Impl>(engine, options)) {}

LiveScan::~LiveScan() = default;

uint32_t LiveScan::open(const std::string& name) {
  Impl& m = *impl_;
  auto src = std::make_unique<Impl::Source>();
  Impl::Source* raw = src.get();
  const uint32_t index = static_cast<uint32_t>(m.job.sources.size());
  raw->merger = std::make_unique<Merger>(m.engine, m.sink, m.job, m.options);
  raw->chunker = std::make_unique<Chunker>(
      m.engine, m.options,
      [&m, raw](std::unique_ptr<Chunk> c) {
        m.worker.run(*c);
        raw->merger->process(*c);
        c->release_mapping();
        m.spare = std::move(c);
      },
      [&m] { return m.fresh(); });
  raw->chunker->number_from(index);
  raw->info = io::SourceInfo{name, 0, "plain"};
  m.sources.push_back(std::move(src));
  raw->chunker->begin(raw->info);
  return index;
}

void LiveScan::feed(uint32_t source, std::string_view bytes) {
  Impl::Source& s = *impl_->sources.at(source);
  if (!s.open || bytes.empty()) return;
  for (size_t off = 0; off < bytes.size(); off += kLivePiece) {
    s.chunker->data(bytes.substr(off, kLivePiece));
    s.chunker->sync();
    s.merger->flush_settled();
  }
  s.fed = true;
  s.last = bytes.back();
}

void LiveScan::break_line(uint32_t source) {
  Impl::Source& s = *impl_->sources.at(source);
  if (s.open && s.fed && s.last != '\n' && s.last != '\r') feed(source, "\n");
}

void LiveScan::settle(uint32_t source) {
  Impl::Source& s = *impl_->sources.at(source);
  if (!s.open) return;
  s.chunker->sync();
  s.merger->settle();
}

void LiveScan::close(uint32_t source, const Status& status) {
  Impl& m = *impl_;
  Impl::Source& s = *m.sources.at(source);
  if (!s.open) return;
  // Merger::end adds the source's lines and bytes to the job's: from the closed ones'.
  m.job.lines = m.closed_lines;
  m.job.bytes = m.closed_bytes;
  s.chunker->end(s.info, status);
  m.closed_lines = m.job.lines;
  m.closed_bytes = m.job.bytes;
  s.open = false;
}

void LiveScan::add_error(Error e) { impl_->job.errors.push_back(std::move(e)); }

bool LiveScan::is_open(uint32_t source) const { return impl_->sources.at(source)->open; }

bool LiveScan::holds_open(uint32_t source) const {
  const Impl::Source& s = *impl_->sources.at(source);
  return s.open && s.merger->holds_open();
}

size_t LiveScan::take_events(std::vector<record::Event>& out) {
  std::vector<record::Event>& ev = impl_->sink.events;
  const size_t n = ev.size();
  if (n == 0) return 0;
  // In (source, line) order, as scan_job gives them (an earlier source may have been
  // waiting on an open traceback while a later one went on): the new ones sorted, then
  // merged after the old ones (linear; equal keys keep their order).
  const auto before = [](const record::Event& a, const record::Event& b) {
    return a.source != b.source ? a.source < b.source : a.line < b.line;
  };
  std::stable_sort(ev.begin(), ev.end(), before);
  const size_t old = out.size();
  out.insert(out.end(), std::make_move_iterator(ev.begin()), std::make_move_iterator(ev.end()));
  ev.clear();
  if (old > 0 && before(out[old], out[old - 1]))
    std::inplace_merge(out.begin(), out.begin() + static_cast<long>(old), out.end(), before);
  return n;
}

const JobStats& LiveScan::job() {
  Impl& m = *impl_;
  m.job.lines = m.closed_lines;
  m.job.bytes = m.closed_bytes;
  for (size_t i = 0; i < m.sources.size(); ++i) {
    Impl::Source& s = *m.sources[i];
    if (!s.open) continue;
    s.merger->live_stats(s.chunker->bytes(), s.chunker->lines());
    m.job.lines += s.chunker->lines();
    m.job.bytes += s.chunker->bytes();
  }
  return m.job;
}

uint64_t LiveScan::lines() const {
  uint64_t n = impl_->closed_lines;
  for (const auto& s : impl_->sources)
    if (s->open) n += s->chunker->lines();
  return n;
}

uint64_t LiveScan::bytes() const {
  uint64_t n = impl_->closed_bytes;
  for (const auto& s : impl_->sources)
    if (s->open) n += s->chunker->bytes();
  return n;
}

}  // namespace ff::scan
