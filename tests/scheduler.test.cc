// Where the jobs run (issue 21): `firstfault k8s`, `firstfault slurm` and `firstfault
// slurm-epilog` through their real command path (argv, pipes, deadlines, JSON), with fake
// kubectl, scontrol, sacct and sacctmgr first on PATH. The fakes print output shapes of
// the real programs: tests/data/k8s (see its README for the source of each shape) and
// the `scontrol show job -o` line of a real slurmctld 22.05 (tests/slurm/run.sh runs the
// real daemons). Each fake writes its argv to calls.log.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace ff::test {
namespace {

using nlohmann::json;

class Scheduler : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    bin_ = dir_ / "bin";
    fs::create_directories(bin_);
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (bin_.string() + ":" + old_path_).c_str(), 1);
    ::setenv("FAKE_DIR", dir_.c_str(), 1);
    ::setenv("FIXTURES", (std::string(FF_SOURCE_DIR) + "/tests/data/k8s").c_str(), 1);
    for (const char* v : {"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_EXIT_CODE", "SLURM_JOB_EXIT_CODE2",
                          "SLURM_JOB_DERIVED_EC", "SLURM_SCRIPT_CONTEXT", "SLURMD_NODENAME", "SLURM_JOB_UID",
                          "SLURM_JOB_GID", "SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT", "SLURM_JOB_GPUS"})
      ::unsetenv(v);
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    TempDirTest::TearDown();
  }
  void fake(const std::string& name, const std::string& body) {
    const fs::path p = bin_ / name;
    write_file(p, "#!/bin/sh\necho \"" + name + " $*\" >> \"$FAKE_DIR/calls.log\"\n" + body);
    ::chmod(p.c_str(), 0755);
  }
  std::string calls() { return slurp(dir_ / "calls.log"); }
  // A sacct that answers as the real one does: the fields -o asks for, in its order,
  // joined by '|' (-P), each from $FAKE_DIR/sacct/<Field> (none: empty); with
  // $FAKE_DIR/sacct/no-StdOut, Slurm before 24.05, which has no StdOut field.
  void fake_sacct(const std::map<std::string, std::string>& fields) {
    for (const auto& [k, v] : fields) write_file(dir_ / "sacct" / k, v);
    fake("sacct", R"(case "$*" in *--batch-script*) exit 1 ;; esac
fields=; prev=
for a; do [ "$prev" = -o ] && fields=$a; prev=$a; done
case ",$fields," in *,StdOut,*) if [ -f "$FAKE_DIR/sacct/no-StdOut" ]; then
  echo 'sacct: error: Invalid field requested: "StdOut"' >&2; exit 1; fi ;; esac
line=; first=1; IFS=,
for f in $fields; do
  v=; [ -f "$FAKE_DIR/sacct/$f" ] && v=$(cat "$FAKE_DIR/sacct/$f")
  if [ $first = 1 ]; then line=$v; first=0; else line="$line|$v"; fi
done
printf '%s\n' "$line"
)");
  }
  void fake_kubectl() {
    fake("kubectl", R"(while [ $# -gt 0 ]; do
  case "$1" in --context|--namespace) shift 2 ;; *) break ;; esac
done
case "$1 $2" in
  "get pod") [ -f "$FIXTURES/$3.pod.json" ] && exec cat "$FIXTURES/$3.pod.json"
             echo "Error from server (NotFound): pods \"$3\" not found" >&2; exit 1 ;;
  "get pods") exec cat "$FIXTURES/${4#job-name=}.pods.json" ;;
  "get events") f="$FIXTURES/${6#involvedObject.name=}.events.json"
                [ -f "$f" ] && exec cat "$f"; echo '{"apiVersion":"v1","items":[],"kind":"List","metadata":{"resourceVersion":""}}'; exit 0 ;;
esac
if [ "$1" = logs ]; then
  for a; do pod=$a; done
  exec cat "$FIXTURES/${pod#pod/}.logs"
fi
echo "unexpected: $*" >&2; exit 1
)");
  }
  json parse(const Outcome& r) {
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }
  fs::path bin_;
  std::string old_path_;
};

std::string primary_id(const json& j) { return j.value("primary", json::object()).value("id", ""); }

