// analyze.clocks.cc — time across nodes: node clock offsets estimated from the steps every rank logs
// (estimate_clocks), the order of two events by aligned time then position (earlier), and
// times as text (format_time, iso_time; the civil dates of base/civil.h).
#include <algorithm>
#include <cstdio>
#include <map>

#include "analyze/analyze_internal.h"
#include "base/civil.h"
#include "base/strings.h"

namespace ff::analyze::detail {

bool earlier(const Event* a, const Event* b, const Clocks& clocks) {
  bool both_timed = a->time_us != record::kNoTime && b->time_us != record::kNoTime && a->clock == b->clock;
  int64_t ta = both_timed ? clocks.aligned(a) : 0, tb = both_timed ? clocks.aligned(b) : 0;
  if (both_timed && a->source != b->source && ta != tb) return ta < tb;
  if (both_timed && a->source == b->source && a->time_subsecond && b->time_subsecond && a->rank != b->rank &&
      ta != tb) {
    // Different ranks interleaved in one file: their own sub-second times decide.
    return ta < tb;
  }
  if (a->source != b->source) {
    if (both_timed) return a->source < b->source;  // same time: keep input order
    return a->source < b->source;
  }
  return a->line < b->line;
}

// Node clock offsets from progress lines: for each rank, the time it logged each step;
// a node's offset is the median, over its ranks and the steps they share with the
// reference node (the one with the most ranks), of the time difference. Offsets under
// half a second are ignored (logging jitter).
Clocks estimate_clocks(const std::vector<SourceSummary>& sources, const JobNumbers& numbers) {
  Clocks c;
  for (const auto& s : sources) c.rank_node.insert(s.rank_node.begin(), s.rank_node.end());
  if (!numbers.series || !numbers.aliases || c.rank_node.empty()) return c;
  // step -> time per rank, from the metric with the most points: (step, time) sorted by
  // step, the first time of a step kept. Sorted vectors, not maps: tens of thousands of
  // points on a big job, and a node each in a map cost more than the rest of the analysis.
  using StepTimes = std::vector<std::pair<double, int64_t>>;
  auto by_step = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return a.first < b.first;
  };
  auto same_step = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return a.first == b.first;
  };
  std::map<int, StepTimes> times;
  for (const auto& [key, s] : numbers.series->all()) {
    if (key.second < 0) continue;
    auto& t = times[key.second];
    if (!t.empty()) continue;
    for (const auto& p : s.points) {
      if (p.time_us != INT64_MIN) t.emplace_back(p.step, p.time_us);
    }
    std::stable_sort(t.begin(), t.end(), by_step);
    t.erase(std::unique(t.begin(), t.end(), same_step), t.end());
  }
  std::map<std::string, std::vector<int>> node_ranks;
  for (const auto& [r, n] : c.rank_node) {
    if (times.count(r)) node_ranks[n].push_back(r);
  }
  if (node_ranks.size() < 2) return c;
  std::string ref;
  for (const auto& [n, rs] : node_ranks) {
    if (ref.empty() || rs.size() > node_ranks[ref].size()) ref = n;
  }
  // The reference clock: per step, the median time over the reference node's ranks.
  StepTimes ref_samples;
  for (int r : node_ranks[ref]) ref_samples.insert(ref_samples.end(), times[r].begin(), times[r].end());
  std::stable_sort(ref_samples.begin(), ref_samples.end(), by_step);
  StepTimes ref_time;
  std::vector<int64_t> v;
  for (size_t i = 0; i < ref_samples.size();) {
    size_t j = i;
    v.clear();
    for (; j < ref_samples.size() && ref_samples[j].first == ref_samples[i].first; ++j) v.push_back(ref_samples[j].second);
    std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
    ref_time.emplace_back(ref_samples[i].first, v[v.size() / 2]);
    i = j;
  }
  for (const auto& [n, rs] : node_ranks) {
    if (n == ref) continue;
    std::vector<int64_t> deltas;
    for (int r : rs) {
      for (const auto& [step, t] : times[r]) {
        auto it = std::lower_bound(ref_time.begin(), ref_time.end(), std::pair<double, int64_t>{step, 0}, by_step);
        if (it != ref_time.end() && it->first == step) deltas.push_back(t - it->second);
      }
    }
    if (deltas.size() < 3) continue;
    std::nth_element(deltas.begin(), deltas.begin() + static_cast<long>(deltas.size() / 2), deltas.end());
    int64_t off = deltas[deltas.size() / 2];
    if (off > 500000 || off < -500000) c.node_offset[n] = off;
  }
  return c;
}

std::string format_time(int64_t us, record::Clock clock) {
  if (us == record::kNoTime) return {};
  int64_t secs = us / 1000000;
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) rem += 86400, --days;
  const auto [y, m, d] = civil_from_days(days);
  char buf[48];
  int ms = static_cast<int>((us % 1000000 + 1000000) % 1000000 / 1000);
  if (clock == record::Clock::kWall)
    std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%03d", (long long)y, (long long)m,
                  (long long)d, (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60), ms);
  else if (clock == record::Clock::kWallNoYear)
    std::snprintf(buf, sizeof(buf), "%02lld-%02lld %02lld:%02lld:%02lld.%03d", (long long)m, (long long)d,
                  (long long)(rem / 3600), (long long)(rem / 60 % 60), (long long)(rem % 60), ms);
  else
    return {};
  return buf;
}

// ISO 8601 for a wall-clock time with its year (local time, as the log wrote it: logs do
// not say their zone), to the microsecond when the line had sub-second digits; empty
// otherwise (a glog time has no year; an elapsed time is no date).
std::string iso_time(int64_t us, record::Clock clock, bool subsecond) {
  if (us == record::kNoTime || clock != record::Clock::kWall) return {};
  std::string t = format_time(us, clock);  // "YYYY-MM-DD HH:MM:SS.mmm"
  if (t.size() < 19) return {};
  t = t.substr(0, 19);
  t[10] = 'T';
  if (subsecond) {
    char frac[16];
    std::snprintf(frac, sizeof(frac), ".%06d", static_cast<int>((us % 1000000 + 1000000) % 1000000));
    t += frac;
  }
  return t;
}

}  // namespace ff::analyze::detail
