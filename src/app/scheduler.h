// app/scheduler.h — firstfault where the jobs run: `slurm-epilog` (Slurm's Epilog,
// EpilogSlurmctld or a strigger program), `slurm JOBID` and `k8s POD|job/NAME`
// (scheduler.cc, k8s.cc).
//
// They find a job's logs with the scheduler's own commands (scontrol, sacct, kubectl: run
// without a shell, each with a deadline; app/process.h) and diagnose them as `diagnose`
// does. The epilog never fails the teardown: it is bounded in time, says its problems on
// stderr (which Slurm logs) and always exits 0.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/commands.h"

namespace ff::app {

struct SchedulerOptions {
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
// (a Command= path, a Comment=): a field ends where " Key=" starts the next one.
std::map<std::string, std::string> parse_scontrol_fields(std::string_view line);

// What firstfault needs to know of a Slurm job.
struct SlurmJob {
  std::string id, name, state, reason, exit_code, std_out, std_err, work_dir, user, batch_host, node_list;
  std::optional<unsigned> uid, gid;
  std::string from;  // "scontrol" or "sacct"
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

// "firstfault: failed: <title> (rank R, node N, file:line)": the one line for AdminComment.
std::string one_line_summary(const analyze::Diagnosis& d);

int run_slurm_epilog(const Options& opt, const SchedulerOptions& so);
int run_slurm(Options opt, const SchedulerOptions& so);
int run_k8s(Options opt, const SchedulerOptions& so);

}  // namespace ff::app