TEST_F(Scheduler, K8sPodOomKilledFromItsContainerStatusWithTheBackOffAsCollateral) {
  fake_kubectl();
  Outcome r = run("k8s trainer-0 -n default --format json");
  EXPECT_EQ(r.rc, 1) << r.err;
  json j = parse(r);
  EXPECT_EQ(primary_id(j), "kubernetes.pod.oomkilled") << r.out;
  EXPECT_EQ(j["primary"]["node"], "trainer-0");
  EXPECT_NE(j["primary"]["evidence"][0]["text"].get<std::string>().find("Reason: OOMKilled"), std::string::npos);
  bool backoff = false;
  for (const auto& c : j["collateral"]) backoff |= c["id"] == "kubernetes.pod.crashloop-backoff";
  EXPECT_TRUE(backoff) << j["collateral"].dump();
  // The logs were asked for as the issue says, without a shell, namespace passed.
  EXPECT_NE(calls().find("kubectl --namespace default logs --prefix --timestamps --all-containers pod/trainer-0"),
            std::string::npos)
      << calls();
  EXPECT_NE(calls().find("get events -o json --field-selector involvedObject.name=trainer-0"), std::string::npos);
}

TEST_F(Scheduler, K8sTracebackInTheLogsBeatsTheRestartItCaused) {
  fake_kubectl();
  Outcome r = run("k8s pod/trainer-1 --format json");
  json j = parse(r);
  EXPECT_EQ(primary_id(j), "pytorch.cuda.out-of-memory") << r.out;
  EXPECT_EQ(j["primary"]["node"], "trainer-1");
  // The kubelet's RFC 3339 time and kubectl's prefix are peeled: the decisive line is the
  // program's own text, with its time.
  const std::string text = j["primary"]["evidence"][0]["text"];
  EXPECT_EQ(text.rfind("torch.OutOfMemoryError: CUDA out of memory.", 0), 0u) << text;
  EXPECT_NE(j["primary"]["evidence"][0]["time"].get<std::string>().find("2026-11-30T12:00:03"), std::string::npos);
}

TEST_F(Scheduler, K8sJobEvictedPodFromItsStatusAndEvents) {
  fake_kubectl();
  Outcome r = run("k8s job/train --format json");
  json j = parse(r);
  EXPECT_EQ(primary_id(j), "kubernetes.pod.evicted-memory") << r.out;
  EXPECT_EQ(j["primary"]["node"], "train-7xk2p");
  EXPECT_NE(calls().find("get pods -l job-name=train -o json"), std::string::npos) << calls();
  EXPECT_NE(calls().find("logs --prefix --timestamps --all-containers pod/train-7xk2p"), std::string::npos);
  EXPECT_NE(calls().find("involvedObject.name=train\n"), std::string::npos) << "the Job's own events";
}

TEST_F(Scheduler, K8sBadTargetsAndMissingPodsAreClearErrors) {
  fake_kubectl();
  Outcome r = run("k8s nosuch-pod");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("pods \"nosuch-pod\" not found"), std::string::npos) << r.err;
  r = run("k8s deployment/x/y");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("is not a pod"), std::string::npos) << r.err;
  // kubectl printing something that is not JSON.
  fake("kubectl", "echo 'this is not json'\n");
  r = run("k8s trainer-0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not JSON"), std::string::npos) << r.err;
  // No kubectl at all.
  fs::remove(bin_ / "kubectl");
  ::setenv("PATH", bin_.c_str(), 1);
  r = run("k8s trainer-0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("could not start"), std::string::npos) << r.err;
}

// A real `scontrol show job -o` line (slurmctld 22.05.8, tests/slurm/run.sh), its paths
// pointing into the test's folder.
std::string scontrol_line(const fs::path& dir, const std::string& state, const std::string& exit_code,
                          const std::string& reason = "NonZeroExitCode") {
  return "JobId=7 JobName=train-failed UserId=" + std::string(::getuid() == 0 ? "root(0)" : "me(" + std::to_string(::getuid()) + ")") +
         " GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=" + state +
         " Reason=" + reason + " Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=" + exit_code +
         " RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-02T03:40:50 "
         "AllocNode:Sid=localhost:20290 NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 "
         "CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Command=" + (dir / "my job.sh").string() +
         " WorkDir=" + dir.string() + " StdErr=" + (dir / "train-failed-7.out").string() +
         " StdIn=/dev/null StdOut=" + (dir / "train-failed-7.out").string() + " Power= \n";
}

