// The failure grammar on logs firstfault was not tuned on (issue "Right on logs it has never
// seen"): one test per class of failure, on real program output where this machine can
// make it (tests/data/real, written by tests/data/real/programs/make-logs.sh with Debian's
// python3, python3-rich, g++, ninja and nvcc) and on public excerpts of the labelled corpus
// where it cannot (read in place from ../shared/corpus/github-issues-2; skipped without it).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::Outcome;
using ff::test::quote;

std::string real_log(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/real/" + name; }
std::string excerpt(const std::string& id) {
  return std::string(FF_SHARED_DIR) + "/corpus/github-issues-2/cases/" + id + ".log";
}

class Grammar : public ff::test::TempDirTest {
 protected:
  json diagnose(const std::string& path, int expect_rc) {
    Outcome r = run("diagnose --format json " + quote(path));
    EXPECT_EQ(r.rc, expect_rc) << path << "\n" << r.err << r.out.substr(0, 1500);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
    return j.is_discarded() ? json::object() : j;
  }
  json excerpt_or_skip(const std::string& id, int expect_rc) {
    if (!fs::exists(excerpt(id))) return json();
    return diagnose(excerpt(id), expect_rc);
  }
  // The primary names `entry` (an id prefix), of `category`, citing a line with `decisive`.
  static void expect_primary(const json& j, const std::string& entry, const std::string& category,
                             const std::string& decisive) {
    ASSERT_TRUE(j.contains("primary") && j["primary"].is_object()) << j.dump().substr(0, 800);
    const json& p = j["primary"];
    EXPECT_EQ(p["id"].get<std::string>().rfind(entry, 0), 0u) << p["id"];
    EXPECT_EQ(p["category"], category) << p["id"];
    ASSERT_FALSE(p["evidence"].empty());
    const std::string line = p["evidence"][0]["text"];
    EXPECT_NE(line.find(decisive), std::string::npos) << "decisive line: " << line;
  }
};

#define SKIP_WITHOUT_CORPUS(j) \
  if ((j).is_null()) GTEST_SKIP() << "../shared/corpus/github-issues-2 is not here"

// Compilers and build tools: the compiler's own line is the cause, ninja's "build
// stopped" and the Python exceptions after it only report it (real g++ and ninja).
TEST_F(Grammar, AMissingHeaderInAnExtensionBuildIsTheCompilersLine) {
  json j = diagnose(real_log("build_missing_header__ninja.log"), 1);
  expect_primary(j, "pytorch.cpp-extension.build-failed", "compilation",
                 "fatal error: torch/extension.h: No such file or directory");
}

TEST_F(Grammar, AnArchitectureNvccDoesNotKnowIsTheCause) {
  json j = diagnose(real_log("build_nvcc_arch__ninja.log"), 1);
  expect_primary(j, "pytorch.cpp-extension.build-failed", "compilation", "nvcc fatal   : Unsupported gpu architecture");
}

// With only the Python side of a ninja failure (the compiler output is above the paste),
// the ninja CalledProcessError names the class.
TEST_F(Grammar, ANinjaCalledProcessErrorAloneIsACompilationFailure) {
  json j = excerpt_or_skip("d2-010", 1);
  SKIP_WITHOUT_CORPUS(j);
  expect_primary(j, "pytorch.cpp-extension.build-failed", "compilation", "CalledProcessError: Command '['ninja'");
}

// A rich (box-drawn) traceback: the exception line after the box is the failure.
TEST_F(Grammar, ARichTracebackNamesItsException) {
  json j = diagnose(real_log("rich_traceback.log"), 1);
  ASSERT_TRUE(j["primary"].is_object()) << j.dump().substr(0, 800);
  const std::string line = j["primary"]["evidence"][0]["text"];
  EXPECT_EQ(line.rfind("ValueError: Expected input batch_size (32) to match target batch_size (16).", 0), 0u) << line;
}

// Shell and kernel reports: bash's job line for a child killed by a signal.
TEST_F(Grammar, BashReportsOfSignalDeathsAreFailures) {
  expect_primary(diagnose(real_log("shell_segfault.log"), 1), "python.crash.segfault", "model-code", "Segmentation fault");
  expect_primary(diagnose(real_log("shell_killed.log"), 1), "linux.signal.killed-by-sigkill", "host-memory", "Killed");
  expect_primary(diagnose(real_log("shell_aborted.log"), 1), "python.crash.abort", "model-code", "Aborted");
}

// Name resolution: the resolver's error, not a network timeout.
TEST_F(Grammar, AHostNameThatDoesNotResolveIsNamed) {
  expect_primary(diagnose(real_log("name_resolution.log"), 1), "python.socket.name-resolution-failed", "configuration",
                 "socket.gaierror: [Errno -2] Name or service not known");
}

// Exit codes as evidence: torchrun's "failed (exitcode: -9)" with no error from that rank
// is a kill from outside (most often the OOM killer), on that local rank; the SIGTERMs
// torchrun sent the others before it are teardown. Plain, glog and rich-wrapped forms.
TEST_F(Grammar, ExitCodeMinus9WithNoErrorIsAKillFromOutsideOnThatRank) {
  for (const auto& [id, rank] : std::vector<std::pair<std::string, int>>{{"d2-024", 3}, {"d2-030", 5}, {"d2-031", 1}}) {
    SCOPED_TRACE(id);
    json j = excerpt_or_skip(id, 1);
    SKIP_WITHOUT_CORPUS(j);
    expect_primary(j, "distributed.elastic.worker-sigkill", "host-memory", "failed (exitcode: -9) local_rank: ");
    EXPECT_EQ(j["primary"]["rank"], rank);
  }
}

// DeepSpeed's launcher line for a rank that died of SIGSEGV: the rank from its arguments.
TEST_F(Grammar, DeepSpeedReturnCodeMinus11IsASegfaultOfThatRank) {
  json j = excerpt_or_skip("d2-038", 1);
  SKIP_WITHOUT_CORPUS(j);
  expect_primary(j, "python.crash.segfault", "model-code", "exits with return code = -11");
  EXPECT_EQ(j["primary"]["rank"], 1);
}

// Ranks from the text: Megatron's NaN check names its rank ("Rank 3: ...").
TEST_F(Grammar, ARankNamedInTheMessageIsTheRank) {
  json j = excerpt_or_skip("d2-029", 1);
  SKIP_WITHOUT_CORPUS(j);
  expect_primary(j, "megatron.", "numerical", "found NaN in local grad norm");
  EXPECT_EQ(j["primary"]["rank"], 3);
}

// A loss scale already at its floor, with a NaN grad norm on every step to the end.
TEST_F(Grammar, ALossScaleAtItsFloorWithNanGradientsIsTerminal) {
  json j = excerpt_or_skip("d2-028", 1);
  SKIP_WITHOUT_CORPUS(j);
  ASSERT_TRUE(j["primary"].is_object()) << j.dump().substr(0, 800);
  EXPECT_EQ(j["primary"]["category"], "numerical");
  EXPECT_NE(j["primary"]["evidence"][0]["text"].get<std::string>().find("loss scale: 1.0 | grad norm: nan"), std::string::npos);
}

// Truncated and errno forms: NCCL's socket connect with an errno is the failure.
TEST_F(Grammar, NcclConnectWithAnErrnoIsACommunicationFailure) {
  json j = excerpt_or_skip("d2-037", 1);
  SKIP_WITHOUT_CORPUS(j);
  expect_primary(j, "nccl.", "communication", "returned 113(No route to host)");
}

// Benign lines stay benign: the watchdog's note of a normal process-group shutdown, and a
// c10d connect warning that was retried, are not failures.
TEST_F(Grammar, AShutdownNoteAndARetriedConnectWarningAreNotFailures) {
  for (const std::string id : {"d2-033", "d2-034"}) {
    SCOPED_TRACE(id);
    json j = excerpt_or_skip(id, 3);
    SKIP_WITHOUT_CORPUS(j);
    EXPECT_NE(j["verdict"], "failed") << j.dump().substr(0, 600);
    EXPECT_TRUE(j["primary"].is_null()) << j["primary"].dump().substr(0, 300);
  }
}

}  // namespace

