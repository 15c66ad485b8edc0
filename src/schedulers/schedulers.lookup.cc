// schedulers/schedulers.lookup.cc — a Slurm job's record (see schedulers.h): `scontrol show job -o`
// read record by record with its field boundaries checked, `sacct` once slurmctld has
// forgotten the job, and Slurm's filename patterns.
//
// Both commands print text that the job's owner partly wrote (the job name, the comment,
// the command, the paths): a field may hold " UserId=root(0)", a line break or a '|'. What
// decides whose rights the epilog reads with (the uid) is therefore taken only from a
// record whose boundaries are certain: scontrol's keys all known and each once, no line
// that does not start a record, no job listed twice; sacct's numeric UID in a column that
// comes before any free text. Anything else leaves the uid unknown, with the reason.
#include <fmt/format.h>
#include <pwd.h>

#include <algorithm>
#include <set>

#include "schedulers/process.h"
#include "schedulers/schedulers.h"
#include "base/strings.h"

namespace ff::app {

namespace {

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

// The keys `scontrol show job` prints (slurm_sprint_job_info, Slurm 22.05 to 24.11, with
// and without -d). A key outside the list is text that looks like a field: the record's
// boundaries are then not certain.
const std::set<std::string, std::less<>>& known_scontrol_keys() {
  static const std::set<std::string, std::less<>> keys = {
      "JobId", "ArrayJobId", "ArrayTaskId", "ArrayTaskThrottle", "HetJobId", "HetJobOffset", "HetJobIdSet",
      "JobName", "UserId", "GroupId", "MCS_label", "Priority", "Nice", "Account", "QOS", "WCKey", "JobState",
      "Reason", "FailedNode", "Dependency", "Requeue", "Restarts", "BatchFlag", "Reboot", "ExitCode",
      "DerivedExitCode", "RunTime", "TimeLimit", "TimeMin", "SubmitTime", "EligibleTime", "AccrueTime",
      "StartTime", "EndTime", "Deadline", "PreemptEligibleTime", "PreemptTime", "SuspendTime", "SecsPreSuspend",
      "LastSchedEval", "ResizeTime", "Scheduler", "Partition", "AllocNode:Sid", "ReqNodeList", "ExcNodeList",
      "NodeList", "BatchHost", "SchedNodeList", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "ReqB:S:C:T",
      "ReqS:C:T", "TRES", "ReqTRES", "AllocTRES", "Socks/Node", "NtasksPerN:B:S:C", "CoreSpec", "ThreadSpec",
      "MinCPUsNode", "MinMemoryNode", "MinMemoryCPU", "MinTmpDiskNode", "Features", "ClusterFeatures", "Prefer",
      "DelayBoot", "OverSubscribe", "Contiguous", "Licenses", "LicensesAlloc", "Network", "Command", "WorkDir",
      "AdminComment", "SystemComment", "Comment", "Extra", "StdErr", "StdIn", "StdOut", "Switches",
      "BurstBuffer", "BurstBufferState", "CpuFreqMin", "CpuFreqMax", "CpuFreqGov", "Power", "TresPerNode",
      "TresPerSocket", "TresPerTask", "TresPerJob", "TresBind", "TresFreq", "MemPerTres", "NtasksPerTRES",
      "CpusPerTres", "GresEnforceBind", "KillOInInvalidDependent", "KillOnInvalidDependent", "SpreadJob",
      "Nodes", "CPU_IDs", "Mem", "GRES", "GRES_IDX", "JOB_GRES", "Reservation", "Container", "ContainerID",
      "MailUser", "MailType", "SelinuxContext", "ResvPorts", "OOMKillStep", "SegmentSize", "StepMgrEnabled",
      "CronJob", "CrontabSpec", "Profile", "MaxNodes", "NodeSet", "ResvName"};
  return keys;
}

// "root(0)" -> 0
std::optional<unsigned> id_in_parens(std::string_view v) {
  const size_t a = v.rfind('('), b = v.rfind(')');
  if (a == std::string_view::npos || b == std::string_view::npos || b <= a + 1 || b + 1 != v.size())
    return std::nullopt;
  return detail::parse_id(v.substr(a + 1, b - a - 1));
}

std::string name_before_parens(std::string_view v) {
  const size_t a = v.find('(');
  return std::string(a == std::string_view::npos ? v : v.substr(0, a));
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

// Slurm writes "(null)" for a field that has no value.
std::string not_null(std::string v) { return v == "(null)" ? std::string() : v; }

SlurmJob from_scontrol(const ScontrolRecord& r) {
  const auto& f = r.fields;
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
  j.batch_host = get("BatchHost");
  j.node_list = get("NodeList");
  j.partition = not_null(get("Partition"));
  j.account = not_null(get("Account"));
  j.gpus = detail::tres_gpus(get("AllocTRES").empty() ? get("TRES") : get("AllocTRES"));
  j.run_s = detail::parse_slurm_duration(get("RunTime"));
  j.from = "scontrol";
  if (!r.doubt.empty()) {
    j.owner_doubt = "scontrol's record is ambiguous: " + r.doubt;
  } else {
    j.uid = id_in_parens(get("UserId"));
    j.gid = id_in_parens(get("GroupId"));
    if (!j.uid) j.owner_doubt = "scontrol's record has no numeric UserId";
  }
  return j;
}

// sacct -P columns: the fields no user writes first (the uid among them), the free text
// after. A '|' in a free field shifts the columns after it: those fields are then asked
// for one by one. A line break in a field splits a row: the uid is then not trusted.
// Partition and account names are the administrator's, AllocTRES and ElapsedRaw Slurm's.
constexpr const char* kSacctFixed = "JobID,UID,GID,State,ExitCode,NodeList,User,Partition,Account,AllocTRES,ElapsedRaw";
constexpr size_t kSacctFixedCount = 11;

std::optional<SlurmJob> from_sacct(const std::string& id, const std::string& out,
                                   const std::vector<std::string>& free_fields, const CommandOptions& co,
                                   std::string& problem) {
  const size_t need = kSacctFixedCount + free_fields.size();
  std::vector<std::vector<std::string>> rows;
  bool broken = false;
  for (std::string_view line : split(out, '\n')) {
    if (line.empty()) continue;
    std::vector<std::string> c;
    for (std::string_view piece : split(line, '|')) c.emplace_back(piece);
    if (c.size() < need) {
      broken = true;  // the rest of a row cut by a line break in a field
      continue;
    }
    rows.push_back(std::move(c));
  }
  if (rows.empty()) {
    problem = "sacct knows no such job";
    return std::nullopt;
  }
  const std::vector<std::string>& c = rows[0];
  SlurmJob j;
  j.id = c[0];
  j.state = c[3];
  j.exit_code = c[4];
  j.node_list = c[5];
  j.user = c[6];
  j.partition = not_null(c[7]);
  j.account = not_null(c[8]);
  j.gpus = detail::tres_gpus(c[9]);
  if (const auto secs = detail::parse_id(c[10])) j.run_s = *secs;
  if (broken || rows.size() > 1) {
    j.owner_doubt = "sacct's answer is ambiguous: a field holds a line break, or the job is listed more than once";
  } else {
    j.uid = detail::parse_id(c[1]);
    j.gid = detail::parse_id(c[2]);
    if (!j.uid) j.owner_doubt = "sacct's UID is not a number";
  }
  std::vector<std::string> free_values(c.begin() + kSacctFixedCount, c.end());
  if (c.size() != need || broken || rows.size() > 1) {
    // Each free field alone: the whole answer (less its last line end) is the value.
    free_values.assign(free_fields.size(), std::string());
    for (size_t i = 0; i < free_fields.size(); ++i) {
      CommandResult one = run_command({"sacct", "-j", id, "-X", "-n", "-P", "-o", free_fields[i]}, co);
      if (!one.ok()) continue;
      std::string v = one.out;
      if (!v.empty() && v.back() == '\n') v.pop_back();
      if (v.find('\n') == std::string::npos || free_fields[i] == "JobName") free_values[i] = v;
    }
  }
  auto field = [&](const char* name) {
    for (size_t i = 0; i < free_fields.size(); ++i) {
      if (free_fields[i] == name) return free_values[i];
    }
    return std::string();
  };
  j.name = field("JobName");
  j.work_dir = field("WorkDir");
  j.std_out = field("StdOut");
  j.std_err = field("StdErr");
  const std::string submit = field("SubmitLine");
  j.batch_host = j.node_list.find_first_of("[,") == std::string::npos ? j.node_list : std::string();
  // Before Slurm 24.05 sacct has no StdOut: the sbatch line's -o/-e (the caller then
  // tries the stored batch script's #SBATCH lines, then sbatch's default).
  if (j.std_out.empty()) j.std_out = submit_option(submit, "-o", "--output");
  if (j.std_err.empty()) j.std_err = submit_option(submit, "-e", "--error");
  j.from = "sacct";
  return j;
}

}  // namespace

namespace detail {

double parse_slurm_duration(std::string_view s) {
  double days = 0;
  if (const size_t dash = s.find('-'); dash != std::string_view::npos) {
    const auto d = parse_id(s.substr(0, dash));
    if (!d) return 0;
    days = *d;
    s = s.substr(dash + 1);
  }
  double total = 0;
  int parts = 0;
  for (std::string_view piece : split(s, ':')) {
    const std::string p(piece);
    char* end = nullptr;
    const double v = std::strtod(p.c_str(), &end);
    if (p.empty() || end != p.c_str() + p.size() || v < 0) return 0;
    total = total * 60 + v;
    ++parts;
  }
  if (parts < 2 || parts > 3) return 0;
  return days * 86400 + total;
}

int tres_gpus(std::string_view tres) {
  int plain = -1, typed = 0;
  for (std::string_view item : split(tres, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = item.substr(0, eq);
    const auto n = parse_id(item.substr(eq + 1));
    if (!n) continue;
    if (key == "gres/gpu")
      plain = static_cast<int>(*n);
    else if (starts_with(key, "gres/gpu:"))
      typed += static_cast<int>(*n);
  }
  return plain >= 0 ? plain : typed;
}

std::optional<unsigned> parse_id(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  unsigned long long n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<unsigned>(c - '0');
  }
  if (n >= 0xffffffffull) return std::nullopt;  // (uid_t)-1 is no one
  return static_cast<unsigned>(n);
}

std::string absolute_in(const std::string& path, const std::string& dir) {
  if (path.empty() || path[0] == '/' || dir.empty()) return path;
  return dir + "/" + path;
}

}  // namespace detail

std::map<std::string, std::string> parse_scontrol_fields(std::string_view line) {
  std::map<std::string, std::string> fields;
  for (auto& [k, v] : parse_scontrol_field_list(line)) fields[k] = std::move(v);
  return fields;
}

std::vector<std::pair<std::string, std::string>> parse_scontrol_field_list(std::string_view line) {
  std::vector<std::pair<std::string, std::string>> fields;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  while (i < line.size()) {
    const size_t eq = line.find('=', i);
    if (eq == std::string_view::npos) break;
    std::string key(line.substr(i, eq - i));
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
    fields.emplace_back(std::move(key), std::string(line.substr(eq + 1, end - eq - 1)));
    i = end;
    while (i < line.size() && line[i] == ' ') ++i;
  }
  return fields;
}

std::vector<ScontrolRecord> parse_scontrol_records(std::string_view out) {
  std::vector<ScontrolRecord> records;
  std::string whole_doubt;  // a doubt about the whole answer, given to every record
  std::set<std::string, std::less<>> ids;
  for (std::string_view line : split(out, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    if (!starts_with(line, "JobId=")) {
      // The rest of a record whose free text (a job name, a comment) held a line break.
      whole_doubt = "a field holds a line break";
      continue;
    }
    ScontrolRecord r;
    for (auto& [k, v] : parse_scontrol_field_list(line)) {
      if (r.doubt.empty() && known_scontrol_keys().count(k) == 0) r.doubt = "unknown field '" + k + "'";
      if (r.doubt.empty() && r.fields.count(k) != 0) r.doubt = "field '" + k + "' twice";
      r.fields.emplace(std::move(k), std::move(v));
    }
    if (!ids.insert(r.fields["JobId"]).second) whole_doubt = "job " + r.fields["JobId"] + " listed twice";
    records.push_back(std::move(r));
  }
  if (!whole_doubt.empty()) {
    for (auto& r : records) {
      if (r.doubt.empty()) r.doubt = whole_doubt;
    }
  }
  return records;
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
    for (const ScontrolRecord& rec : parse_scontrol_records(sc.out)) {
      // An array job lists every task: the one asked for, else the first.
      SlurmJob j = from_scontrol(rec);
      const auto arr = rec.fields.find("ArrayJobId"), task = rec.fields.find("ArrayTaskId");
      const bool same = j.id == id || (arr != rec.fields.end() && task != rec.fields.end() &&
                                       arr->second + "_" + task->second == id);
      if (!r.job || same) r.job = j;
      if (same) break;
    }
    if (r.job) return r;
  }
  std::string why = sc.describe("scontrol");
  // Not in slurmctld's memory any more (MinJobAge): the accounting database.
  std::vector<std::string> free_fields = {"JobName", "WorkDir", "StdOut", "StdErr", "SubmitLine"};
  auto ask = [&] {
    std::string fields = kSacctFixed;
    for (const auto& f : free_fields) fields += "," + f;
    return run_command({"sacct", "-j", id, "-X", "-n", "-P", "-o", fields}, co);
  };
  CommandResult sa = ask();
  if (!sa.ok() && (sa.err.find("Invalid field") != std::string::npos || sa.err.find("StdOut") != std::string::npos)) {
    free_fields = {"JobName", "WorkDir", "SubmitLine"};  // before 24.05
    sa = ask();
  }
  if (sa.ok()) {
    std::string problem;
    if (auto j = from_sacct(id, sa.out, free_fields, co, problem)) {
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
      j->std_out = detail::absolute_in(expand_slurm_pattern(j->std_out, *j), j->work_dir);
      j->std_err = detail::absolute_in(expand_slurm_pattern(j->std_err, *j), j->work_dir);
      r.job = std::move(j);
      return r;
    }
    r.problem = why + "; " + problem;
    return r;
  }
  r.problem = why + "; " + sa.describe("sacct");
  return r;
}

}  // namespace ff::app
