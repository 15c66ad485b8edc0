// history/history.h — past diagnoses in a local SQLite database, and how often a failure recurs.
//
// Each diagnosis that `diagnose`, `watch` and `run` make is kept (unless --no-history)
// in `$XDG_STATE_HOME/firstfault/history.db` (else `~/.local/state/firstfault/history.db`;
// `FIRSTFAULT_HISTORY` names another file): when, which command, the job, the verdict and
// the primary failure (entry, category, fingerprint, rank, node). A job is its inputs'
// absolute paths with torchrun's `attempt_N` folders taken out, so the attempts of one
// elastic run are one job; diagnosing the same logs again updates their row instead of
// counting twice (a `run` job is its command and folder: "$ DIR: CMD"). recurrence() counts the other jobs that failed with the same signature
// in the last week, and the nodes they failed on: "3rd time this week; nodes gpu-0042
// twice". The Slurm epilog keeps the scheduler's facts too (job id, user, partition,
// account, node list, GPU-hours), in columns added to an older database when it opens.
//
// Thread-safety: one History per thread. Failure behaviour: a database that cannot be
// opened or written is an error the caller says once; nothing else depends on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analyze/diagnosis.h"
#include "base/result.h"

struct sqlite3;

namespace ff::app {

struct HistoryRow {
  int64_t unix_s = 0;
  std::string command;  // diagnose, watch, run
  std::string job;
  int attempt = -1;  // torchrun's attempt folder, or -1
  std::string verdict;
  std::string entry;  // the primary failure's KB entry ("" when none)
  std::string category;
  std::string fingerprint;
  int rank = -1;
  std::string node;
  std::string title;
  // Where a scheduler ran the job (the Slurm epilog): its id, owner, partition, account,
  // nodes and the GPU-hours it had run when it ended ("" and 0 for diagnose, watch, run).
  std::string job_id, user, partition, account, node_list;
  double gpu_hours = 0;
};

// What the scheduler says of a job, kept with its diagnosis (HistoryRow's last fields).
struct SchedulerFacts {
  std::string job_id, user, partition, account, node_list;
  double gpu_hours = 0;
};

struct Recurrence {
  int times = 0;                                   // this one included
  std::vector<std::pair<std::string, int>> nodes;  // nodes with more than one, most first
  std::string line;                                // "3rd time this week; nodes x twice", "" when first
};

class History {
 public:
  static Result<std::unique_ptr<History>> open(const std::string& path);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;
  // Keeps a diagnosis of `inputs` (as named) by `command`, at unix time now_s.
  Status add(const analyze::Diagnosis& d, const std::string& command, const std::vector<std::string>& inputs,
             int64_t now_s, const SchedulerFacts* facts = nullptr);
  // How often the signature recurred in the week before now_s (row: the one just added).
  Recurrence recurrence(const HistoryRow& row, int64_t now_s);
  // The newest rows first.
  std::vector<HistoryRow> list(int limit);
  // Every row, oldest first, one at a time (firstfault report: memory bounded by a row).
  Status each(const std::function<void(const HistoryRow&)>& fn);
  const HistoryRow& last() const { return last_; }

 private:
  explicit History(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  HistoryRow last_;
};

// Where the history is kept ("" when there is no home to put it in).
std::string history_path();
// The job key of inputs: absolute paths, attempt_N folders taken out, and the attempt.
std::string job_key(const std::vector<std::string>& inputs, int& attempt);
// "1st", "2nd", "3rd", "4th", ..., "11th", "12th", "13th", "21st".
std::string ordinal(int n);

// Adds the diagnosis to the history and returns the recurrence line ("" when none, or
// when the history cannot be used: said on stderr once). `path` "" is history_path();
// `facts`, the scheduler's, are kept with it (the Slurm epilog).
std::string remember_diagnosis(const analyze::Diagnosis& d, const std::string& command,
                               const std::vector<std::string>& inputs, const SchedulerFacts* facts = nullptr,
                               const std::string& path = "");

}  // namespace ff::app