namespace {

// Ranks from the text: NCCL's host:pid:tid line in a paste of one rank's output (its
// traceback is prefixed "[rank0]:") is that rank's (rule rank.only-rank-named).
TEST_F(Grammar, AnNcclProcessLineInAOneRankPasteIsThatRanks) {
  json j = excerpt_or_skip("d2-002", 1);
  SKIP_WITHOUT_CORPUS(j);
  expect_primary(j, "nccl.cuda.failure-driver-pairing", "configuration", "NCCL WARN Cuda failure 1 'invalid argument'");
  EXPECT_EQ(j["primary"]["rank"], 0);
  EXPECT_EQ(j["primary"]["rank_rule"], "only-rank-named");
  // Its time, as written and in ISO 8601 for tools that sort.
  EXPECT_EQ(j["primary"]["time"], "2025-04-08 08:39:46");
  EXPECT_EQ(j["primary"]["time_iso"], "2025-04-08T08:39:46");
  EXPECT_EQ(j["primary"]["evidence"][0]["time_iso"], "2025-04-08T08:39:46");
}

// The decisive line's traceback, its innermost frame in the user's own code, and the lines
// before it, in the JSON (real rich and plain tracebacks).
TEST_F(Grammar, ThePrimaryCarriesItsTracebackUserFrameAndTheLinesBefore) {
  json j = diagnose(real_log("rich_traceback.log"), 1);
  ASSERT_TRUE(j["primary"].is_object());
  const json& p = j["primary"];
  ASSERT_EQ(p["traceback"].size(), 3u) << p["traceback"].dump();
  EXPECT_EQ(p["traceback"][2]["function"], "load_batch");
  EXPECT_EQ(p["user_frame"]["file"], "/tmp/train_job/train.py");
  EXPECT_EQ(p["user_frame"]["line"], 10);
  ASSERT_FALSE(p["context_before"].empty());
  EXPECT_NE(p["context_before"][0]["text"].get<std::string>().find("step 1/5 loss 2.000"), std::string::npos)
      << p["context_before"][0].dump();
  // A plain traceback whose innermost frames are the standard library's: the user's frame
  // is the script's, outside /usr/lib/python3.
  j = diagnose(real_log("name_resolution.log"), 1);
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_EQ(j["primary"]["traceback"].size(), 3u) << j["primary"]["traceback"].dump();
  EXPECT_EQ(j["primary"]["user_frame"]["file"], "/tmp/train_job/resolve.py");
  EXPECT_EQ(j["primary"]["user_frame"]["line"], 3);
  EXPECT_EQ(j["primary"]["context_before"][0]["text"], "connecting to the rendezvous host");
}

// A pasted tail of a traceback (no "Traceback (most recent call last):" line) is joined:
// its frames come with the exception (here the last lines of the real name-resolution log).
TEST_F(Grammar, AHeaderlessTracebackTailIsJoined) {
  std::string text = ff::test::slurp(real_log("name_resolution.log"));
  text = text.substr(text.find("  File \"/usr/lib/python3.11/socket.py\""));
  ff::test::write_file(dir_ / "tail.log", text);
  json j = diagnose((dir_ / "tail.log").string(), 1);
  ASSERT_TRUE(j["primary"].is_object()) << j.dump().substr(0, 600);
  EXPECT_EQ(j["primary"]["exception_type"], "socket.gaierror");
  EXPECT_EQ(j["primary"]["traceback"].size(), 2u) << j["primary"]["traceback"].dump();
  EXPECT_TRUE(j["primary"]["user_frame"].is_null()) << "only library frames in the tail";
}

}  // namespace