const char* kFailedLog =
    "starting training: 10 steps\n"
    "0: step 1/10 loss 2.5000\n"
    "0: Traceback (most recent call last):\n"
    "0:   File \"/scratch/train.py\", line 14, in <module>\n"
    "0:     batch = make_batch(step, 64)\n"
    "0: MemoryError\n"
    "srun: error: localhost: task 0: Exited with exit code 1\n";

TEST_F(Scheduler, SlurmJobIdThroughScontrol) {
  write_file(dir_ / "train-failed-7.out", kFailedLog);
  write_file(dir_ / "scontrol.out", scontrol_line(dir_, "FAILED", "1:0"));
  fake("scontrol", "exec cat \"$FAKE_DIR/scontrol.out\"\n");
  Outcome r = run("slurm 7 --format json");
  EXPECT_EQ(r.rc, 1) << r.err;
  json j = parse(r);
  EXPECT_EQ(primary_id(j), "python.memory.memory-error") << r.out;
  EXPECT_EQ(j["primary"]["rank"], 0);
  EXPECT_NE(calls().find("scontrol show job -o 7"), std::string::npos) << calls();
  EXPECT_NE(r.err.find("FAILED, exit 1:0, from scontrol"), std::string::npos) << r.err;
}

TEST_F(Scheduler, SlurmJobIdThroughSacctBeforeItHadStdOut) {
  write_file(dir_ / "logs" / "train-failed-7.out", kFailedLog);
  fake("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n");
  // Slurm before 24.05: sacct has no StdOut field; the sbatch line's --output is used.
  fake_sacct({{"JobID", "7"}, {"JobName", "train-failed"}, {"State", "FAILED"}, {"ExitCode", "1:0"},
              {"WorkDir", dir_.string()}, {"User", "nobody"}, {"UID", "65534"}, {"GID", "65534"},
              {"NodeList", "localhost"}, {"SubmitLine", "sbatch --output=logs/%x-%j.out job.sh"}, {"no-StdOut", ""}});
  Outcome r = run("slurm 7 --format json");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(primary_id(parse(r)), "python.memory.memory-error") << r.out << r.err;
  EXPECT_NE(r.err.find("from sacct"), std::string::npos) << r.err;
  // Known to neither: both answers said.
  fake("sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1\n");
  r = run("slurm 8");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("Invalid job id specified"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("accounting storage is disabled"), std::string::npos) << r.err;
}

TEST_F(Scheduler, EpilogOfAHealthyJobAsksOnceWritesNothingAndSaysNothing) {
  write_file(dir_ / "train-failed-7.out", "step 1/1 loss 0.1\ntraining complete\n");
  write_file(dir_ / "scontrol.out", scontrol_line(dir_, "COMPLETING", "0:0", "None"));
  fake("scontrol", "exec cat \"$FAKE_DIR/scontrol.out\"\n");
  ::setenv("SLURM_JOB_ID", "7", 1);
  ::setenv("SLURM_JOB_EXIT_CODE2", "0:0", 1);
  ::setenv("SLURM_JOB_DERIVED_EC", "0", 1);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome r = run("slurm-epilog");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(calls(), "scontrol show job -o 7\n");
  EXPECT_FALSE(fs::exists(dir_ / "train-failed-7.out.firstfault.json"));
  EXPECT_LT(s, 0.5);
  // --env-only: not even that.
  fs::remove(dir_ / "calls.log");
  r = run("slurm-epilog --env-only");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(calls(), "");
}

