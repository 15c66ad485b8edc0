// app/scheduler.cc — `firstfault slurm-epilog` and `firstfault slurm JOBID` (see
// scheduler.h; Kubernetes is in k8s.cc).
#include "app/scheduler.h"

#include <fmt/format.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "analyze/diagnosis.h"
#include "app/kb_check.h"
#include "app/process.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "base/strings.h"
#include "scan/scan.h"

namespace ff::app {

namespace {

using Clock = std::chrono::steady_clock;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool is_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ':' || c == '/';
}

// At `i` (just after a space): a "Key=" that starts a field.
bool key_starts_at(std::string_view s, size_t i) {
  if (i >= s.size() || !((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))) return false;
  size_t k = i;
  while (k < s.size() && is_key_char(s[k])) ++k;
  return k < s.size() && s[k] == '=';
}

// "root(0)" -> 0
std::optional<unsigned> id_in_parens(std::string_view v) {
  const size_t a = v.rfind('('), b = v.rfind(')');
  if (a == std::string_view::npos || b == std::string_view::npos || b <= a + 1) return std::nullopt;
  unsigned n = 0;
  for (size_t i = a + 1; i < b; ++i) {
    if (v[i] < '0' || v[i] > '9') return std::nullopt;
    n = n * 10 + static_cast<unsigned>(v[i] - '0');
  }
  return n;
}

std::string name_before_parens(std::string_view v) {
  const size_t a = v.find('(');
  return std::string(a == std::string_view::npos ? v : v.substr(0, a));
}

bool regular_file(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string absolute_in(const std::string& path, const std::string& dir) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

// The -o/--output and -e/--error of an sbatch command line (sacct's SubmitLine).
std::string submit_option(const std::string& line, std::string_view short_opt, std::string_view long_opt) {
  std::vector<std::string> words;
  for (std::string_view w : split(line, ' ')) {
    if (!w.empty()) words.emplace_back(w);
  }
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == short_opt || w == long_opt) return i + 1 < words.size() ? words[i + 1] : std::string();
    if (starts_with(w, std::string(long_opt) + "=")) return w.substr(long_opt.size() + 1);
    if (starts_with(w, short_opt) && w.size() > short_opt.size() && w[1] != '-') return w.substr(short_opt.size());
  }
  return {};
}

SlurmJob from_scontrol(const std::map<std::string, std::string>& f) {
  SlurmJob j;
  auto get = [&](const char* k) {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  };
  j.id = get("JobId");
  j.name = get("JobName");
  j.state = get("JobState");
  j.exit_code = get("ExitCode");
  j.reason = get("Reason");
  j.std_out = get("StdOut");
  j.std_err = get("StdErr");
  j.work_dir = get("WorkDir");
  j.user = name_before_parens(get("UserId"));
  j.uid = id_in_parens(get("UserId"));
  j.gid = id_in_parens(get("GroupId"));
  j.batch_host = get("BatchHost");
  j.node_list = get("NodeList");
  j.from = "scontrol";
  return j;
}

std::optional<SlurmJob> from_sacct(const std::string& out, bool with_std, std::string& problem) {
  for (std::string_view line : split(out, '\n')) {
    if (trim(line).empty()) continue;
    std::vector<std::string> c;
    for (std::string_view piece : split(line, '|')) c.emplace_back(piece);
    const size_t need = with_std ? 10 : 8;
    if (c.size() < need) continue;
    SlurmJob j;
    j.id = c[0];
    j.name = c[1];
    j.state = c[2];
    j.exit_code = c[3];
    j.work_dir = c[4];
    j.user = c[5];
    j.node_list = c[6];
    size_t next = 7;
    if (with_std) {
      j.std_out = c[7];
      j.std_err = c[8];
      next = 9;
    }
    std::string submit;  // the rest: SubmitLine may hold '|'
    for (size_t i = next; i < c.size(); ++i) submit += (i > next ? "|" : "") + c[i];
    if (struct passwd* pw = ::getpwnam(j.user.c_str())) {
      j.uid = pw->pw_uid;
      j.gid = pw->pw_gid;
    }
    j.batch_host = j.node_list.find_first_of("[,") == std::string::npos ? j.node_list : std::string();
    // Before Slurm 24.05 sacct has no StdOut: the sbatch line's -o/-e (the caller then
    // tries the stored batch script's #SBATCH lines, then sbatch's default).
    if (j.std_out.empty()) j.std_out = submit_option(submit, "-o", "--output");
    if (j.std_err.empty()) j.std_err = submit_option(submit, "-e", "--error");
    j.from = "sacct";
    return j;
  }
  problem = "sacct knows no such job";
  return std::nullopt;
}