namespace {

// ISO 8601 beside the time as written: microseconds when the line had sub-second digits;
// null for a glog time, which has no year.
TEST_F(Grammar, TimesAreGivenInIso8601BesideTheOriginalText) {
  ff::test::write_file(dir_ / "t.log",
                       "2026-11-30 10:20:43,856 ERROR [rank1] train: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  json j = diagnose((dir_ / "t.log").string(), 1);
  ASSERT_TRUE(j["primary"].is_object()) << j.dump().substr(0, 500);
  EXPECT_EQ(j["primary"]["time"], "2026-11-30 10:20:43,856");
  EXPECT_EQ(j["primary"]["time_iso"], "2026-11-30T10:20:43.856000");
  ff::test::write_file(dir_ / "g.log",
                       "E1130 10:20:43.856123 81234 train.py:12] RuntimeError: CUDA error: an illegal memory access was encountered\n");
  j = diagnose((dir_ / "g.log").string(), 1);
  ASSERT_TRUE(j["primary"].is_object());
  EXPECT_FALSE(j["primary"]["time"].is_null());
  EXPECT_TRUE(j["primary"]["time_iso"].is_null()) << j["primary"]["time_iso"];
}

}  // namespace

namespace {

std::string pasted(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/pasted/" + name; }

// Schedulers: Slurm's time limit and a pod that Kubernetes OOM-killed.
TEST_F(Grammar, SchedulerReportsAreTheFailure) {
  expect_primary(diagnose(pasted("slurm_time_limit.log"), 1), "slurm.job.time-limit", "launcher", "DUE TO TIME LIMIT");
  expect_primary(diagnose(pasted("kubectl_describe_oomkilled.log"), 1), "kubernetes.pod.oomkilled", "host-memory",
                 "OOMKilled");
}

// Two ranks' tracebacks interleaved line by line are joined per rank: rank 1's CUDA error
// is the failure, rank 0's StopIteration is not mixed into it.
TEST_F(Grammar, InterleavedTracebacksOfTwoRanksAreJoinedPerRank) {
  json j = diagnose(pasted("two_ranks_interleaved.log"), 1);
  expect_primary(j, "cuda.kernel.illegal-memory-access", "cuda-runtime", "an illegal memory access was encountered");
  EXPECT_EQ(j["primary"]["rank"], 1);
  ASSERT_FALSE(j["primary"]["traceback"].empty());
  EXPECT_EQ(j["primary"]["traceback"].back()["line"], 33) << j["primary"]["traceback"].dump();
}

// An exception message wrapped over several lines still names its entry.
TEST_F(Grammar, AnExceptionMessageWrappedOverLinesIsNamed) {
  expect_primary(diagnose(pasted("wrapped_state_dict_message.log"), 1), "pytorch.checkpoint.load-state-dict-mismatch",
                 "checkpoint", "Error(s) in loading state_dict for GPT");
}

// Benign lines stay benign: the tokenizers fork warning, unused weights of a checkpoint, a
// deprecation; the run is not failed or degraded (it shows no end: incomplete).
TEST_F(Grammar, WarningsUsersAskAboutDoNotMakeARunFailedOrDegraded) {
  json j = diagnose(pasted("hf_benign_warnings.log"), 3);
  EXPECT_EQ(j["verdict"], "incomplete") << j["reasons"].dump();
  EXPECT_TRUE(j["primary"].is_null());
}

}  // namespace
