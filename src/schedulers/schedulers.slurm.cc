// schedulers/schedulers.slurm.cc — `firstfault slurm-epilog` and `firstfault slurm JOBID` (see
// scheduler.h; Kubernetes is in k8s.cc).
#include "schedulers/schedulers.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "analyze/diagnosis.h"
#include "history/history.h"
#include "pipeline/pipeline.h"
#include "schedulers/process.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "base/strings.h"
#include "fleet/fleet.h"
#include "scan/scan.h"

namespace ff::app {

namespace {

using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// The job as the epilog's environment describes it (SLURM_JOB_STDOUT is the pattern as
// given, not expanded). Its owner is job_owner's to say, from SLURM_JOB_UID.
std::optional<SlurmJob> from_environment(const std::string& id) {
  SlurmJob j;
  j.id = id;
  j.name = env("SLURM_JOB_NAME");
  j.user = env("SLURM_JOB_USER");
  j.work_dir = env("SLURM_JOB_WORK_DIR");
  j.node_list = env("SLURM_JOB_NODELIST");
  j.partition = env("SLURM_JOB_PARTITION");
  j.account = env("SLURM_JOB_ACCOUNT");
  const std::string out = env("SLURM_JOB_STDOUT");
  if (out.empty()) return std::nullopt;
  j.std_out = detail::absolute_in(expand_slurm_pattern(out, j), j.work_dir);
  j.std_err = detail::absolute_in(expand_slurm_pattern(env("SLURM_JOB_STDERR"), j), j.work_dir);
  j.from = "environment";
  return j;
}

bool regular_file(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> log_files(const SlurmJob& j) {
  std::vector<std::string> files;
  for (const std::string& f : {j.std_out, j.std_err}) {
    if (f.empty() || f == "/dev/null" || !regular_file(f)) continue;
    if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
  }
  return files;
}

void say(const std::string& id, const std::string& text) {
  fmt::print(stderr, "firstfault slurm-epilog: job {}: {}\n", escape_for_terminal(id), escape_for_terminal(text));
  std::fflush(stderr);
}

struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The job's owner, known for certain, or why not (in `why`). SLURM_JOB_UID/GID, which
// slurmd sets for the Epilog (and slurmctld for EpilogSlurmctld), come first, cross-checked
// with the record where its boundaries are certain; without them only such a record says.
// A name is never looked up: a name the node cannot resolve must not become root.
std::optional<Owner> job_owner(const SlurmJob& j, std::string& why) {
  const std::string env_uid = env("SLURM_JOB_UID"), env_gid = env("SLURM_JOB_GID");
  std::optional<unsigned> uid, gid;
  if (!env_uid.empty()) {
    uid = detail::parse_id(env_uid);
    if (!uid) {
      why = "SLURM_JOB_UID is not a uid ('" + env_uid + "')";
      return std::nullopt;
    }
    if (j.uid && *j.uid != *uid) {
      why = fmt::format("{} says the owner is uid {}, SLURM_JOB_UID says {}", j.from, *j.uid, *uid);
      return std::nullopt;
    }
    if (!env_gid.empty()) {
      gid = detail::parse_id(env_gid);
      if (!gid) {
        why = "SLURM_JOB_GID is not a gid ('" + env_gid + "')";
        return std::nullopt;
      }
    } else if (j.uid) {
      gid = j.gid;
    }
  } else if (j.uid) {
    uid = j.uid;
    gid = j.gid;
  } else {
    why = (j.owner_doubt.empty() ? j.from + " names no owner" : j.owner_doubt) + ", and SLURM_JOB_UID is not set";
    return std::nullopt;
  }
  if (!gid) {
    if (const struct passwd* pw = ::getpwuid(*uid)) {
      gid = pw->pw_gid;
    } else {
      why = fmt::format("the group of uid {} is not known (no SLURM_JOB_GID, no passwd entry)", *uid);
      return std::nullopt;
    }
  }
  return Owner{static_cast<uid_t>(*uid), static_cast<gid_t>(*gid)};
}

// The job's owner for the time the logs are read and the diagnosis written: a root epilog
// must not read, for the user, a file the user could not read (a StdOut that is a link to
// /etc/shadow), nor leave root's files in the user's folder. An epilog that is neither
// root nor the owner cannot act as the owner, so it reads nothing (`problem` says so).
class AsJobOwner {
 public:
  AsJobOwner(const Owner& o, std::string& problem) {
    if (::geteuid() != 0) {
      if (::geteuid() != o.uid)
        problem = fmt::format("runs as uid {}, neither root nor the job's owner (uid {}): it cannot read as the owner",
                              ::geteuid(), o.uid);
      return;
    }
    if (o.uid == 0) return;  // root's own job
    saved_groups_.resize(static_cast<size_t>(std::max(0, ::getgroups(0, nullptr))));
    if (!saved_groups_.empty())
      saved_groups_.resize(
          static_cast<size_t>(::getgroups(static_cast<int>(saved_groups_.size()), saved_groups_.data())));
    const struct passwd* pw = ::getpwuid(o.uid);
    touched_ = true;
    const bool groups_ok = pw ? ::initgroups(pw->pw_name, o.gid) == 0 : ::setgroups(1, &o.gid) == 0;
    if (!groups_ok || ::setegid(o.gid) != 0 || ::seteuid(o.uid) != 0) {
      problem = fmt::format("cannot act as the job's user (uid {}): {}", o.uid, std::strerror(errno));
      restore();
      return;
    }
    switched_ = true;
  }
  ~AsJobOwner() { restore(); }
  bool switched() const { return switched_; }
  void restore() {
    if (done_) return;
    done_ = true;
    if (!touched_) return;
    if (::geteuid() != 0 && ::seteuid(0) != 0) return;
    if (::setegid(0) != 0) {}
    if (::setgroups(saved_groups_.size(), saved_groups_.data()) != 0) {}
  }

 private:
  std::vector<gid_t> saved_groups_;
  bool touched_ = false;  // the groups or ids were changed: restore() puts them back
  bool switched_ = false;
  bool done_ = false;
};

// What the epilog's environment adds to a record that lacks it (slurmd sets
// SLURM_JOB_PARTITION and SLURM_JOB_ACCOUNT for the Epilog, SLURM_JOB_GPUS for this
// node's GPUs).
void fill_from_environment(SlurmJob& j) {
  if (j.partition.empty()) j.partition = env("SLURM_JOB_PARTITION");
  if (j.account.empty()) j.account = env("SLURM_JOB_ACCOUNT");
  if (j.node_list.empty()) j.node_list = env("SLURM_JOB_NODELIST");
  if (j.gpus == 0) {
    const std::string gpus = env("SLURM_JOB_GPUS");
    if (!gpus.empty()) j.gpus = static_cast<int>(std::count(gpus.begin(), gpus.end(), ',')) + 1;
  }
}

std::string utc_iso(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

SchedulerFacts facts_of(const SlurmJob& j) {
  SchedulerFacts f;
  f.job_id = j.id;
  f.user = j.user;
  f.partition = j.partition;
  f.account = j.account;
  f.node_list = j.node_list;
  f.gpu_hours = j.gpus * j.run_s / 3600.0;
  return f;
}

std::string with_job_facts(const std::string& diagnosis_json, const SlurmJob& j, std::time_t ended) {
  auto d = nlohmann::ordered_json::parse(diagnosis_json, nullptr, false);
  if (d.is_discarded() || !d.is_object()) return diagnosis_json;
  const SchedulerFacts f = facts_of(j);
  d["job"] = {
      {"scheduler", "slurm"},     {"id", j.id},           {"name", j.name},           {"user", j.user},
      {"partition", j.partition}, {"account", j.account}, {"node_list", j.node_list}, {"state", j.state},
      {"exit_code", j.exit_code}, {"gpus", j.gpus},       {"run_seconds", j.run_s},   {"gpu_hours", f.gpu_hours},
      {"ended", utc_iso(ended)}};
  return d.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::optional<bool> slurm_job_failed_from_env() {
  const std::string ec2 = env("SLURM_JOB_EXIT_CODE2"), derived = env("SLURM_JOB_DERIVED_EC");
  const std::string ec = env("SLURM_JOB_EXIT_CODE");
  if (ec2.empty() && derived.empty() && ec.empty()) return std::nullopt;
  auto nonzero = [](const std::string& s) {
    for (char c : s) {
      if (c >= '1' && c <= '9') return true;
    }
    return false;
  };
  return nonzero(ec2) || nonzero(derived) || nonzero(ec);
}

bool slurm_state_failed(std::string_view state, std::string_view exit_code, std::string_view reason) {
  static constexpr std::string_view kFailed[] = {"FAILED",    "TIMEOUT",  "NODE_FAIL", "OUT_OF_MEMORY",
                                                 "BOOT_FAIL", "DEADLINE", "CANCELLED", "PREEMPTED"};
  for (std::string_view s : kFailed) {
    if (starts_with(state, s)) return true;
  }
  // In its epilog a job is COMPLETING: the Reason and ExitCode still tell.
  static constexpr std::string_view kReasons[] = {"TimeLimit",   "NonZeroExitCode", "RaisedSignal",    "NodeDown",
                                                  "OutOfMemory", "DeadLine",        "JobLaunchFailure"};
  for (std::string_view r : kReasons) {
    if (starts_with(reason, r)) return true;
  }
  for (char c : exit_code) {
    if (c >= '1' && c <= '9') return true;
  }
  return false;
}

std::string one_line_summary(const analyze::Diagnosis& d) {
  std::string s = std::string("firstfault: ") + analyze::verdict_name(d.verdict) + ": ";
  if (d.primary) {
    const auto& p = *d.primary;
    s += p.title;
    std::vector<std::string> where;
    if (p.rank) where.push_back(fmt::format("rank {}", *p.rank));
    if (!p.node.empty()) where.push_back("node " + p.node);
    if (!p.evidence.empty() && p.evidence[0].line > 0)
      where.push_back(
          fmt::format("{}:{}", std::filesystem::path(p.evidence[0].source).filename().string(), p.evidence[0].line));
    if (!where.empty()) s += fmt::format(" ({})", fmt::join(where, ", "));
  } else if (!d.reasons.empty()) {
    s += d.reasons[0].text;
  }
  // One line of printable text, short enough for a comment field and a squeue column.
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  if (s.size() > 240) {
    size_t cut = 237;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    s = s.substr(0, cut) + "...";
  }
  return s;
}

// Over 80 lines: the epilog's course under its watchdog, in order (the job's facts, its
// owner, the logs, the diagnosis, where it is written), each step bounded by the deadline.
int run_slurm_epilog(const Options& opt_in, const SchedulerOptions& so) {
  const auto t0 = Clock::now();
  const double timeout = std::clamp(so.timeout_s, 1.0, 3600.0);
  const auto deadline = t0 + std::chrono::milliseconds(static_cast<long long>(timeout * 1000));
  std::string id = so.job;
  if (id.empty()) id = env("SLURM_JOB_ID");
  if (id.empty()) id = env("SLURM_JOBID");
  if (id.empty()) {
    say("?", "no job id (SLURM_JOB_ID is not set and no --job was given); nothing done");
    return 0;
  }
  // A healthy job costs nothing but this: no command is run, no file read.
  // SLURM_JOB_EXIT_CODE2 and SLURM_JOB_DERIVED_EC: a job that exited non-zero is failed.
  // Zeros are not proof of success: a job cancelled at its time limit shows 0:0 there
  // (slurmd 22.05) while slurmctld has ExitCode=143:0 Reason=TimeLimit, so its record is
  // asked for (one RPC), unless --env-only.
  const std::optional<bool> env_failed = slurm_job_failed_from_env();
  if (env_failed == false && !so.force && so.env_only) return 0;

  // The bound: reading stops a fifth of the time before the deadline (the answer so far is
  // written, `incomplete` unless it shows a failure); at the deadline the process ends,
  // still with 0, whatever it was doing.
  const auto reserve = std::chrono::milliseconds(static_cast<long long>(std::min(5.0, timeout / 5) * 1000));
  std::thread([deadline, reserve, id] {
    std::this_thread::sleep_until(deadline - reserve);
    interrupt_at_deadline();
    std::this_thread::sleep_until(deadline);
    say(id, "the deadline (--timeout) passed; stopped");
    std::_Exit(0);
  }).detach();
  auto left_s = [&] { return std::max(1.0, std::chrono::duration<double>(deadline - reserve - Clock::now()).count()); };

  try {
    SlurmLookup look = lookup_slurm_job(id, std::min(env_failed == false ? 5.0 : 10.0, left_s()));
    if (!look.job) {
      if (env_failed == false && !so.force) return 0;  // healthy by its exit codes, and nothing else known
      look.job = from_environment(id);
      if (!look.job) {
        say(id, "cannot find the job's output: " + look.problem);
        return 0;
      }
    }
    SlurmJob& job = *look.job;
    fill_from_environment(job);
    if (env_failed != true && !so.force && !slurm_state_failed(job.state, job.exit_code, job.reason)) return 0;
    // The slurmd Epilog runs on every node of the job; the batch script's output is the
    // batch host's to read.
    const std::string node = env("SLURMD_NODENAME");
    if (env("SLURM_SCRIPT_CONTEXT") == "epilog_slurmd" && !node.empty() && !job.batch_host.empty() &&
        node != job.batch_host)
      return 0;
    // Whose rights the output is read with: the owner, known for certain, or nothing is read.
    std::string why;
    const std::optional<Owner> job_user = job_owner(job, why);
    if (!job_user) {
      say(id, "the job's owner is not known for certain (" + why + "); nothing read");
      return 0;
    }
    Options opt = opt_in;
    opt.no_progress = true;
    auto loaded = load_everything(opt, true, KbFields::kDiagnosis);
    if (!loaded.ok()) {
      say(id, loaded.error().to_string());
      return 0;
    }
    DiagnosedJob diagnosed;
    const std::time_t ended = std::time(nullptr);
    std::vector<std::string> inputs;
    std::string json, markdown;
    std::vector<std::string> written;
    {
      std::string problem;
      AsJobOwner owner(*job_user, problem);
      if (!problem.empty()) {
        say(id, problem + "; nothing read");
        return 0;
      }
      // As the owner from here: even whether the output is a file is the owner's to see.
      const std::vector<std::string> files = log_files(job);
      if (files.empty()) {
        say(id, fmt::format("no output file to diagnose (StdOut={}, StdErr={})", job.std_out, job.std_err));
        return 0;
      }
      opt.inputs = files;
      inputs = files;
      // The diagnosis quotes the output's lines: it gets the output's mode, never wider
      // (a 0600 output, a 0600 diagnosis), and, written as the owner, the owner's files.
      struct stat out_st {};
      const mode_t mode = ::stat(files[0].c_str(), &out_st) == 0 ? (out_st.st_mode & 0666) : 0600;
      scan::ScanOptions sopt;
      sopt.threads = opt.threads;
      const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
        return scan::scan_job(engine, files, sink, sopt);
      };
      if (!diagnose_loaded(*loaded, opt, scan_fn, files, diagnosed)) return 0;
      for (const auto& e : diagnosed.input_errors) say(id, e.to_string());
      if (diagnosed.nothing_read) mark_nothing_read(diagnosed.d);
      json = with_job_facts(render_report(diagnosed, "json", opt), job, ended);
      markdown = render_report(diagnosed, "markdown", opt);
      const std::string base = files[0];
      for (const auto& [suffix, bytes] :
           {std::pair<const char*, const std::string*>{".firstfault.json", &json}, {".firstfault.md", &markdown}}) {
        const std::string path = base + suffix;
        if (std::string p = write_output_file(path, *bytes, mode, false); !p.empty())
          say(id, fmt::format("cannot write {}: {}", path, p));
        else
          written.push_back(path);
      }
    }
    const std::string summary = one_line_summary(diagnosed.d);
    // The history (history/history.h), as root (the owner's rights are given back above): the
    // node's record of its jobs, with the scheduler's facts, for `firstfault report --history`.
    if (!so.no_history && !diagnosed.nothing_read) {
      const SchedulerFacts facts = facts_of(job);
      (void)remember_diagnosis(diagnosed.d, "slurm-epilog", inputs, &facts, so.history);
    }
    // The node's counters for node_exporter's textfile collector (fleet/fleet.h).
    if (!so.textfile_dir.empty()) {
      fleet::JobOutcome o;
      o.verdict = analyze::verdict_name(diagnosed.d.verdict);
      if (const auto& p = diagnosed.d.primary) {
        o.entry = p->id;
        o.category = p->category;
        o.node = p->node;
      }
      o.user = job.user;
      o.partition = job.partition;
      o.account = job.account;
      o.gpu_hours = facts_of(job).gpu_hours;
      o.ended_unix = static_cast<int64_t>(ended);
      std::vector<std::string> labels;
      for (const auto& l : so.metric_labels) {
        if (!l.empty()) labels.push_back(l);
      }
      std::string here = env("SLURMD_NODENAME");
      if (here.empty()) {
        char host[256] = {};
        if (::gethostname(host, sizeof host - 1) == 0) here = host;
      }
      if (Status st = fleet::update_textfile(so.textfile_dir, "firstfault.prom", labels, o, here,
                                             static_cast<int>(std::min(5.0, left_s()) * 1000));
          !st.ok())
        say(id, "metrics not written: " + st.error().to_string());
    }
    std::string comment = "AdminComment not set (--no-comment)";
    if (!so.no_comment) {
      CommandOptions co;
      co.timeout = std::chrono::milliseconds(static_cast<long long>(std::min(10.0, left_s()) * 1000));
      CommandResult up = run_command({"scontrol", "update", "JobId=" + id, "AdminComment=" + summary}, co);
      if (up.ok()) {
        comment = "AdminComment set";
      } else {
        // slurmctld refuses any update to a job that has finished, and a job in its
        // epilog has (COMPLETING counts): the accounting record is what is left to annotate.
        CommandResult acct = run_command(
            {"sacctmgr", "-i", "modify", "job", "where", "JobID=" + id, "set", "AdminComment=" + summary}, co);
        comment = acct.ok() ? "AdminComment set in the accounting database (sacctmgr)"
                            : "AdminComment not set: " + up.describe("scontrol update") + "; " +
                                  acct.describe("sacctmgr modify job");
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    say(id, fmt::format("{}; wrote {}; {} ({:.2f} s)", summary,
                        written.empty() ? "nothing" : fmt::format("{}", fmt::join(written, ", ")), comment, secs));
  } catch (const std::exception& e) { say(id, std::string("error: ") + e.what()); } catch (...) {
    say(id, "error");
  }
  return 0;
}

int run_slurm(Options opt, const SchedulerOptions& so) {
  SlurmLookup look = lookup_slurm_job(so.job, so.timeout_s);
  if (!look.job) {
    fmt::print(stderr, "firstfault: job {}: {}\n", escape_for_terminal(so.job), escape_for_terminal(look.problem));
    return 2;
  }
  const SlurmJob& job = *look.job;
  opt.inputs = log_files(job);
  if (opt.inputs.empty()) {
    fmt::print(stderr, "firstfault: job {} ({}): its output cannot be read here (StdOut={}, StdErr={})\n",
               escape_for_terminal(so.job), escape_for_terminal(job.state), escape_for_terminal(job.std_out),
               escape_for_terminal(job.std_err));
    return 2;
  }
  fmt::print(stderr, "firstfault: job {} ({}, exit {}, from {}): {}\n", escape_for_terminal(so.job),
             escape_for_terminal(job.state), escape_for_terminal(job.exit_code), job.from,
             escape_for_terminal(fmt::format("{}", fmt::join(opt.inputs, ", "))));
  return run_diagnose(opt);
}

}  // namespace ff::app
