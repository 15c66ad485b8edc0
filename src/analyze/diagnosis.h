// analyze/diagnosis.h — the Diagnosis value: everything a report shows, no I/O.
// Produced by analyze::diagnose(), consumed by report (text, JSON).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "record/event.h"

namespace ff::analyze {

// The verdict on a job, with its exit code (docs/json-output.md, `firstfault --help`):
//   failed      a failure, with its evidence                                     exit 1
//   degraded    problems while the run kept making progress                      exit 1
//   healthy     positive evidence that the run ended well (completion lines,
//               the final step of a known total)                                 exit 0
//   incomplete  no failure, but the input ends (or was read) short of the end    exit 3
//   unknown     nothing to judge (empty input, nothing that reads as a job log)  exit 4
// A script testing for 0 never reads a partial answer as healthy.
enum class VerdictKind : uint8_t { kFailed, kDegraded, kHealthy, kIncomplete, kUnknown };
const char* verdict_name(VerdictKind v);
int verdict_exit_code(VerdictKind v);

// How the primary's rank was found (rules.h names the rule behind each).
enum class RankSource : uint8_t {
  kNone,
  kPrefix,               // the line's own prefix (or the source's name)
  kLauncherSummary,      // a row of the launcher's failure table is the line itself
  kLauncherSameText,     // the table row whose error text is the primary's
  kLauncherExclusion,    // the only failed rank whose error is not collateral
  kHangStraggler,        // a hang: the rank that never entered the stuck collective
  kAllAlike,             // every rank failed alike: no rank named
  kPidMap,               // NCCL / launcher lines map the line's process id to a rank
  kLocalRankSingleNode,  // the local rank, on a job that runs on one node
  kProgressBehind,       // the only rank whose progress stopped first
  kOnlyRankNamed,        // a process line (host:pid) in a log that names one rank only
  kEcho,                 // a line that names a rank echoes the primary's error text
  kDetailLine,           // a detail line of the primary's own message names the rank
};
const char* rank_source_name(RankSource s);

struct Evidence {
  std::string source;  // the source's name
  uint64_t line = 0;   // 1-based
  std::optional<int> rank;
  std::string node;
  std::string time;      // as written in the log
  std::string time_iso;  // the same in ISO 8601 (2025-04-08T08:39:46.114109), when the log gives the year
  std::string text;
};

// A collective that timed out: which one, since when, who waited and who never came.
struct Hang {
  std::string op;      // "ALLREDUCE"
  long long seq = -1;  // the collective's sequence number
  long long timeout_ms = 0;
  std::string started;         // timeout time minus the timeout, when times are known
  std::vector<int> timed_out;  // ranks whose watchdog fired
  std::vector<int> suspects;   // ranks that never entered it (or never timed out)
  std::string reasoning;
  // Each rank's last progress line, the suspects first, then by last step (lowest first)
  // and rank: at most kMaxRankRows rows; ranks_with_progress counts them all.
  struct RankLast {
    int rank = 0;
    double step = 0;
    std::string state;  // "suspect", "timed out" or "" (neither)
    Evidence line;      // the rank's last progress line (time as the analysis reads it)
  };
  static constexpr size_t kMaxRankRows = 64;
  std::vector<RankLast> last;
  size_t ranks_with_progress = 0;
};

// A frame of the decisive line's traceback.
struct Frame {
  std::string file;
  uint64_t line = 0;
  std::string function;
};

// A line before the decisive line, on the same stream (source and rank).
struct ContextLine {
  uint64_t line = 0;
  std::string text;
};

struct Finding {
  std::string id;  // KB entry id, or "unrecognized.<ExceptionType>"
  std::string title;
  std::string category;
  std::string role;  // root, collateral, symptom, context
  double confidence = 0;
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::string node;
  std::optional<int> gpu;
  std::string time;
  std::string time_iso;            // ISO 8601, when the log gives the year
  std::vector<Evidence> evidence;  // evidence[0] is the decisive line
  std::string summary;
  std::string root_cause;
  std::vector<std::string> fix;
  std::string verify;         // the command that checks the fix (the entry's verify.command)
  std::string verify_where;   // "shell", "rerun" or "in-process" (empty: not said)
  std::string verify_expect;  // what its output shows when the fix worked
  std::vector<std::string> references;
  std::string exception_type;
  // Where the name came from: "entry" (a KB entry's pattern), "wrapper-cause" (a wrapper's
  // incident, named by the specific cause printed with it) or "guess" (no entry matches the
  // failure line: inferred from the raising frame, the message's words or the type).
  std::string basis = "entry";
  std::string wrapper_id;                // basis wrapper-cause: the wrapper entry's id
  std::optional<Evidence> wrapper_line;  // ... and its line
  std::string guess_from;                // basis guess: "frame", "words" or "type"
  std::string guess_evidence;            // ... the frame's file, the entries' ids, the type
  struct Nearby {
    std::string id, title, category;
    double score = 0;  // relative to the best possible match of the message's words (0..1)
  };
  std::vector<Nearby> closest;  // basis guess: the closest known failures by the message's words
  std::string rank_source;      // how the rank was found, in words ("log prefix", ...)
  RankSource rank_how = RankSource::kNone;
  std::string node_source;   // how the node was found
  std::string fingerprint;   // stable across ranks, times, addresses and sizes
  std::optional<Hang> hang;  // for hangs: the stuck collective
  // The step the log's numbers give for the fix (issue 33 item 3): where a numerical
  // failure began in this log (its first non-finite value, the loss scale at its floor, a
  // spike, or else the last step before the failure), said with the fix.
  struct FixAt {
    double step = 0;
    std::string what;  // one line, as the Numbers section says it
    Evidence line;
  };
  std::optional<FixAt> fix_at;
  // The decisive line's traceback (outermost first; the innermost frames when it was
  // longer, traceback_dropped saying how many went), and its innermost frame in the user's
  // own code (not an installed package or the standard library: kb library_frames).
  std::vector<Frame> traceback;
  uint64_t traceback_dropped = 0;
  std::optional<Frame> user_frame;
  // Up to 100 lines before the decisive line on its stream, oldest first.
  std::vector<ContextLine> context_before;
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

// What the scan says of one source (record/event.h: scan's SourceStats is one, with its
// own counters besides).
using SourceSummary = record::SourceSummary;

// A trend read from a metric series: transient vs terminal, bounded vs unbounded ...
struct Verdict {
  std::string id;       // "loss-scale", "grad-norm", "non-finite", "loss-spike", "straggler", "stall", "throughput"
  std::string verdict;  // "transient", "terminal", "stable", "bounded", "unbounded", "first", "spike", ...
  std::string metric;
  std::optional<double> step;
  std::optional<int> rank;
  std::string summary;  // one line for the terminal
  std::vector<Evidence> evidence;
};

struct MetricSummary {
  std::string name;
  uint64_t count = 0;
  int ranks = 0;
  double min = 0, max = 0;
  double first_step = 0, first_value = 0, last_step = 0, last_value = 0;
  std::optional<int> points_rank;                 // the rank the points are from
  std::vector<std::pair<double, double>> points;  // (step, value), downsampled
  // The same per rank, for plots that compare ranks (a straggler's step time): at most
  // kPlotRanks ranks, the lowest ones and the one with the highest value, ~60 points each.
  struct RankPoints {
    int rank = 0;
    std::vector<std::pair<double, double>> points;
  };
  static constexpr size_t kPlotRanks = 8;
  std::vector<RankPoints> per_rank;
};

// One reason for the verdict: the rule that gave it, in words, with its evidence line
// where there is one.
struct Reason {
  std::string rule;  // rules.h name, e.g. "verdict.healthy-completion"
  std::string text;
  std::optional<Evidence> evidence;
};

// How far the run got, from its progress lines and completion lines.
struct Progress {
  int ranks = 0;                        // ranks (or streams) with progress lines
  std::optional<double> last_step;      // the highest last step over them
  std::optional<double> min_last_step;  // the lowest last step (a rank that stopped first)
  std::optional<double> total;          // the run's stated total ("step 16/80")
  std::string last_time;                // time of the latest progress line, as written
  std::optional<double> failed_at;      // the step at which the primary failed (its rank's last step)
  bool completed = false;               // a completion line, or the final step reached
  std::vector<Evidence> completion;     // the completion lines seen (a few)
};

// An error the run recovered from: the same rank made progress after it.
struct Recovery {
  std::string id;
  std::optional<int> rank;
  double steps_after = 0;  // progress after the error, in steps
  Evidence evidence;       // the error line
};

struct Diagnosis {
  VerdictKind verdict = VerdictKind::kUnknown;
  std::vector<Reason> reasons;  // why the verdict, best first
  std::optional<Finding> primary;
  std::vector<Collateral> collateral;
  std::vector<Hypothesis> hypotheses;
  std::vector<TimelineEntry> timeline;
  std::vector<Finding> symptoms;  // warnings and symptoms seen (deduplicated by id)
  std::vector<Verdict> verdicts;  // trends read from the numbers in the log
  std::vector<MetricSummary> series;
  std::vector<SourceSummary> sources;
  std::vector<Recovery> recovered;  // errors followed by progress on the same rank
  Progress progress;
  std::vector<std::string> errors;  // input problems (partial results)
  std::vector<std::string> notes;
  uint64_t lines = 0;  // (after notes)
  uint64_t bytes = 0;
  double seconds = 0;
};

}  // namespace ff::analyze
