// metrics/metrics.h — numbers in the log: progress-line parsing and bounded series.
//
// parse_progress_line() reads the key/value numbers that training loops print on their
// progress lines (plain "step 12 | loss 0.5 | lr 1e-4", HF Trainer dicts, DeepSpeed's
// "step=10, skipped=0, lr=[...]", Megatron's column layout, tqdm postfixes) using a
// hand-written tokenizer (no regex on the hot path) and an alias table that is KB data
// (kb/formats/metrics.yaml). A SeriesSet keeps, per (metric, rank), summary statistics
// and a bounded, evenly thinned list of points, so memory does not grow with the log.
//
//   metrics::Aliases aliases = metrics::Aliases::from_kb(kb.metric_specs);
//   metrics::ProgressLine p;
//   if (metrics::parse_progress_line(message, aliases, p)) series.add(rank, p, where);
//
// Thread-safety: Aliases is immutable; a SeriesSet belongs to one thread (merge() joins).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
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
  double unit_scale(std::string_view unit) const;  // e.g. s/it -> 1000 for step_time_ms
  const std::string& name(MetricId id) const { return names_[id]; }
  MetricId id(std::string_view name) const;
  size_t size() const { return names_.size(); }
  MetricId step() const { return step_; }

 private:
  std::vector<std::string> names_;
  std::map<std::string, MetricId, std::less<>> keys_;
  std::map<std::string, std::pair<MetricId, double>, std::less<>> units_;
  MetricId step_ = kNoMetric;
};

struct Sample {
  MetricId metric;
  double value;  // may be NaN or +-inf: a non-finite value is itself a finding
};

struct ProgressLine {
  bool has_step = false;
  double step = 0;
  std::vector<Sample> samples;  // without the step
};

// True when the line is a progress line: it has a step (step/iteration key) or a loss,
// plus at least one other metric. Config dumps ("lr=0.5 steps=80") are not.
bool parse_progress_line(std::string_view message, const Aliases& aliases, ProgressLine& out);

struct Point {
  double step = 0;
  double value = 0;
  uint32_t source = 0;
  uint64_t line = 0;
  int64_t time_us = INT64_MIN;
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
  std::vector<Point> points;  // at most kMaxPoints, evenly thinned, first and last kept
  uint32_t stride = 1;        // every stride-th point is kept
  uint64_t seen_since_kept = 0;
  static constexpr size_t kMaxPoints = 512;
  void add(const Point& p, std::string_view text = {});
};

class SeriesSet {
 public:
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

 private:
  std::map<std::pair<MetricId, int>, Series> series_;
  std::map<int, Point> last_progress_;
  std::map<int, double> last_step_;
};

}  // namespace ff::metrics
