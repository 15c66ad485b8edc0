// schedulers/schedulers.h — firstfault where the jobs run: `slurm-epilog` (Slurm's Epilog,
// EpilogSlurmctld or a strigger program), `slurm JOBID` and `k8s POD|job/NAME`
// (scheduler.cc, k8s.cc).
//
// They find a job's logs with the scheduler's own commands (scontrol, sacct, kubectl: run
// without a shell, each with a deadline; schedulers/process.h) and diagnose them as `diagnose`
// does. The epilog never fails the teardown: it is bounded in time, says its problems on
// stderr (which Slurm logs) and always exits 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ctime>

#include "pipeline/pipeline.h"
#include "history/history.h"

namespace ff::app {

struct SchedulerOptions {
  std::string textfile_dir;  // slurm-epilog --textfile-dir: node_exporter's textfile folder
  std::vector<std::string> metric_labels = {"partition"};  // slurm-epilog --metric-labels
  std::string history;                                     // slurm-epilog --history: the database ("" history_path())
  bool no_history = false;                                 // slurm-epilog --no-history
  std::string job;            // slurm, slurm-epilog: the job id (epilog: else $SLURM_JOB_ID)
  double timeout_s = 30;      // slurm-epilog: the whole run's bound, in seconds
  bool force = false;         // slurm-epilog: diagnose a job that succeeded too
  bool no_comment = false;    // slurm-epilog: leave AdminComment alone
  bool env_only = false;      // slurm-epilog: exit codes of 0 in the environment suffice (no scontrol)
  std::string target;         // k8s: POD, pod/POD or job/NAME
  std::string k8s_namespace;  // k8s -n
  std::string k8s_context;    // k8s --context
  bool previous = false;      // k8s --previous: the logs of the containers' previous run
};

// One line of `scontrol show job -o` as its Key=Value fields. Values may hold spaces
// (a Command= path, a Comment=): a field ends where " Key=" starts the next one. The list
// keeps every field in order (a key may come twice when a value holds " Key="); the map
// keeps the last.
std::map<std::string, std::string> parse_scontrol_fields(std::string_view line);
std::vector<std::pair<std::string, std::string>> parse_scontrol_field_list(std::string_view line);

// The records of a `scontrol show job -o` answer, one per line that starts with "JobId=".
// The job's owner writes some of the text (name, comment, command, paths), so a record's
// boundaries are certain only when every key is one scontrol prints and none comes twice,
// no line of the answer continues a record (a line break in a field), and no job is listed
// twice; otherwise `doubt` says why (the fields are still given, the last of a repeated
// key kept).
struct ScontrolRecord {
  std::map<std::string, std::string> fields;
  std::string doubt;  // "" when the boundaries are certain
};
std::vector<ScontrolRecord> parse_scontrol_records(std::string_view out);

// What firstfault needs to know of a Slurm job.
struct SlurmJob {
  std::string id, name, state, reason, exit_code, std_out, std_err, work_dir, user, batch_host, node_list;
  // For the fleet (issue 36): the partition and account ("" when Slurm says "(null)"), the
  // GPUs allocated (TRES gres/gpu, all nodes), and the seconds it ran (RunTime, Elapsed).
  std::string partition, account;
  int gpus = 0;
  double run_s = 0;
  // The owner, only where the record says it for certain (see parse_scontrol_records; from
  // sacct, its numeric UID/GID columns, which come before any free text); else unset and
  // owner_doubt says why.
  std::optional<unsigned> uid, gid;
  std::string owner_doubt;
  std::string from;  // "scontrol", "sacct" or "environment"
};

// The job's record from scontrol, or from sacct once slurmctld has forgotten it; the
// problem (said for a person) when neither knows it.
struct SlurmLookup {
  std::optional<SlurmJob> job;
  std::string problem;
};
SlurmLookup lookup_slurm_job(const std::string& id, double timeout_s);

// Slurm's filename pattern (%j %J %x %u %A %a %N %%) expanded for a job, as slurmstepd
// does for a batch job's output (step-level %s %t %n are left as they are).
std::string expand_slurm_pattern(std::string_view pattern, const SlurmJob& job);

// Whether the job failed, from the epilog's environment (SLURM_JOB_EXIT_CODE2,
// SLURM_JOB_DERIVED_EC) and its state: nullopt when nothing says (then it is diagnosed).
std::optional<bool> slurm_job_failed_from_env();
bool slurm_state_failed(std::string_view state, std::string_view exit_code, std::string_view reason = {});

// The job's facts as the history keeps them (GPU-hours: GPUs x the time it ran).
SchedulerFacts facts_of(const SlurmJob& j);
// The diagnosis JSON with a "job" object added: the scheduler's facts and when it ended
// (read by `firstfault report`); the text as it is when it is not a JSON object.
std::string with_job_facts(const std::string& diagnosis_json, const SlurmJob& j, std::time_t ended);

// "firstfault: failed: <title> (rank R, node N, file:line)": the one line for AdminComment.
std::string one_line_summary(const analyze::Diagnosis& d);

namespace detail {
// Slurm's durations ("[D-]HH:MM:SS", "MM:SS", "MM:SS.mmm") in seconds; 0 when unreadable.
double parse_slurm_duration(std::string_view s);
// The GPUs in a TRES list ("cpu=8,gres/gpu=4,gres/gpu:a100=4": the untyped count, else the
// typed counts summed); 0 when none.
int tres_gpus(std::string_view tres);
// A uid or gid written in decimal ("65534"); nullopt for anything else, and for (uid_t)-1.
std::optional<unsigned> parse_id(std::string_view s);
// `path` under `dir` unless it is absolute.
std::string absolute_in(const std::string& path, const std::string& dir);
}  // namespace detail

int run_slurm_epilog(const Options& opt, const SchedulerOptions& so);
int run_slurm(Options opt, const SchedulerOptions& so);
int run_k8s(Options opt, const SchedulerOptions& so);

}  // namespace ff::app