TEST_F(Scheduler, EpilogOfATimeLimitCancelWhoseExitCodesSayZero) {
  // slurmd 22.05 gives a job cancelled at its time limit SLURM_JOB_EXIT_CODE2=0:0 while
  // slurmctld says ExitCode=143:0 Reason=TimeLimit (tests/slurm/run.sh saw both).
  write_file(dir_ / "train-failed-7.out",
             "0: step 87 loss 0.0115\n"
             "slurmstepd-localhost: error: *** JOB 7 ON localhost CANCELLED AT 2026-12-02T04:10:28 DUE TO TIME LIMIT ***\n");
  write_file(dir_ / "scontrol.out", scontrol_line(dir_, "COMPLETING", "143:0", "TimeLimit"));
  fake("scontrol", "[ \"$1\" = update ] && exit 1; exec cat \"$FAKE_DIR/scontrol.out\"\n");
  fake("sacctmgr", "exit 1\n");
  ::setenv("SLURM_JOB_ID", "7", 1);
  ::setenv("SLURM_JOB_EXIT_CODE2", "0:0", 1);
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  ASSERT_TRUE(fs::exists(dir_ / "train-failed-7.out.firstfault.json")) << r.err;
  EXPECT_EQ(primary_id(json::parse(slurp(dir_ / "train-failed-7.out.firstfault.json"))), "slurm.job.time-limit");
}

TEST_F(Scheduler, EpilogOfAFailedJobWritesBesideItsOutputAndAnnotatesIt) {
  write_file(dir_ / "train-failed-7.out", kFailedLog);
  write_file(dir_ / "scontrol.out", scontrol_line(dir_, "COMPLETING", "1:0"));
  // As slurmctld answers for a job in its epilog: the update is refused.
  fake("scontrol", "if [ \"$1\" = update ]; then echo 'Job has already finished for job 7' >&2; exit 1; fi\n"
                   "exec cat \"$FAKE_DIR/scontrol.out\"\n");
  fake("sacctmgr", "exit 0\n");
  ::setenv("SLURM_JOB_ID", "7", 1);
  ::setenv("SLURM_JOB_EXIT_CODE2", "1:0", 1);
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  const fs::path out = dir_ / "train-failed-7.out";
  ASSERT_TRUE(fs::exists(out.string() + ".firstfault.json")) << r.err;
  json j = json::parse(slurp(out.string() + ".firstfault.json"));
  EXPECT_EQ(primary_id(j), "python.memory.memory-error");
  EXPECT_NE(slurp(out.string() + ".firstfault.md").find("MemoryError"), std::string::npos);
  const std::string c = calls();
  EXPECT_NE(c.find("scontrol update JobId=7 AdminComment=firstfault: failed: Python MemoryError"), std::string::npos) << c;
  EXPECT_NE(c.find("(rank 0, train-failed-7.out:6)"), std::string::npos) << c;
  EXPECT_NE(c.find("sacctmgr -i modify job where JobID=7 set AdminComment=firstfault: failed:"), std::string::npos) << c;
  EXPECT_NE(r.err.find("AdminComment set in the accounting database"), std::string::npos) << r.err;
}

