// metrics.series.cc — the series: Series (count, min/max with their lines, the first
// non-finite value, points kept on a step grid whose stride doubles), StepGrids (the grids
// published to the scanning threads), SeriesBatch (a chunk's samples, reduced per rank and
// metric) and SeriesSet (per metric and rank, bounded).
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "metrics/metrics.h"

namespace ff::metrics {

namespace {
std::string_view capped(std::string_view t) { return t.substr(0, 1000); }
}  // namespace

void Series::add(const Point& p, std::string_view text) {
  if (count == 0) first = p;
  ++count;
  last = p;
  if (std::isfinite(p.value)) {
    if (!has_finite || p.value < min) min = p.value, min_point = p, min_text.assign(capped(text));
    if (!has_finite || p.value > max) max = p.value, max_point = p, max_text.assign(capped(text));
    has_finite = true;
  } else if (!has_nonfinite) {
    has_nonfinite = true;
    first_nonfinite = p;
    nonfinite_text.assign(capped(text));
  }
  if (count == 1) {
    anchor = p.step;
    points.push_back(p);
  } else {
    offer_point(p);
  }
}

void Series::offer_point(const Point& p) {
  if (!on_step_grid(p.step, anchor, stride)) return;
  points.push_back(p);
  while (points.size() >= kMaxPoints) {
    if (stride < kMaxStride) {
      stride *= 2;
      std::erase_if(points, [&](const Point& q) { return !on_step_grid(q.step, anchor, stride); });
    } else {
      size_t w = 0;
      for (size_t r = 0; r < points.size(); r += 2) points[w++] = points[r];
      points.resize(w);
    }
  }
}

StepGrids::StepGrids(size_t metrics) : metrics_(metrics) {
  cells_ = static_cast<uint64_t*>(std::calloc(metrics_ * (kRanks + 1) + 1, sizeof(uint64_t)));
  if (cells_ == nullptr) metrics_ = 0;  // no memory: nothing is published, nothing filtered
}

StepGrids::~StepGrids() { std::free(cells_); }

uint64_t* StepGrids::cell(MetricId metric, int rank) const {
  if (metric >= metrics_ || rank < -1 || rank >= kRanks) return nullptr;
  return cells_ + static_cast<size_t>(metric) * (kRanks + 1) + static_cast<size_t>(rank + 1);
}

// A cell: the anchor (a whole number, |anchor| < 2^54) in the top 56 bits, log2 of the
// stride in bits 1-6, bit 0 set when published.
bool StepGrids::get(MetricId metric, int rank, int64_t& anchor, uint64_t& stride) const {
  uint64_t* c = cell(metric, rank);
  if (c == nullptr) return false;
  const uint64_t v = std::atomic_ref<uint64_t>(*c).load(std::memory_order_relaxed);
  if ((v & 1) == 0) return false;
  anchor = static_cast<int64_t>(v) >> 8;
  stride = uint64_t{1} << ((v >> 1) & 63);
  return true;
}

void StepGrids::publish(MetricId metric, int rank, double anchor, uint64_t stride) {
  uint64_t* c = cell(metric, rank);
  if (c == nullptr || !(anchor > -1.8e16 && anchor < 1.8e16)) return;
  const auto a = static_cast<int64_t>(anchor);
  if (static_cast<double>(a) != anchor) return;
  const uint64_t v = (static_cast<uint64_t>(a) << 8) | (static_cast<uint64_t>(std::countr_zero(stride)) << 1) | 1;
  std::atomic_ref<uint64_t> ref(*c);
  if (ref.load(std::memory_order_relaxed) != v) ref.store(v, std::memory_order_relaxed);
}

int SeriesSet::key_of(int rank) {
  // -1 (no rank) is the stream of a plain log: always its own.
  if (rank == -1 || rank == kOtherRanks || own_ranks_.count(rank) != 0) return rank;
  if (own_ranks_.size() < kMaxRanks) {
    own_ranks_.insert(rank);
    return rank;
  }
  if (rank >= 0 && rank < (1 << 27)) {
    const size_t word = static_cast<size_t>(rank) / 64;
    if (word >= other_seen_.size()) other_seen_.resize(word + 1, 0);
    const uint64_t bit = uint64_t{1} << (rank % 64);
    if ((other_seen_[word] & bit) == 0) {
      other_seen_[word] |= bit;
      ++other_ranks_;
    }
  }
  return kOtherRanks;
}

void SeriesSet::add_sample(int rank, MetricId metric, double step, double value, uint32_t source, uint64_t line_no,
                           int64_t time_us, std::string_view text) {
  const int key = key_of(rank);
  Series& s = series_[{metric, key}];
  s.add(Point{step, value, source, line_no, time_us}, text);
  if (key == kOtherRanks) s.points.clear();  // a summary only (see append)
}

void SeriesSet::add(int rank, const ProgressLine& line, uint32_t source, uint64_t line_no, int64_t time_us,
                    std::string_view text) {
  rank = key_of(rank);
  double step = line.has_step ? line.step : (last_step_.count(rank) ? last_step_[rank] + 1 : 1);
  last_step_[rank] = step;
  for (const Sample& s : line.samples) add_sample(rank, s.metric, step, s.value, source, line_no, time_us, text);
  last_progress_[rank] = Point{step, 0, source, line_no, time_us};
  last_text_[rank].assign(capped(text));
}

void SeriesBatch::clear() {
  used_ranks_ = used_parts_ = 0;
  lines_.clear();
  std::fill(rank_index_.begin(), rank_index_.end(), std::pair<int, uint32_t>{0, 0});
  last_slot_ = UINT32_MAX;
}

size_t SeriesBatch::candidates() const {
  size_t n = 0;
  for (size_t i = 0; i < used_parts_; ++i) n += parts_[i].samples.size();
  return n;
}

SeriesBatch::Part& SeriesBatch::new_part(MetricId metric, int rank, const StepGrids* grids) {
  if (used_parts_ == parts_.size()) parts_.emplace_back();
  Part& P = parts_[used_parts_++];
  P.metric = metric;
  P.count = 0;
  P.has_finite = P.has_nonfinite = false;
  P.anchor = 0;
  P.stride = 1;
  if (grids != nullptr) grids->get(metric, rank, P.anchor, P.stride);
  P.samples.clear();
  return P;
}

SeriesBatch::Rank& SeriesBatch::rank_slot(int rank) {
  if (last_slot_ != UINT32_MAX && last_rank_ == rank) return ranks_[last_slot_];
  auto home = [&](int r) { return (static_cast<uint32_t>(r) * 2654435761u) & (rank_index_.size() - 1); };
  if (rank_index_.empty()) rank_index_.assign(64, {0, 0});
  size_t h = home(rank);
  while (rank_index_[h].second != 0) {
    if (rank_index_[h].first == rank) {
      last_rank_ = rank;
      last_slot_ = rank_index_[h].second - 1;
      return ranks_[last_slot_];
    }
    h = (h + 1) & (rank_index_.size() - 1);
  }
  if ((used_ranks_ + 1) * 2 > rank_index_.size()) {
    std::vector<std::pair<int, uint32_t>> old = std::move(rank_index_);
    rank_index_.assign(old.size() * 2, {0, 0});
    for (const auto& e : old) {
      if (e.second == 0) continue;
      size_t k = home(e.first);
      while (rank_index_[k].second != 0) k = (k + 1) & (rank_index_.size() - 1);
      rank_index_[k] = e;
    }
    h = home(rank);
    while (rank_index_[h].second != 0) h = (h + 1) & (rank_index_.size() - 1);
  }
  if (used_ranks_ == ranks_.size()) ranks_.emplace_back();
  Rank& r = ranks_[used_ranks_++];
  r.rank = rank;
  r.has_step = false;
  r.last_step = 0;
  r.rel = 0;
  r.last_line = 0;
  r.part_of_metric.clear();
  rank_index_[h] = {rank, static_cast<uint32_t>(used_ranks_)};
  last_rank_ = rank;
  last_slot_ = static_cast<uint32_t>(used_ranks_ - 1);
  return r;
}

void SeriesBatch::add(int rank, const ProgressLine& line, uint32_t source, uint64_t line_no, int64_t time_us,
                      uint32_t text_ref, const StepGrids* grids) {
  Rank& r = rank_slot(rank);
  Line at{0, line_no, time_us, source, 0, text_ref};
  if (line.has_step) {
    at.step = line.step;
    r.has_step = true;
    r.last_step = line.step;
  } else if (r.has_step) {
    at.step = r.last_step + 1;
    r.last_step = at.step;
  } else {
    at.rel = ++r.rel;  // numbered once the rank's last step before the batch is known
  }
  const uint32_t li = static_cast<uint32_t>(lines_.size());
  lines_.push_back(at);
  r.last_line = li;
  // (A step-less line's step is not known yet: its samples are all kept.)
  const bool known_step = at.rel == 0;
  for (const metrics::Sample& s : line.samples) {
    if (s.metric >= r.part_of_metric.size()) r.part_of_metric.resize(static_cast<size_t>(s.metric) + 1, -1);
    int32_t pi = r.part_of_metric[s.metric];
    if (pi < 0) {
      pi = static_cast<int32_t>(used_parts_);
      r.part_of_metric[s.metric] = pi;
      new_part(s.metric, rank, grids);
    }
    Part& P = parts_[static_cast<size_t>(pi)];
    const Sample smp{s.value, li};
    if (P.count++ == 0) P.first = smp;
    P.last = smp;
    if (std::isfinite(s.value)) {
      if (!P.has_finite || s.value < P.min.value) P.min = smp;
      if (!P.has_finite || s.value > P.max.value) P.max = smp;
      P.has_finite = true;
    } else if (!P.has_nonfinite) {
      P.has_nonfinite = true;
      P.nonfinite = smp;
    }
    // Off the published grid: not a point now, nor ever (grids only get coarser).
    if (!known_step || on_step_grid(at.step, static_cast<double>(P.anchor), P.stride)) P.samples.push_back(smp);
  }
}

SeriesSet::RankRefs& SeriesSet::refs_of(int rank) {
  RankRefs& r = refs_[rank];
  // add() may have made these since (it does not use the cache): look again while unset.
  if (r.last_progress == nullptr) {
    if (auto lp = last_progress_.find(rank); lp != last_progress_.end()) r.last_progress = &lp->second;
  }
  if (r.last_step == nullptr) {
    if (auto ls = last_step_.find(rank); ls != last_step_.end()) r.last_step = &ls->second;
  }
  if (r.last_text == nullptr) {
    if (auto lt = last_text_.find(rank); lt != last_text_.end()) r.last_text = &lt->second;
  }
  return r;
}

// A rank's last step, progress line and its text, after a batch.
void SeriesSet::set_last(RankRefs& refs, int key, double step, const Point& at, std::string_view text) {
  if (refs.last_step == nullptr) refs.last_step = &last_step_[key];
  *refs.last_step = step;
  if (refs.last_progress == nullptr) refs.last_progress = &last_progress_[key];
  *refs.last_progress = at;
  if (refs.last_text == nullptr) refs.last_text = &last_text_[key];
  refs.last_text->assign(capped(text));
}

Series& SeriesSet::series_of(RankRefs& refs, MetricId metric, int rank) {
  if (metric >= refs.by_metric.size()) refs.by_metric.resize(static_cast<size_t>(metric) + 1, nullptr);
  Series*& s = refs.by_metric[metric];
  if (s == nullptr) s = &series_[{metric, rank}];
  return *s;
}

const StepGrids* SeriesSet::grids(size_t metrics) {
  if (!grids_) grids_ = std::make_shared<StepGrids>(metrics);
  return grids_.get();
}

void SeriesSet::append(SeriesBatch& b, const std::function<std::string_view(uint32_t)>& text_of) {
  std::vector<double> rel_steps;
  for (size_t ri = 0; ri < b.used_ranks_; ++ri) {
    SeriesBatch::Rank& r = b.ranks_[ri];
    const int key = key_of(r.rank);
    // Step-less lines before the rank's first step in the batch: the rank's last step
    // before the batch + 1, + 1, ... (added one at a time, as add() does).
    RankRefs& refs = refs_of(key);
    rel_steps.assign(static_cast<size_t>(r.rel) + 1, 0);
    if (r.rel > 0) {
      rel_steps[1] = refs.last_step != nullptr ? *refs.last_step + 1 : 1;
      for (size_t k = 2; k <= r.rel; ++k) rel_steps[k] = rel_steps[k - 1] + 1;
    }
    auto point_of_line = [&](uint32_t li, double value) {
      const SeriesBatch::Line& l = b.lines_[li];
      return Point{l.rel != 0 ? rel_steps[l.rel] : l.step, value, l.source, l.line_no, l.time_us};
    };
    auto point = [&](const SeriesBatch::Sample& s) { return point_of_line(s.line, s.value); };
    auto text = [&](const SeriesBatch::Sample& s) { return capped(text_of(b.lines_[s.line].text_ref)); };
    for (int32_t pi : r.part_of_metric) {
      if (pi < 0) continue;
      SeriesBatch::Part& P = b.parts_[static_cast<size_t>(pi)];
      if (P.count == 0) continue;
      Series& S = series_of(refs, P.metric, key);
      const SeriesBatch::Sample* from = P.samples.data();
      const SeriesBatch::Sample* const end = from + P.samples.size();
      if (S.count == 0) {
        S.first = point(P.first);
        S.anchor = S.first.step;
        S.points.push_back(S.first);
        // No grid was published for a series not begun: the first sample was kept.
        if (from != end && from->line == P.first.line) ++from;
      }
      S.count += P.count;
      // The summary of the other ranks merges several ranks of the batch, rank by rank: it
      // takes the earliest line on a tie (as adding the lines one by one does), and keeps
      // no points (their thinning would depend on the order of merging).
      const bool merged = key == kOtherRanks;
      auto earlier = [](const Point& a, const Point& b) {
        return a.source != b.source ? a.source < b.source : a.line < b.line;
      };
      if (merged && earlier(point(P.first), S.first)) S.first = point(P.first);
      if (!merged || earlier(S.last, point(P.last))) S.last = point(P.last);
      // The first point that reaches the minimum over both: the earlier one on a tie.
      if (P.has_finite) {
        if (!S.has_finite || P.min.value < S.min ||
            (merged && P.min.value == S.min && earlier(point(P.min), S.min_point))) {
          S.min = P.min.value;
          S.min_point = point(P.min);
          S.min_text.assign(text(P.min));
        }
        if (!S.has_finite || P.max.value > S.max ||
            (merged && P.max.value == S.max && earlier(point(P.max), S.max_point))) {
          S.max = P.max.value;
          S.max_point = point(P.max);
          S.max_text.assign(text(P.max));
        }
        S.has_finite = true;
      }
      if (P.has_nonfinite && (!S.has_nonfinite || (merged && earlier(point(P.nonfinite), S.first_nonfinite)))) {
        S.has_nonfinite = true;
        S.first_nonfinite = point(P.nonfinite);
        S.nonfinite_text.assign(text(P.nonfinite));
      }
      // The candidates, as Series::add offers every sample (the others are off the grid).
      if (merged) {
        S.points.clear();
      } else {
        for (; from != end; ++from) S.offer_point(point(*from));
      }
      if (grids_) grids_->publish(P.metric, key, S.anchor, S.stride);
    }
    set_last(refs, key, r.has_step ? r.last_step : rel_steps[r.rel], point_of_line(r.last_line, 0),
             text_of(b.lines_[r.last_line].text_ref));
  }
  b.clear();
}

}  // namespace ff::metrics
