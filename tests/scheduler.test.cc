// Where the jobs run (issue 21): `firstfault k8s`, `firstfault slurm` and `firstfault
// slurm-epilog` through their real command path (argv, pipes, deadlines, JSON), with fake
// kubectl, scontrol, sacct and sacctmgr first on PATH. The fakes print output shapes of
// the real programs: tests/data/k8s (see its README for the source of each shape) and
// the `scontrol show job -o` line of a real slurmctld 22.05 (tests/slurm/run.sh runs the
// real daemons). Each fake writes its argv to calls.log.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
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
                          "SLURM_JOB_DERIVED_EC", "SLURM_SCRIPT_CONTEXT", "SLURMD_NODENAME"})
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
  fake("sacct", "case \"$*\" in *StdOut*) echo 'sacct: error: Invalid field requested: \"StdOut\"' >&2; exit 1 ;; esac\n"
                "echo \"7|train-failed|FAILED|1:0|$FAKE_DIR|nobody|localhost|sbatch --output=logs/%x-%j.out job.sh\"\n");
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