// Issue 36: the epilog keeps its diagnosis in the history as diagnose does, with the
// scheduler's facts (job id, user, partition, account, nodes, GPU-hours), and writes them
// into the JSON beside the output for `firstfault report`.
TEST_F(Scheduler, EpilogKeepsTheDiagnosisInTheHistoryWithTheJobsFacts) {
  write_file(dir_ / "train-failed-7.out", kFailedLog);
  std::string line = scontrol_line(dir_, "COMPLETING", "1:0");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{
                                     "TRES=cpu=1,node=1,billing=1", "TRES=cpu=16,mem=64G,node=2,billing=16,gres/gpu=8"},
                                 {"RunTime=00:00:01", "RunTime=01:30:00"},
                                 {"NodeList=localhost", "NodeList=gpu-[0041-0042]"}}) {
    const size_t at = line.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    line.replace(at, from.size(), to);
  }
  write_file(dir_ / "scontrol.out", line);
  fake("scontrol", "[ \"$1\" = update ] && exit 0; exec cat \"$FAKE_DIR/scontrol.out\"\n");
  ::setenv("SLURM_JOB_ID", "7", 1);
  ::setenv("SLURM_JOB_EXIT_CODE2", "1:0", 1);
  ::setenv("SLURM_JOB_PARTITION", "gpu", 1);  // as slurmd sets them for the Epilog
  ::setenv("SLURM_JOB_ACCOUNT", "vision", 1);
  // A history made before the scheduler's columns, with a row of diagnose's: the epilog
  // adds the columns and its row, the old row stays.
  const std::string db = (dir_ / "state" / "history.db").string();
  fs::create_directories(dir_ / "state");
  ASSERT_EQ(std::system(("python3 -c " +
                         quote("import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript('"
                               "CREATE TABLE diagnoses (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, command TEXT NOT "
                               "NULL, job TEXT NOT NULL, attempt INTEGER NOT NULL, verdict TEXT NOT NULL, entry TEXT "
                               "NOT NULL, category TEXT NOT NULL, fingerprint TEXT NOT NULL, rank INTEGER NOT NULL, "
                               "node TEXT NOT NULL, title TEXT NOT NULL, UNIQUE (job, attempt, fingerprint));"
                               "INSERT INTO diagnoses VALUES (1, 1000, \"diagnose\", \"/old.log\", -1, \"failed\", "
                               "\"x.y\", \"hang\", \"fp\", 0, \"\", \"t\");'); c.commit()") +
                         " " + quote(db))
                            .c_str()),
            0);
  Outcome r = run_firstfault("slurm-epilog --history " + quote(db), dir_, "", "FIRSTFAULT_NO_HISTORY=0");
  EXPECT_EQ(r.rc, 0);
  ASSERT_TRUE(fs::exists(db)) << r.err;
  Outcome h =
      run_firstfault("history --format json", dir_, "", "FIRSTFAULT_NO_HISTORY=0 FIRSTFAULT_HISTORY=" + quote(db));
  ASSERT_EQ(h.rc, 0) << h.err;
  json rows = json::parse(h.out);
  ASSERT_EQ(rows.size(), 2u) << h.out;  // newest first
  EXPECT_EQ(rows[1]["job"], "/old.log");
  EXPECT_FALSE(rows[1].contains("scheduler"));
  EXPECT_EQ(rows[0]["command"], "slurm-epilog");
  EXPECT_EQ(rows[0]["entry"], "python.memory.memory-error");
  EXPECT_NE(rows[0]["job"].get<std::string>().find("train-failed-7.out"), std::string::npos);
  const json& s = rows[0]["scheduler"];
  EXPECT_EQ(s["job_id"], "7") << h.out;
  EXPECT_EQ(s["user"], ::getuid() == 0 ? "root" : "me");
  EXPECT_EQ(s["partition"], "gpu");
  EXPECT_EQ(s["account"], "vision");
  EXPECT_EQ(s["node_list"], "gpu-[0041-0042]");
  EXPECT_DOUBLE_EQ(s["gpu_hours"].get<double>(), 12.0);  // 8 GPUs for 1.5 h
  // The same facts in the JSON beside the output, with when the job ended.
  json j = json::parse(slurp(dir_ / "train-failed-7.out.firstfault.json"));
  EXPECT_EQ(j["schema"].get<std::string>().rfind("firstfault.diagnosis/", 0), 0u);
  EXPECT_EQ(j["job"]["id"], "7");
  EXPECT_EQ(j["job"]["partition"], "gpu");
  EXPECT_EQ(j["job"]["gpus"], 8);
  EXPECT_DOUBLE_EQ(j["job"]["gpu_hours"].get<double>(), 12.0);
  EXPECT_EQ(j["job"]["ended"].get<std::string>().size(), 20u) << j["job"].dump();
  // The fleet report over the history: the epilog's job, its category and GPU-hours.
  Outcome rep = run_firstfault("report --history --format json", dir_, "",
                               "FIRSTFAULT_NO_HISTORY=0 FIRSTFAULT_HISTORY=" + quote(db));
  ASSERT_EQ(rep.rc, 0) << rep.err;
  json fleet = json::parse(rep.out);
  EXPECT_EQ(fleet["current"]["failures"], 2) << rep.out;  // the old row's too
  EXPECT_EQ(fleet["current"]["by_category"].size(), 2u);
  EXPECT_DOUBLE_EQ(fleet["current"]["gpu_hours_lost"].get<double>(), 12.0);
  // A second epilog of the same job updates its row; --no-history keeps none.
  r = run_firstfault("slurm-epilog --history " + quote(db), dir_, "", "FIRSTFAULT_NO_HISTORY=0");
  h = run_firstfault("history --format json", dir_, "", "FIRSTFAULT_NO_HISTORY=0 FIRSTFAULT_HISTORY=" + quote(db));
  EXPECT_EQ(json::parse(h.out).size(), 2u) << h.out;
  const std::string db2 = (dir_ / "state" / "other.db").string();
  r = run_firstfault("slurm-epilog --no-history --history " + quote(db2), dir_, "", "FIRSTFAULT_NO_HISTORY=0");
  EXPECT_FALSE(fs::exists(db2));
}

