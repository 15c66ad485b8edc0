// metrics/metrics.h — numbers in the log: progress-line parsing and bounded series.
//
// parse_progress_line() reads the key/value numbers that training loops print on their
// progress lines (plain "step 12 | loss 0.5 | lr 1e-4", HF Trainer dicts, DeepSpeed's
// "step=10, skipped=0, lr=[...]", Megatron's column layout, tqdm postfixes) using a
// hand-written tokeniser (no regex on the hot path) and an alias table that is KB data
// (kb/formats/metrics.yaml). A SeriesSet keeps, per (metric, rank), summary statistics
// and a bounded list of points on a step grid (its stride doubles as they fill up), so
// memory does not grow with the log.
//
//   metrics::Aliases aliases = metrics::Aliases::from_kb(kb.metric_specs);
//   metrics::ProgressLine p;
//   if (metrics::parse_progress_line(message, aliases, p)) series.add(rank, p, where);
//
// Thread-safety: Aliases is immutable; a SeriesSet belongs to one thread (merge() joins).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kb/kb.h"

namespace ff::metrics {

// Canonical metric names are strings from the KB ("loss", "loss_scale", "step_time_ms" ...);
// inside the parser they are small integers (indices into Aliases::names()).
using MetricId = uint16_t;
constexpr MetricId kNoMetric = 0xffff;

class Aliases {
 public:
  static Aliases from_kb(const std::vector<kb::MetricSpec>& specs);
  // The metric a key ("lm loss", "learning_rate") or a unit ("ms/step", "it/s") names.
  MetricId by_key(std::string_view lowercase_key) const;
  MetricId by_unit(std::string_view unit) const;
  MetricId by_key_any_case(std::string_view key) const;  // by_key(to_lower(key))
  // A key of an event message (kb::MetricSpec::event_keys: "reducing loss scale to") is
  // kept with this bit set in its id: a line with one is a progress line without a step
  // or a loss. (kNoMetric has it too: test for kNoMetric first.)
  static constexpr MetricId kEventKey = 0x8000;
  // by_key_any_case with kEventKey set on an event message's key.
  MetricId key_any_case(std::string_view key) const;
  // The (metric, scale) of a unit, or nullptr; empty_unit() is unit_entry("").
  const std::pair<MetricId, double>* unit_entry(std::string_view unit) const { return units_.find(unit); }
  const std::pair<MetricId, double>* empty_unit() const { return has_empty_unit_ ? &empty_unit_ : nullptr; }
  double unit_scale(std::string_view unit) const;  // e.g. s/it -> 1000 for step_time_ms
  const std::string& name(MetricId id) const { return names_[id]; }
  MetricId id(std::string_view name) const;
  size_t size() const { return names_.size(); }
  MetricId step() const { return step_; }
  MetricId loss() const { return loss_; }
  // The metric holding the total after a step's slash ("step 16/80"), or kNoMetric.
  MetricId step_total() const { return step_total_; }
  // The longest key: a longer text names no metric.
  size_t max_key_size() const { return max_key_; }

  // A small open-addressing table (the parser looks keys up for every number on a
  // progress line: no std::map, no allocation).
  class Table {
   public:
    void insert(std::string_view key, MetricId id, double scale);  // the first insert of a key wins
    const std::pair<MetricId, double>* find(std::string_view key) const;
    // The same for the key lower-cased (ASCII), without making the lower-case copy.
    const std::pair<MetricId, double>* find_lower(std::string_view key) const;

   private:
    struct Slot {
      uint32_t hash = 0;
      uint32_t key = UINT32_MAX;  // index into keys_, UINT32_MAX when empty
      std::pair<MetricId, double> value;
    };
    void grow();
    template <bool kLower>
    const std::pair<MetricId, double>* probe(std::string_view key) const;
    std::vector<Slot> slots_;
    std::vector<std::string> keys_;
  };