// The job as the epilog's environment describes it (SLURM_JOB_STDOUT is the pattern as
// given, not expanded).
std::optional<SlurmJob> from_environment(const std::string& id) {
  SlurmJob j;
  j.id = id;
  j.name = env("SLURM_JOB_NAME");
  j.user = env("SLURM_JOB_USER");
  j.work_dir = env("SLURM_JOB_WORK_DIR");
  j.node_list = env("SLURM_JOB_NODELIST");
  if (const std::string u = env("SLURM_JOB_UID"); !u.empty())
    j.uid = static_cast<unsigned>(std::strtoul(u.c_str(), nullptr, 10));
  if (const std::string g = env("SLURM_JOB_GID"); !g.empty())
    j.gid = static_cast<unsigned>(std::strtoul(g.c_str(), nullptr, 10));
  const std::string out = env("SLURM_JOB_STDOUT");
  if (out.empty()) return std::nullopt;
  j.std_out = absolute_in(expand_slurm_pattern(out, j), j.work_dir);
  j.std_err = absolute_in(expand_slurm_pattern(env("SLURM_JOB_STDERR"), j), j.work_dir);
  j.from = "environment";
  return j;
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

// The job's owner for the time the logs are read and the diagnosis written: a root epilog
// must not read, for the user, a file the user could not read (a StdOut that is a link to
// /etc/shadow), nor leave root's files in the user's folder.
class AsJobOwner {
 public:
  AsJobOwner(const SlurmJob& j, std::string& problem) {
    if (::geteuid() != 0 || !j.uid || *j.uid == 0) return;
    const gid_t gid = j.gid ? *j.gid : static_cast<gid_t>(*j.uid);
    saved_groups_.resize(static_cast<size_t>(std::max(0, ::getgroups(0, nullptr))));
    if (!saved_groups_.empty())
      saved_groups_.resize(
          static_cast<size_t>(::getgroups(static_cast<int>(saved_groups_.size()), saved_groups_.data())));
    const struct passwd* pw = ::getpwuid(*j.uid);
    const bool groups_ok = pw ? ::initgroups(pw->pw_name, gid) == 0 : ::setgroups(1, &gid) == 0;
    if (!groups_ok || ::setegid(gid) != 0 || ::seteuid(*j.uid) != 0) {
      problem = fmt::format("cannot act as the job's user (uid {}): {}", *j.uid, std::strerror(errno));
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
    if (::geteuid() != 0 && ::seteuid(0) != 0) return;
    if (::setegid(0) != 0) {}
    if (::setgroups(saved_groups_.size(), saved_groups_.data()) != 0) {}
  }

 private:
  std::vector<gid_t> saved_groups_;
  bool switched_ = false;
  bool done_ = false;
};

}  // namespace

std::map<std::string, std::string> parse_scontrol_fields(std::string_view line) {
  std::map<std::string, std::string> fields;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  while (i < line.size()) {
    const size_t eq = line.find('=', i);
    if (eq == std::string_view::npos) break;
    const std::string key(line.substr(i, eq - i));
    size_t end = eq + 1;
    for (;;) {
      const size_t sp = line.find(' ', end);
      if (sp == std::string_view::npos) {
        end = line.size();
        break;
      }
      if (key_starts_at(line, sp + 1)) {
        end = sp;
        break;
      }
      end = sp + 1;
    }
    fields[key] = std::string(line.substr(eq + 1, end - eq - 1));
    i = end;
    while (i < line.size() && line[i] == ' ') ++i;
  }
  return fields;
}

std::string expand_slurm_pattern(std::string_view p, const SlurmJob& job) {
  std::string out;
  const size_t us = job.id.find('_');
  const std::string master = us == std::string::npos ? job.id : job.id.substr(0, us);
  const std::string task = us == std::string::npos ? std::string() : job.id.substr(us + 1);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%' || i + 1 >= p.size()) {
      out += p[i];
      continue;
    }
    size_t k = i + 1;
    int width = 0;
    while (k < p.size() && p[k] >= '0' && p[k] <= '9') width = std::min(10, width * 10 + (p[k++] - '0'));
    if (k >= p.size()) {
      out += p.substr(i);
      break;
    }
    auto pad = [&](const std::string& v) {
      return static_cast<int>(v.size()) < width ? std::string(static_cast<size_t>(width) - v.size(), '0') + v : v;
    };
    switch (p[k]) {
      case '%': out += '%'; break;
      case 'j':
      case 'J': out += pad(job.id); break;
      case 'A': out += pad(master); break;
      case 'a': out += pad(task.empty() ? "4294967294" : task); break;
      case 'x': out += job.name; break;
      case 'u': out += job.user; break;
      case 'N': out += job.batch_host.empty() ? job.node_list : job.batch_host; break;
      default: out += p.substr(i, k - i + 1); break;  // %s %t %n: per step or task
    }
    i = k;
  }
  return out;
}