TEST_F(Scheduler, EpilogNeverOutlivesItsDeadlineAndAlwaysExitsZero) {
  fake("scontrol", "sleep 30\n");
  ::setenv("SLURM_JOB_ID", "7", 1);
  ::setenv("SLURM_JOB_EXIT_CODE2", "0:9", 1);
  const auto t0 = std::chrono::steady_clock::now();
  Outcome r = run("slurm-epilog --timeout 2s");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(s, 3.0);
  EXPECT_NE(r.err.find("job 7:"), std::string::npos) << r.err;
  // No job id at all, a job that is nowhere: said, exit 0.
  ::unsetenv("SLURM_JOB_ID");
  r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.err.find("no job id"), std::string::npos) << r.err;
  fake("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n");
  fake("sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1\n");
  r = run("slurm-epilog --job 9");
  EXPECT_EQ(r.rc, 0);
  EXPECT_NE(r.err.find("cannot find the job's output"), std::string::npos) << r.err;
}

// Issue 31: the root epilog reads for the job's owner only what the owner could read. The
// owner (nobody) planted a link to a root-only file as the job's output and wrote text into
// the job's record that looks like fields; no file the epilog leaves may hold a byte of
// the root-only one. The epilog runs as root here (the test does).
class EpilogOwner : public Scheduler {
 protected:
  void SetUp() override {
    Scheduler::SetUp();
    if (::geteuid() != 0) GTEST_SKIP() << "the epilog acts as the job's owner only as root";
    const struct passwd* pw = ::getpwnam("nobody");
    if (!pw) GTEST_SKIP() << "no user nobody";
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    secret_ = dir_ / "secret";
    std::string log = kFailedLog;
    log.replace(log.find("0: MemoryError"), 14, "0: MemoryError: ROOTSECRET hunter2");
    write_file(secret_, log);
    ::chmod(secret_.c_str(), 0600);
    jobs_ = dir_ / "jobs";
    fs::create_directories(jobs_);
    ::chmod(jobs_.c_str(), 0755);
    if (::chown(jobs_.c_str(), uid_, gid_) != 0) GTEST_SKIP() << "cannot give a folder to nobody";
    out_ = jobs_ / "train-failed-7.out";
    fs::create_symlink(secret_, out_);
    ::setenv("SLURM_JOB_ID", "7", 1);
    ::setenv("SLURM_JOB_EXIT_CODE2", "1:0", 1);
    fake("sacctmgr", "exit 1\n");
  }
  // `scontrol show job -o` for job 7 of nobody, with `name` and `comment` as the user gave them.
  std::string record(const std::string& name, const std::string& comment) {
    return "JobId=7 JobName=" + name + " UserId=nobody(" + std::to_string(uid_) + ") GroupId=nogroup(" +
           std::to_string(gid_) +
           ") MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=COMPLETING "
           "Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=1:0 "
           "RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-02T03:40:50 "
           "AllocNode:Sid=localhost:20290 NodeList=localhost BatchHost=localhost NumNodes=1 NumCPUs=1 "
           "CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Command=" + (jobs_ / "job.sh").string() +
           " WorkDir=" + jobs_.string() + (comment.empty() ? "" : " Comment=" + comment) +
           " StdErr=" + out_.string() + " StdIn=/dev/null StdOut=" + out_.string() + " Power= \n";
  }
  void scontrol_says(const std::string& text) {
    write_file(dir_ / "scontrol.out", text);
    fake("scontrol", "[ \"$1\" = update ] && exit 1; exec cat \"$FAKE_DIR/scontrol.out\"\n");
  }
  // Every file under the test's folder (not the root-only one, nor links to it) that
  // holds its words.
  std::vector<std::string> leaks() {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (e.is_symlink() || !e.is_regular_file() || e.path() == secret_) continue;
      if (slurp(e.path()).find("ROOTSECRET") != std::string::npos) found.push_back(e.path().string());
    }
    return found;
  }
  std::vector<std::string> written() {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (e.path().string().find(".firstfault.") != std::string::npos) found.push_back(e.path().string());
    }
    return found;
  }
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  fs::path secret_, jobs_, out_;
};