 private:
  std::vector<std::string> names_;
  Table keys_;
  Table units_;
  MetricId step_ = kNoMetric;
  MetricId loss_ = kNoMetric;
  MetricId step_total_ = kNoMetric;
  size_t max_key_ = 0;
  bool has_empty_unit_ = false;
  std::pair<MetricId, double> empty_unit_{kNoMetric, 1.0};
};

struct Sample {
  MetricId metric;
  double value;  // may be NaN or +-inf: a non-finite value is itself a finding
};

struct ProgressLine {
  bool has_step = false;
  bool event = false;  // it reads an event message's key (Aliases::kEventKey)
  double step = 0;
  std::vector<Sample> samples;  // without the step
  uint32_t shape = 0;           // ProgressParser::known: the id of the kept shape the line has
};

// True when the line is a progress line: it has a step (step/iteration key), a loss or an
// event message's key, plus at least one other metric (the event's own value counts).
// Config dumps ("lr=0.5 steps=80") are not.
bool parse_progress_line(std::string_view message, const Aliases& aliases, ProgressLine& out);

// parse_progress_line, with the same results, faster on the lines a training loop prints
// over and over: it keeps the shapes of the last few progress lines (the text around
// their numbers, and what each number was) and reads a line of a known shape by
// comparing that text and reading its numbers, without the tokeniser. Not thread-safe:
// one per thread.
class ProgressParser {
 public:
  explicit ProgressParser(const Aliases& aliases) : a_(aliases) {}
  bool parse(std::string_view message, ProgressLine& out) { return known(message, out) || learn(message, out); }
  // The two halves of parse(): a line of a kept shape (cheap; a caller may try this
  // before a costlier test of whether to try the tokeniser at all), then the tokeniser,
  // keeping the line's shape.
  bool known(std::string_view message, ProgressLine& out);
  bool learn(std::string_view message, ProgressLine& out);
  // The text around the numbers of a kept shape (ProgressLine::shape), or "" once it is
  // no longer kept. A line of the shape is that text with numbers between its pieces: a
  // word that holds no number (no digit, no "nan" or "inf") is in the line only if it is
  // in this text.
  std::string_view shape_text(uint32_t id) const;
  // The same text cut where its numbers go: a line of the shape is pieces[0], a number,
  // pieces[1], ..., a number, pieces.back(). Empty once the shape is no longer kept.
  std::vector<std::string_view> shape_pieces(uint32_t id) const;

 private:
  struct Slot {
    uint32_t lit_len;  // text before this number
    MetricId metric;   // kNoMetric: a number nothing names (still read, to find its end)
    bool stands;       // the metric makes the line a progress line: the loss, or an event's key
    bool event;        // an event message's key
    double scale;
    // The number this slot read last, to reuse when the same text comes again (a step,
    // a learning rate, a loss scale repeat from line to line): its bytes and the three
    // after them (all that decide where a number ends), masked; memo_len 0: none.
    uint64_t memo_lo = 0, memo_hi = 0, mask_lo = 0, mask_hi = 0;
    uint32_t memo_len = 0, memo_n = 0;
    double memo_value = 0;
  };
  struct Shape {
    std::string text;  // the text between the numbers, concatenated
    std::vector<Slot> slots;
    uint32_t id = 0;
  };
  static constexpr size_t kMaxShapes = 4;
  bool try_shape(Shape& shape, std::string_view s, ProgressLine& out);  // updates the slots' value memos
  const Aliases& a_;
  std::vector<Shape> shapes_;  // most used first
  uint32_t next_id_ = 1;
  std::vector<size_t> starts_;                    // while building a shape: its numbers' starts
  std::vector<std::pair<size_t, size_t>> looks_;  // and the bytes looked at around them
};

struct Point {
  double step = 0;
  double value = 0;
  uint32_t source = 0;
  uint64_t line = 0;
  int64_t time_us = INT64_MIN;
};

// Whether a step lies on the grid anchor + k * stride (stride a power of two). A step
// that is not a whole number of steps away from the anchor lies on the grid of stride 1
// only.
inline bool on_step_grid(double step, double anchor, uint64_t stride) {
  if (stride == 1) return true;
  const double d = step - anchor;
  if (!(d > -9.0e15 && d < 9.0e15)) return false;  // (and NaN)
  const auto k = static_cast<int64_t>(d);
  return static_cast<double>(k) == d && (static_cast<uint64_t>(k) & (stride - 1)) == 0;
}

// The step grids of a SeriesSet's series, for the threads that fill SeriesBatches while
// it appends others: a batch keeps only the samples on its series' grid as last
// published (a grid only gets coarser, and its anchor never moves, so a sample off an
// older grid is off the current one too). Lock-free: one 64-bit cell per (metric, rank)
// for ranks -1 to kRanks - 1 (other ranks are not filtered); the cells are allocated
// untouched, so memory grows with the series there are.
class StepGrids {
 public:
  explicit StepGrids(size_t metrics);
  ~StepGrids();
  StepGrids(const StepGrids&) = delete;
  StepGrids& operator=(const StepGrids&) = delete;
  // The last published grid of (metric, rank); false when there is none (keep everything).
  bool get(MetricId metric, int rank, int64_t& anchor, uint64_t& stride) const;
  // Publishes a series' grid (an anchor that is not a whole number below 2^54 is not).
  void publish(MetricId metric, int rank, double anchor, uint64_t stride);
  static constexpr int kRanks = 16384;