SlurmLookup lookup_slurm_job(const std::string& id, double timeout_s) {
  SlurmLookup r;
  CommandOptions co;
  co.timeout = std::chrono::milliseconds(static_cast<long long>(std::max(1.0, timeout_s) * 1000));
  CommandResult sc = run_command({"scontrol", "show", "job", "-o", id}, co);
  if (sc.ok()) {
    for (std::string_view line : split(sc.out, '\n')) {
      auto fields = parse_scontrol_fields(line);
      // An array job lists every task: the one asked for, else the first.
      if (fields.count("JobId") == 0) continue;
      SlurmJob j = from_scontrol(fields);
      const auto arr = fields.find("ArrayJobId"), task = fields.find("ArrayTaskId");
      const bool same =
          j.id == id || (arr != fields.end() && task != fields.end() && arr->second + "_" + task->second == id);
      if (!r.job || same) r.job = j;
      if (same) break;
    }
    if (r.job) return r;
  }
  std::string why = sc.describe("scontrol");
  // Not in slurmctld's memory any more (MinJobAge): the accounting database.
  const std::vector<std::string> base = {"sacct", "-j", id, "-X", "-n", "-P", "-o"};
  auto with = [&](const char* fields) {
    std::vector<std::string> a = base;
    a.emplace_back(fields);
    return a;
  };
  CommandResult sa =
      run_command(with("JobID,JobName,State,ExitCode,WorkDir,User,NodeList,StdOut,StdErr,SubmitLine"), co);
  bool with_std = true;
  if (!sa.ok() && (sa.err.find("Invalid field") != std::string::npos || sa.err.find("StdOut") != std::string::npos)) {
    sa = run_command(with("JobID,JobName,State,ExitCode,WorkDir,User,NodeList,SubmitLine"), co);  // before 24.05
    with_std = false;
  }
  if (sa.ok()) {
    std::string problem;
    if (auto j = from_sacct(sa.out, with_std, problem)) {
      // #SBATCH -o/-e in the script, which slurmdbd keeps with AccountingStoreFlags=job_script.
      if (j->std_out.empty() || j->std_err.empty()) {
        CommandResult script = run_command({"sacct", "-j", id, "--batch-script"}, co);
        if (script.ok()) {
          std::string options;
          for (std::string_view line : split(script.out, '\n')) {
            if (starts_with(line, "#SBATCH")) options += " " + std::string(trim(line.substr(7)));
          }
          if (j->std_out.empty()) j->std_out = submit_option(options, "-o", "--output");
          if (j->std_err.empty()) j->std_err = submit_option(options, "-e", "--error");
        }
      }
      if (j->std_out.empty()) j->std_out = j->id.find('_') != std::string::npos ? "slurm-%A_%a.out" : "slurm-%j.out";
      j->std_out = absolute_in(expand_slurm_pattern(j->std_out, *j), j->work_dir);
      j->std_err = absolute_in(expand_slurm_pattern(j->std_err, *j), j->work_dir);
      r.job = std::move(j);
      return r;
    }
    r.problem = why + "; " + problem;
    return r;
  }
  r.problem = why + "; " + sa.describe("sacct");
  return r;
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
    if (env_failed != true && !so.force && !slurm_state_failed(job.state, job.exit_code, job.reason)) return 0;
    // The slurmd Epilog runs on every node of the job; the batch script's output is the
    // batch host's to read.
    const std::string node = env("SLURMD_NODENAME");
    if (env("SLURM_SCRIPT_CONTEXT") == "epilog_slurmd" && !node.empty() && !job.batch_host.empty() &&
        node != job.batch_host)
      return 0;
    const std::vector<std::string> files = log_files(job);
    if (files.empty()) {
      say(id, fmt::format("no output file to diagnose (StdOut={}, StdErr={})", job.std_out, job.std_err));
      return 0;
    }
    Options opt = opt_in;
    opt.inputs = files;
    opt.no_progress = true;
    auto loaded = load_everything(opt, true, KbFields::kDiagnosis);
    if (!loaded.ok()) {
      say(id, loaded.error().to_string());
      return 0;
    }
    DiagnosedJob diagnosed;
    std::string json, markdown;
    std::vector<std::string> written;
    {
      std::string problem;
      AsJobOwner owner(job, problem);
      if (!problem.empty()) {
        say(id, problem + "; nothing read");
        return 0;
      }
      scan::ScanOptions sopt;
      sopt.threads = opt.threads;
      const ScanFn scan_fn = [&](const scan::Engine& engine, scan::EventSink& sink) {
        return scan::scan_job(engine, files, sink, sopt);
      };
      if (!diagnose_loaded(*loaded, opt, scan_fn, files, diagnosed)) return 0;
      for (const auto& e : diagnosed.input_errors) say(id, e.to_string());
      if (diagnosed.nothing_read) mark_nothing_read(diagnosed.d);
      json = render_report(diagnosed, "json", opt);
      markdown = render_report(diagnosed, "markdown", opt);
      const std::string base = files[0];
      for (const auto& [suffix, bytes] :
           {std::pair<const char*, const std::string*>{".firstfault.json", &json}, {".firstfault.md", &markdown}}) {
        const std::string path = base + suffix;
        if (std::string p = write_output_file(path, *bytes); !p.empty())
          say(id, fmt::format("cannot write {}: {}", path, p));
        else
          written.push_back(path);
      }
    }
    const std::string summary = one_line_summary(diagnosed.d);
    // TODO(history): record the diagnosis in the history database (issue "Watch a live
    // run", app history) once it lands: job id, cluster ($SLURM_CLUSTER_NAME), files, JSON.
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
