// analyze.hang.cc — hang analysis: the stuck collective (the sequence number most ranks report), when it
// started, the ranks that timed out and the suspects that never entered it.
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "analyze/analyze_internal.h"
#include "base/strings.h"
#include "template/template.h"

namespace ff::analyze::detail {

namespace {

long long capture_int(const Event& e, const char* name) {
  auto it = e.captures.find(name);
  long long v = 0;
  if (it == e.captures.end()) return LLONG_MIN;
  std::string_view s = it->second;
  bool neg = !s.empty() && s[0] == '-';
  if (!parse_int(neg ? s.substr(1) : s, v)) return LLONG_MIN;
  return neg ? -v : v;
}

}  // namespace

Hang analyse_hang(const std::vector<Event>& events, const std::vector<const Incident*>& incidents,
                  const std::vector<const Event*>& launcher_failures, const std::vector<SourceSummary>& sources) {
  Hang h;
  std::set<int> world, timed_out;
  std::map<int, long long> enqueued;  // rank -> last enqueued work
  std::set<std::string> hang_texts;
  std::map<long long, int> seq_votes;
  int64_t started_us = record::kNoTime;
  record::Clock started_clock = record::Clock::kNone;
  for (const auto& s : sources) world.insert(s.ranks.begin(), s.ranks.end());
  for (const Incident* inc : incidents) {
    if (inc->category != "hang" || (inc->role != kb::Role::kRoot && inc->role != kb::Role::kCollateral)) continue;
    if (inc->rank >= 0) timed_out.insert(inc->rank);
    hang_texts.insert(template_::mask(inc->decisive->text));
  }
  for (const Event& e : events) {
    if (e.kind != EventKind::kPattern) continue;
    long long seq = capture_int(e, "seq"), enq = capture_int(e, "enqueued"), tmo = capture_int(e, "timeout_ms");
    if (seq != LLONG_MIN) seq_votes[seq]++;
    if (enq != LLONG_MIN && e.rank >= 0) enqueued[e.rank] = enq;
    if (tmo != LLONG_MIN && tmo > 0) {
      h.timeout_ms = tmo;
      if (auto op = e.captures.find("op"); op != e.captures.end()) h.op = op->second;
      if (e.time_us != record::kNoTime && e.time_subsecond) {
        int64_t start = e.time_us - tmo * 1000;
        if (started_us == record::kNoTime || start < started_us) started_us = start, started_clock = e.clock;
      }
    }
  }
  for (const Event* f : launcher_failures) {
    if (f->rank < 0) continue;
    world.insert(f->rank);
    if (hang_texts.count(template_::mask(f->text))) timed_out.insert(f->rank);
  }
  // The stuck collective: the sequence number most ranks report.
  int best = 0;
  for (const auto& [seq, votes] : seq_votes) {
    if (votes > best) best = votes, h.seq = seq;
  }
  h.started = format_time(started_us, started_clock);
  h.timed_out.assign(timed_out.begin(), timed_out.end());
  std::set<int> never_entered;
  if (h.seq >= 0) {
    for (const auto& [rank, enq] : enqueued) {
      if (enq < h.seq) never_entered.insert(rank);
    }
  }
  if (!never_entered.empty()) {
    h.suspects.assign(never_entered.begin(), never_entered.end());
    h.reasoning = "its last enqueued work is below the stuck collective's sequence number " + std::to_string(h.seq) +
                  ": it never entered the collective the other ranks wait in";
  } else if (world.size() >= 2 && !timed_out.empty()) {
    for (int r : world) {
      if (!timed_out.count(r)) h.suspects.push_back(r);
    }
    if (h.suspects.size() == 1) {
      h.reasoning = "the only rank of the job (" + std::to_string(world.size()) +
                    " ranks seen) that did not time out: the others were waiting for it";
    } else if (h.suspects.size() > 1) {
      h.reasoning = std::to_string(h.suspects.size()) +
                    " ranks did not time out; any of them may be the one the others waited for";
    }
  }
  return h;
}

// Each rank's last progress line (issue 33 item 4): where every rank was when the job
// stopped moving, the suspects first, so the report quotes the straggler's own line
// rather than only another rank's timeout.
void add_last_progress(Hang& h, const JobNumbers& numbers, const std::vector<SourceSummary>& sources) {
  if (numbers.series == nullptr) return;
  const std::set<int> suspects(h.suspects.begin(), h.suspects.end());
  const std::set<int> timed_out(h.timed_out.begin(), h.timed_out.end());
  std::vector<Hang::RankLast> rows;
  for (const auto& [rank, pt] : numbers.series->last_progress()) {
    if (rank < 0) continue;  // a stream without a rank, or the summary of ranks past the bound
    Hang::RankLast r;
    r.rank = rank;
    r.step = pt.step;
    r.state = suspects.count(rank) ? "suspect" : timed_out.count(rank) ? "timed out" : "";
    r.line = progress_evidence(numbers, rank, pt, sources);
    rows.push_back(std::move(r));
  }
  h.ranks_with_progress = rows.size();
  std::stable_sort(rows.begin(), rows.end(), [](const Hang::RankLast& a, const Hang::RankLast& b) {
    const bool sa = a.state == "suspect", sb = b.state == "suspect";
    if (sa != sb) return sa;
    if (a.step != b.step) return a.step < b.step;
    return a.rank < b.rank;
  });
  if (rows.size() > Hang::kMaxRankRows) rows.resize(Hang::kMaxRankRows);
  h.last = std::move(rows);
}

}  // namespace ff::analyze::detail