 private:
  uint64_t* cell(MetricId metric, int rank) const;
  size_t metrics_;
  uint64_t* cells_ = nullptr;  // calloc'd, read and written through std::atomic_ref
};

// Summary and thinned points of one metric on one rank (rank -1: the log does not say).
struct Series {
  uint64_t count = 0;
  double min = 0, max = 0;
  Point first, last;
  bool has_finite = false;
  bool has_nonfinite = false;
  Point first_nonfinite;
  Point min_point, max_point;  // where the first minimum / maximum was seen
  // The log text at those points (evidence for verdicts), capped.
  std::string nonfinite_text, min_text, max_text;
  // Fewer than kMaxPoints points, thinned on a step grid: those whose step lies on the
  // grid anchor + k * stride (on_step_grid), anchor being the first point's step. When the
  // points fill up, the stride doubles and the points off the new grid go, so the kept
  // points stay spread over the whole run and line up across ranks. (Steps that repeat so
  // often that no grid thins them lose every other point instead.)
  std::vector<Point> points;
  uint64_t stride = 1;
  double anchor = 0;
  static constexpr size_t kMaxPoints = 512;
  static constexpr uint64_t kMaxStride = uint64_t{1} << 52;
  void add(const Point& p, std::string_view text = {});
  // Keeps p as a point when it lies on the grid (thinning when full); p comes after the
  // series' first point.
  void offer_point(const Point& p);
};

class SeriesSet;

// The progress-line samples of a run of consecutive lines (a chunk of one source),
// gathered on their own (in parallel with other runs) and then appended to a SeriesSet
// in order. SeriesSet::append gives exactly what adding the same lines one by one with
// SeriesSet::add would have given: summaries merge, points are thinned as if they had
// arrived one at a time, and lines without a step are numbered once the rank's last step
// before the run is known. Memory: one Point per sample until appended.
class SeriesBatch {
 public:
  // As SeriesSet::add, but the line's text is named by `text_ref`: append() asks for the
  // texts it keeps (extremes, first non-finite value) instead of copying every line's.
  // With `grids` (the set's, read while it appends other batches), a sample off its
  // series' published grid is counted in the summary but not kept as a candidate point.
  void add(int rank, const ProgressLine& line, uint32_t source, uint64_t line_no, int64_t time_us, uint32_t text_ref,
           const StepGrids* grids = nullptr);
  bool empty() const { return used_ranks_ == 0; }
  void clear();  // keeps the storage for the next batch
  // The samples kept as candidate points (the rest were off their grid), for tests.
  size_t candidates() const;

