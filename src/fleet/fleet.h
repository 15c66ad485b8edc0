// fleet/fleet.h — across many jobs (issue 36): what a fleet's monitoring and its weekly
// review read of the diagnoses its jobs got.
//
// The module knows no engine and no Diagnosis: a job is a `JobOutcome`, the few facts a
// fleet counts (its verdict, the primary failure's entry, category, node and fingerprint,
// the scheduler's job id, user, partition, account and nodes, GPU-hours, when it ended),
// read from a `.firstfault.json` (`outcome_from_json`) or built by app from the history.
//
//   - `Textfile`: Prometheus metrics in node_exporter's textfile-collector format. The
//     Slurm epilog reads the node's file back, adds its job and writes it again
//     (`update_textfile`: under a lock on the folder, to a temporary file renamed over the
//     old one, 0644), so the counters count every job the node diagnosed.
//   - `Aggregator`: the fleet report (`firstfault report`). Jobs are added one at a time
//     and only counts are kept (per category, entry, day, node, fingerprint; the
//     fingerprints capped), so 100,000 jobs take the memory of their distinct keys, not of
//     the jobs. `render_html`, `render_markdown`, `render_json` write the page, the summary
//     and the machine-readable form of one `Report`.
//
// Example:
//   fleet::Aggregator agg(periods);
//   for (each .firstfault.json) agg.add(fleet::outcome_from_json(text, path).value());
//   std::string page = fleet::render_html(agg.report(), {});
//
// Thread-safety: none of it is shared; one Aggregator or Textfile per thread.
// Failure behaviour: dirty input is counted (a file that is not a diagnosis is skipped
// and said); a textfile that cannot be written is an Error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace ff::fleet {

// One diagnosed job, as a fleet counts it.
struct JobOutcome {
  std::string source;                                     // the .firstfault.json file, or "history"
  std::string verdict;                                    // failed, degraded, healthy, incomplete, unknown
  std::string entry, category, title, fingerprint, node;  // the primary failure ("" when none)
  std::string job_id, user, partition, account, node_list;
  double gpu_hours = 0;    // GPUs x the time the job ran (what its failure cost at most)
  int64_t ended_unix = 0;  // when it ended (the epilog's time, else the file's)
};

// "hardware" for the categories whose fix is the machine's (hardware), "software" for the
// others, "" for no category. (The hardware vs software split of Meta's table.)
std::string_view failure_class(std::string_view category);

// A `.firstfault.json` (firstfault.diagnosis/1, with the epilog's "job" object when it has
// one) as a JobOutcome; `mtime_unix` stands for the end when the file does not say it.
Result<JobOutcome> outcome_from_json(std::string_view text, const std::string& source, int64_t mtime_unix);

// ---- Prometheus textfile (node_exporter's textfile collector) ----

// A label value as the text format writes it: valid UTF-8, \ " and line feeds escaped.
std::string escape_label_value(std::string_view v);

// The job facts that may become labels of the failure series (--metric-labels).
inline constexpr std::string_view kMetricLabelNames[] = {"partition", "account", "user"};

// firstfault's series of one node, read back from its own file and added to.
//   firstfault_jobs_diagnosed_total{verdict, <labels>}                          counter
//   firstfault_job_failures_total{entry, category, class, node, <labels>}       counter
//   firstfault_gpu_seconds_lost_total{entry, category, class, node, <labels>}   counter (GPU-seconds: base units)
//   firstfault_last_failure_timestamp_seconds{entry, category, class, node, <labels>} gauge
// <labels> are the chosen facts (kMetricLabelNames). At most kMaxFailureSeries failure
// label sets are kept; past that a new one is counted under entry="other" (an
// unrecognised exception's id comes from the log, and must not grow the file unbounded).
class Textfile {
 public:
  static constexpr size_t kMaxFailureSeries = 2000;
  // Reads a file this class wrote (other lines are dropped).
  static Textfile parse(std::string_view text);
  // Counts one job. `node` is the node named when the diagnosis names none.
  void add(const JobOutcome& job, const std::vector<std::string>& label_names, const std::string& node);
  std::string render() const;
  size_t series() const { return values_.size(); }

 private:
  // key: metric name + '{' + the rendered label pairs + '}'
  std::map<std::string, double> values_;
};

// Reads `dir/name`, lets `update` change it, and writes it back atomically (a temporary
// file in `dir`, fsync'd, mode 0644, renamed over `name`), holding an flock on the folder
// so that two epilogs on one node count both their jobs. Waits at most `wait_ms` for the
// lock.
Status update_textfile(const std::string& dir, const std::string& name, const std::vector<std::string>& label_names,
                       const JobOutcome& job, const std::string& node, int wait_ms = 5000);

// ---- the fleet report ----

// A period [from, to) in unix seconds.
struct Period {
  int64_t from = 0, to = INT64_MAX;
  bool contains(int64_t t) const { return t >= from && t < to; }
};

// What one period's jobs add up to.
struct Tally {
  int64_t jobs = 0;      // diagnoses read in the period
  int64_t failures = 0;  // of them, with a primary failure
  int64_t hardware = 0, software = 0;
  double gpu_hours_lost = 0;
  std::map<std::string, int64_t> verdicts;
  std::map<std::string, int64_t> by_category;
  std::map<std::string, double> gpu_hours_by_category;
  std::map<std::string, int64_t> by_entry;
  std::map<std::string, std::string> entry_category;  // entry -> its category
  std::map<std::string, std::string> entry_title;
};

struct Fingerprint {
  std::string fingerprint, entry, title, category;
  int64_t count = 0, first_seen = 0, last_seen = 0;
  std::map<std::string, int64_t> nodes;  // capped at 8 distinct
};

struct NodeFindings {
  int64_t hardware = 0, failures = 0;
  int64_t first_seen = 0, last_seen = 0;
  std::map<std::string, int64_t> entries;  // the hardware entries, capped at 8 distinct
};

// One report: the current period's tally (and the comparison's), failures per day and
// category, the nodes with hardware findings, the recurring fingerprints.
struct Report {
  Period period, compare;
  bool has_compare = false;
  Tally current, previous;
  std::map<int64_t, std::map<std::string, int64_t>> per_day;  // day (unix / 86400) -> category -> failures
  std::map<std::string, NodeFindings> nodes;                  // nodes with a failure in the period
  std::vector<Fingerprint> fingerprints;                      // seen more than once, most first
  int64_t read = 0, skipped = 0, outside = 0;                 // diagnoses read, not diagnoses, outside both periods
  std::vector<std::string> problems;                          // the first few skipped files and why
  int64_t fingerprints_dropped = 0;                           // jobs whose fingerprint came past the cap
};

class Aggregator {
 public:
  static constexpr size_t kMaxFingerprints = 50000;
  static constexpr size_t kMaxNodes = 100000;
  Aggregator(Period period, std::optional<Period> compare);
  void add(const JobOutcome& job);
  void skipped(const std::string& source, const std::string& why);
  Report report() const;

 private:
  Report r_;
  std::map<std::string, Fingerprint> fingerprints_;
};

struct RenderOptions {
  std::string generator = "firstfault";
  std::string title = "Fleet report";
  int64_t now_unix = 0;  // when it was made (0: not said)
};
std::string render_html(const Report& r, const RenderOptions& o);
std::string render_markdown(const Report& r, const RenderOptions& o);
std::string render_json(const Report& r, const RenderOptions& o);

// "2026-11-30" (UTC) of a unix time, and back ("" / nullopt when not a date).
std::string day_text(int64_t unix_s);
std::optional<int64_t> parse_day(std::string_view text);

}  // namespace ff::fleet