TEST_F(EpilogOwner, Issue31ForgedUserIdInTheCommentIsNotTakenForRoot) {
  // sbatch --comment "x UserId=root(0) GroupId=root(0)": the record then names the owner
  // twice. Without SLURM_JOB_UID the owner is unknown: nothing is read.
  scontrol_says(record("train-failed", "x UserId=root(0) GroupId=root(0)"));
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  EXPECT_EQ(written(), std::vector<std::string>{}) << r.err;
  EXPECT_NE(r.err.find("the job's owner is not known for certain"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'UserId' twice"), std::string::npos) << r.err;
  // With SLURM_JOB_UID (as slurmd runs the Epilog) the epilog reads as nobody, who cannot
  // read the link's target.
  ::setenv("SLURM_JOB_UID", std::to_string(uid_).c_str(), 1);
  ::setenv("SLURM_JOB_GID", std::to_string(gid_).c_str(), 1);
  r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  for (const std::string& f : written()) {
    struct stat st {};
    ASSERT_EQ(::lstat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, uid_) << f;
  }
}

TEST_F(EpilogOwner, Issue31LineBreakInTheJobNameLeavesTheOwnerUnknown) {
  // A job name "x StdOut=<root-only> StdErr=<root-only>\nb": the first line is a record
  // with no UserId and the paths the user chose; the real fields follow on the next line.
  scontrol_says(record("x StdOut=" + secret_.string() + " StdErr=" + secret_.string() + "\nb", ""));
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  EXPECT_EQ(written(), std::vector<std::string>{}) << r.err;
  EXPECT_NE(r.err.find("line break"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing read"), std::string::npos) << r.err;
  // A whole forged record on a line of its own, the real one's tail after it.
  scontrol_says(record("a\nJobId=7 JobName=x UserId=root(0) GroupId=root(0) JobState=FAILED ExitCode=1:0 StdOut=" +
                           secret_.string() + "\nb",
                       ""));
  r = run("slurm-epilog");
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  EXPECT_EQ(written(), std::vector<std::string>{}) << r.err;
  EXPECT_NE(r.err.find("not known for certain"), std::string::npos) << r.err;
}

TEST_F(EpilogOwner, Issue31PipeInTheJobNameDoesNotShiftSacctsOwner) {
  // slurmctld has forgotten the job; sacct -P joins the fields with '|', and the job name
  // "n|FAILED|1:0|<dir>|root|localhost|<root-only>|<root-only>|" would move "root" into the
  // User column of a query that asks for JobName before User.
  fake("scontrol", "echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1\n");
  const std::string forged = "n|FAILED|1:0|" + dir_.string() + "|root|localhost|" + secret_.string() + "|" +
                             secret_.string() + "|";
  fs::remove(out_);
  write_file(jobs_ / "real.out", kFailedLog);
  ::chown((jobs_ / "real.out").c_str(), uid_, gid_);
  fake_sacct({{"JobID", "7"}, {"JobName", forged}, {"State", "FAILED"}, {"ExitCode", "1:0"},
              {"WorkDir", jobs_.string()}, {"User", "nobody"}, {"UID", std::to_string(uid_)},
              {"GID", std::to_string(gid_)}, {"NodeList", "localhost"}, {"StdOut", (jobs_ / "real.out").string()},
              {"StdErr", (jobs_ / "real.out").string()}, {"SubmitLine", "sbatch job.sh"}});
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  // The owner from sacct's UID column, the paths asked for one by one: nobody's diagnosis of
  // nobody's output, owned by nobody.
  const fs::path json = jobs_ / "real.out.firstfault.json";
  ASSERT_TRUE(fs::exists(json)) << r.err << calls();
  struct stat st {};
  ASSERT_EQ(::stat(json.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid_);
  EXPECT_EQ(primary_id(json::parse(slurp(json))), "python.memory.memory-error");
}

TEST_F(EpilogOwner, Issue31RecordAndSlurmJobUidMustAgree) {
  // A record whose fields are certain names root; slurmd says nobody: nothing is read.
  std::string rec = record("train-failed", "");
  rec.replace(rec.find("UserId=nobody(" + std::to_string(uid_) + ")"),
              std::string("UserId=nobody(" + std::to_string(uid_) + ")").size(), "UserId=root(0)");
  scontrol_says(rec);
  ::setenv("SLURM_JOB_UID", std::to_string(uid_).c_str(), 1);
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  EXPECT_EQ(written(), std::vector<std::string>{}) << r.err;
  EXPECT_NE(r.err.find("scontrol says the owner is uid 0, SLURM_JOB_UID says " + std::to_string(uid_)),
            std::string::npos)
      << r.err;
  // A SLURM_JOB_UID that is not a number is not 0.
  ::setenv("SLURM_JOB_UID", "nobody", 1);
  r = run("slurm-epilog");
  EXPECT_EQ(leaks(), std::vector<std::string>{}) << r.err;
  EXPECT_NE(r.err.find("SLURM_JOB_UID is not a uid"), std::string::npos) << r.err;
}

TEST_F(EpilogOwner, Issue31DiagnosisGetsTheOutputsModeAndOwner) {
  // A private output (0600): its diagnosis quotes its lines, so it is private too, and
  // nobody's.
  fs::remove(out_);
  write_file(out_, kFailedLog);
  ::chmod(out_.c_str(), 0600);
  ASSERT_EQ(::chown(out_.c_str(), uid_, gid_), 0);
  scontrol_says(record("train-failed", ""));
  ::setenv("SLURM_JOB_UID", std::to_string(uid_).c_str(), 1);
  ::setenv("SLURM_JOB_GID", std::to_string(gid_).c_str(), 1);
  Outcome r = run("slurm-epilog");
  EXPECT_EQ(r.rc, 0);
  for (const char* suffix : {".firstfault.json", ".firstfault.md"}) {
    const std::string f = out_.string() + suffix;
    struct stat st {};
    ASSERT_EQ(::stat(f.c_str(), &st), 0) << f << r.err;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << f;
    EXPECT_EQ(st.st_uid, uid_) << f;
  }
  // A 0640 output: 0640, never 0644.
  ::chmod(out_.c_str(), 0640);
  r = run("slurm-epilog");
  struct stat st {};
  ASSERT_EQ(::stat((out_.string() + ".firstfault.json").c_str(), &st), 0) << r.err;
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// The real daemons' output (tests/slurm/run.sh CAPTURE_DIR wrote them): srun --label, srun's
// task summary and slurmstepd's time-limit cancel, diagnosed by the KB as they are.
TEST_F(Scheduler, RealSrunAndSlurmstepdOutputIsRecognised) {
  Outcome r = run("diagnose --format json " + data("real/slurm_srun_label_memory_error.log"));
  json j = parse(r);
  EXPECT_EQ(primary_id(j), "python.memory.memory-error") << r.out;
  EXPECT_EQ(j["primary"]["rank"], 0);
  EXPECT_EQ(j["primary"]["evidence"][0]["text"], "MemoryError");
  r = run("diagnose --format json " + data("real/slurm_time_limit_cancel.log"));
  j = parse(r);
  EXPECT_EQ(primary_id(j), "slurm.job.time-limit") << r.out;
  EXPECT_EQ(j["primary"]["node"], "localhost");
  // slurmstepd names itself after the node ("slurmstepd-localhost: error: ***"), and the
  // step's copy of the message comes through srun --label: one failure, not two.
  EXPECT_NE(j["primary"]["evidence"][0]["text"].get<std::string>().find("DUE TO TIME LIMIT"), std::string::npos);
}

}  // namespace
}  // namespace ff::test