 private:
  friend class SeriesSet;
  struct Line {   // one progress line
    double step;  // valid when rel == 0
    uint64_t line_no;
    int64_t time_us;
    uint32_t source;
    // > 0: the rel-th step-less line of its rank before the rank's first line with a
    // step in the batch; its step waits for the rank's last step before the batch.
    uint32_t rel;
    uint32_t text_ref;
  };
  struct Sample {
    double value;
    uint32_t line;  // index into lines_
  };
  struct Part {  // one (metric, rank): Series' summary over the batch, and its candidate points
    MetricId metric = 0;
    uint64_t count = 0;
    Sample first{}, last{}, min{}, max{}, nonfinite{};
    bool has_finite = false, has_nonfinite = false;
    // The grid published when the part began (stride 1: keep every sample).
    int64_t anchor = 0;
    uint64_t stride = 1;
    std::vector<Sample> samples;  // the samples that may be points, in order
  };
  struct Rank {
    int rank = 0;
    bool has_step = false;                // a line of the batch gave (or fixed) the step
    double last_step = 0;                 // valid when has_step
    uint32_t rel = 0;                     // step-less lines before has_step
    uint32_t last_line = 0;               // its last progress line, index into lines_
    std::vector<int32_t> part_of_metric;  // MetricId -> index into parts_, -1 if none
  };
  Rank& rank_slot(int rank);
  Part& new_part(MetricId metric, int rank, const StepGrids* grids);
  std::vector<Line> lines_;
  std::vector<Rank> ranks_;  // the first used_ranks_ are this batch's
  std::vector<Part> parts_;  // the first used_parts_ are this batch's
  size_t used_ranks_ = 0, used_parts_ = 0;
  std::vector<std::pair<int, uint32_t>> rank_index_;  // small open table: rank -> index+1
  int last_rank_ = 0;
  uint32_t last_slot_ = UINT32_MAX;
};

class SeriesSet {
 public:
  SeriesSet() = default;
  // (A copy has no published grids: nothing is filtered for it until it appends.)
  SeriesSet(const SeriesSet& o)
      : series_(o.series_),
        last_progress_(o.last_progress_),
        last_text_(o.last_text_),
        last_step_(o.last_step_),
        own_ranks_(o.own_ranks_),
        other_seen_(o.other_seen_),
        other_ranks_(o.other_ranks_) {}
  SeriesSet& operator=(const SeriesSet& o) {
    series_ = o.series_;
    last_progress_ = o.last_progress_;
    last_text_ = o.last_text_;
    last_step_ = o.last_step_;
    own_ranks_ = o.own_ranks_;
    other_seen_ = o.other_seen_;
    other_ranks_ = o.other_ranks_;
    refs_.clear();
    grids_.reset();
    return *this;
  }
  SeriesSet(SeriesSet&&) = default;  // map nodes do not move: the cached pointers stay valid
  SeriesSet& operator=(SeriesSet&&) = default;

  // Appends a batch's lines, as if each had been add()ed in order (with the text that
  // text_of returns for the line's text_ref); leaves the batch empty.
  void append(SeriesBatch& batch, const std::function<std::string_view(uint32_t)>& text_of);
  // Adds a progress line's samples at a step (when the line has none, the rank's last
  // step + 1 is used, so HF/tqdm lines without a step still form a series).
  void add(int rank, const ProgressLine& line, uint32_t source, uint64_t line_no, int64_t time_us,
           std::string_view text = {});
  void add_sample(int rank, MetricId metric, double step, double value, uint32_t source, uint64_t line_no,
                  int64_t time_us, std::string_view text = {});
  const std::map<std::pair<MetricId, int>, Series>& all() const { return series_; }
  bool empty() const { return series_.empty(); }
  // The last progress line per rank (its step and time), for stalls and stragglers.
  const std::map<int, Point>& last_progress() const { return last_progress_; }
  // ... and its text (capped), for the hang's table of each rank's last step.
  std::string_view last_progress_text(int rank) const {
    auto it = last_text_.find(rank);
    return it == last_text_.end() ? std::string_view() : std::string_view(it->second);
  }
  // The grids append() publishes, for SeriesBatch::add on other threads (made on first
  // use; valid as long as the set).
  const StepGrids* grids(size_t metrics);

  // Memory stays bounded whatever the number of ranks (issue 14: 10 million distinct ranks
  // took 7.9 GB): the first kMaxRanks distinct ranks met, in line order, have series of
  // their own; the samples of every later rank go to the series of kOtherRanks, one
  // summary for all of them, and those ranks are counted (other_ranks()).
  static constexpr size_t kMaxRanks = 16384;
  static constexpr int kOtherRanks = -2;
  uint64_t other_ranks() const { return other_ranks_; }

 private:
  int key_of(int rank);  // the rank, or kOtherRanks
  std::shared_ptr<StepGrids> grids_;
  std::map<std::pair<MetricId, int>, Series> series_;
  std::map<int, Point> last_progress_;
  std::map<int, std::string> last_text_;  // copied once per rank and batch, not per line
  std::map<int, double> last_step_;
  // Per rank, pointers into the maps above (their nodes never move), so append() finds
  // a rank's series without a map search per metric.
  struct RankRefs {
    std::vector<Series*> by_metric;
    Point* last_progress = nullptr;
    std::string* last_text = nullptr;
    double* last_step = nullptr;
  };
  std::unordered_map<int, RankRefs> refs_;
  std::unordered_set<int> own_ranks_;  // the ranks with series of their own
  std::vector<uint64_t> other_seen_;   // a bit per later rank seen (ranks below 2^27)
  uint64_t other_ranks_ = 0;
  RankRefs& refs_of(int rank);
  void set_last(RankRefs& refs, int key, double step, const Point& at, std::string_view text);
  Series& series_of(RankRefs& refs, MetricId metric, int rank);
};

}  // namespace ff::metrics
