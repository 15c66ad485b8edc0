// analyze/diagnosis.h — the Diagnosis value: everything a report shows, no I/O.
// Produced by analyze::diagnose(), consumed by report (text, JSON).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ff::analyze {

struct Evidence {
  std::string source;     // the source's name
  uint64_t line = 0;      // 1-based
  std::optional<int> rank;
  std::string node;
  std::string time;       // as written in the log
  std::string text;
};

// A collective that timed out: which one, since when, who waited and who never came.
struct Hang {
  std::string op;                  // "ALLREDUCE"
  long long seq = -1;              // the collective's sequence number
  long long timeout_ms = 0;
  std::string started;             // timeout time minus the timeout, when times are known
  std::vector<int> timed_out;      // ranks whose watchdog fired
  std::vector<int> suspects;       // ranks that never entered it (or never timed out)
  std::string reasoning;
};

struct Finding {
  std::string id;         // KB entry id, or "unrecognized.<ExceptionType>"
  std::string title;
  std::string category;
  std::string role;       // root, collateral, symptom, context
  double confidence = 0;
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::optional<int> gpu;
  std::string time;
  std::vector<Evidence> evidence;  // evidence[0] is the decisive line
  std::string summary;
  std::string root_cause;
  std::vector<std::string> fix;
  std::string verify;
  std::vector<std::string> references;
  std::string exception_type;
  std::string rank_source;  // how the rank was found: "prefix", "launcher summary", ...
  std::string node_source;  // how the node was found
  std::string fingerprint;  // stable across ranks, times, addresses and sizes
  std::optional<Hang> hang; // for hangs: the stuck collective
};

struct Collateral {
  std::string id;
  std::string title;
  std::string category;
  std::vector<int> ranks;
  std::vector<std::string> nodes;
  int count = 0;
  std::string explained_by;
  std::string fingerprint;
  Evidence first;
};

struct Hypothesis {
  std::string id;
  std::string title;
  std::string category;
  double confidence = 0;
  std::string why;
  std::vector<Evidence> evidence;
  std::string separate_by;  // the observation that would tell it apart
};

struct TimelineEntry {
  std::string time;
  std::string id;
  std::string role;
  std::vector<int> ranks;
  std::vector<std::string> nodes;
  int count = 0;
  std::string source;
  uint64_t line = 0;
  std::string text;
};

struct SourceSummary {
  std::string name;
  std::string encoding;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t events = 0;
  bool ok = true;
  std::string error;
  std::vector<int> ranks;  // ranks seen in the source's prefixes (capped)
  std::map<int, std::string> rank_node;                   // rank -> node, as the log states it
  std::map<std::pair<std::string, int>, int> pid_rank;    // (node, pid) -> rank
};


// A trend read from a metric series: transient vs terminal, bounded vs unbounded ...
struct Verdict {
  std::string id;          // "loss-scale", "grad-norm", "non-finite", "loss-spike", "straggler", "stall", "throughput"
  std::string verdict;     // "transient", "terminal", "stable", "bounded", "unbounded", "first", "spike", ...
  std::string metric;
  std::optional<double> step;
  std::optional<int> rank;
  std::string summary;     // one line for the terminal
  std::vector<Evidence> evidence;
};

struct MetricSummary {
  std::string name;
  uint64_t count = 0;
  int ranks = 0;
  double min = 0, max = 0;
  double first_step = 0, first_value = 0, last_step = 0, last_value = 0;
  std::optional<int> points_rank;              // the rank the points are from
  std::vector<std::pair<double, double>> points;  // (step, value), downsampled
};

struct Diagnosis {
  std::string verdict = "unknown";   // failed | degraded | healthy | unknown
  std::optional<Finding> primary;
  std::vector<Collateral> collateral;
  std::vector<Hypothesis> hypotheses;
  std::vector<TimelineEntry> timeline;
  std::vector<Finding> symptoms;     // warnings and symptoms seen (deduplicated by id)
  std::vector<Verdict> verdicts;     // trends read from the numbers in the log
  std::vector<MetricSummary> series;
  std::vector<SourceSummary> sources;
  std::vector<std::string> errors;   // input problems (partial results)
  std::vector<std::string> notes;
  uint64_t lines = 0;  // (after notes)
  uint64_t bytes = 0;
  double seconds = 0;
};

}  // namespace ff::analyze
