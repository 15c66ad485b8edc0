// The long tail (issue 30): a wrapper takes the specific cause printed with it, and a
// failure no entry names gets a principled guess, said as one. Public excerpts of the
// labelled corpus read in place (../shared/corpus/github-issues-3; skipped without it).
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::Outcome;
using ff::test::quote;

std::string excerpt(const std::string& folder, const std::string& id) {
  return std::string(FF_SHARED_DIR) + "/corpus/" + folder + "/cases/" + id + ".log";
}

class LongTail : public ff::test::TempDirTest {
 protected:
  // The diagnosis of a corpus excerpt, or null when the corpus is not here.
  json excerpt_json(const std::string& folder, const std::string& id) {
    const std::string path = excerpt(folder, id);
    if (!fs::exists(path)) return json();
    Outcome r = run("diagnose --format json " + quote(path));
    EXPECT_LE(r.rc, 4) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
    return j.is_discarded() ? json() : j;
  }
  static std::string decisive(const json& j) { return j["primary"]["evidence"][0]["text"].get<std::string>(); }
};

#define SKIP_WITHOUT(j) \
  if ((j).is_null()) GTEST_SKIP() << "../shared/corpus is not here"

// Mechanism 1: DistBackendError's "remote process exited or there was a network error" is
// a wrapper; NCCL's `Last error:` under it names the failure (a reset connection).
TEST_F(LongTail, ADistBackendErrorIsNamedByItsLastErrorLine) {
  json j = excerpt_json("github-issues-3", "008");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["category"], "communication") << p["id"];
  EXPECT_EQ(p["basis"], "wrapper-cause") << p["id"];
  ASSERT_TRUE(p["wrapper"].is_object());
  EXPECT_EQ(p["wrapper"]["id"], "distributed.nccl.remote-error");
  EXPECT_NE(decisive(j).find("Connection reset by peer"), std::string::npos) << decisive(j);
}

// The same for "invalid usage": the cause under it is a duplicate GPU (configuration).
TEST_F(LongTail, InvalidUsageIsNamedByTheDuplicateGpuUnderIt) {
  json j = excerpt_json("github-issues-3", "010");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["id"], "nccl.init.duplicate-gpu");
  EXPECT_EQ(p["basis"], "wrapper-cause");
  EXPECT_NE(decisive(j).find("Duplicate GPU detected"), std::string::npos) << decisive(j);
}

// An entry's pattern whose capture names the rank on a traceback's exception line belongs
// to that traceback: one incident named by the entry, not an unrecognised RuntimeError.
TEST_F(LongTail, AHitWithACapturedRankNamesTheTracebackItEnds) {
  json j = excerpt_json("github-issues-3", "030");
  SKIP_WITHOUT(j);
  EXPECT_EQ(j["primary"]["id"], "distributed.gloo.monitored-barrier-peer-error");
  EXPECT_EQ(j["primary"]["basis"], "entry");
}

// Mechanism 2: an AssertionError no pattern names (the paste wrapped its message inside a
// rich box), raised by DeepSpeed's own config check: the closest entry by its words is
// DeepSpeed's batch-size check, so configuration, said as a guess.
TEST_F(LongTail, AFrameworksConfigCheckIsAConfigurationGuess) {
  json j = excerpt_json("github-issues-3", "040");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["category"], "configuration") << p["id"];
  EXPECT_EQ(p["basis"], "guess");
  ASSERT_TRUE(p["guess"].is_object());
  EXPECT_EQ(p["guess"]["from"], "words");
  EXPECT_EQ(p["guess"]["closest"][0]["id"], "deepspeed.config.batch-size-mismatch");
  EXPECT_LT(p["confidence"].get<double>(), 0.6);
  EXPECT_NE(p["summary"].get<std::string>().find("is a guess"), std::string::npos) << p["summary"];
}

// Ranks from the text: DDP's unused-parameter message names its rank on a detail line
// below the header ("Parameters which did not receive grad for rank 3: ..."), matched by
// the same entry (rule rank.detail-line).
TEST_F(LongTail, ADetailLineOfTheMessageNamesTheRank) {
  json j = excerpt_json("github-issues-3", "019");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["id"], "pytorch.ddp.unused-parameters");
  EXPECT_EQ(p["rank"], 3);
  EXPECT_EQ(p["rank_rule"], "detail-line");
}

// Ranks from the text: under torchrun's tee prefix on a multi-node job the line reads
// "[default0]:[rank12]:": the tee's 0 is the worker's index on its node, PyTorch's own
// "[rank12]" the global rank (kb/formats/prefixes.yaml rank_wins).
TEST_F(LongTail, PyTorchsRankPrefixWinsOverTheTeeIndex) {
  json j = excerpt_json("github-issues-4", "h2-023");
  SKIP_WITHOUT(j);
  EXPECT_EQ(j["primary"]["category"], "hardware");
  EXPECT_EQ(j["primary"]["rank"], 12);
}

// torchrun's newer wording of a worker's exit ("failed (exitcode: -9) for binary located
// at ... with local_rank: 0 (process ID: 71)") still gives the local rank and the pid.
TEST_F(LongTail, TorchrunsNewerExitWordingGivesTheLocalRank) {
  json j = excerpt_json("github-issues-4", "h2-029");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["id"], "distributed.elastic.worker-sigkill");
  EXPECT_EQ(p["rank"], 0);
  EXPECT_EQ(p["rank_rule"], "local-rank-single-node");
}

// An excerpt that starts at the DataLoader's re-raised line ("X: Caught X in DataLoader
// worker process 0.") with the worker's "Original Traceback" below it: one incident, and
// the worker's own exception is the decisive line, as in the whole traceback.
TEST_F(LongTail, ACaughtLineIsOneIncidentWithTheOriginalTracebackBelowIt) {
  json j = excerpt_json("github-issues-4", "h2-048");
  SKIP_WITHOUT(j);
  const json& p = j["primary"];
  EXPECT_EQ(p["category"], "data-pipeline") << p["id"];
  EXPECT_NE(decisive(j).find("cannot identify image file"), std::string::npos) << decisive(j);
  bool caught = false;
  for (const auto& e : p["evidence"]) caught = caught || e["line"] == 1;
  EXPECT_TRUE(caught) << "the re-raised line is evidence of the same incident";
  EXPECT_TRUE(j["collateral"].empty()) << j["collateral"];
}

// An IPython / Colab traceback ("ImportError   Traceback (most recent call last)", frame
// headers "[path](link) in func()", numbered code lines, "-> 1767 raise ..."): the code
// line that spells the message is context, the exception line is decisive.
TEST_F(LongTail, AnIPythonTracebackCitesTheExceptionLineNotTheCode) {
  json j = excerpt_json("github-issues-3", "068");
  SKIP_WITHOUT(j);
  EXPECT_EQ(j["primary"]["id"], "transformers.trainer.accelerate-required");
  EXPECT_EQ(decisive(j).rfind("ImportError: Using the `Trainer`", 0), 0u) << decisive(j);
}

// CATEGORIES.md rule 7: a connect timeout to the rendezvous store is the launcher's, also
// in the older "host:port" wording of the endpoint.
TEST_F(LongTail, AStoreConnectTimeoutIsTheLaunchersInEitherWording) {
  json j = excerpt_json("github-issues-4", "h2-003");
  SKIP_WITHOUT(j);
  EXPECT_EQ(j["primary"]["id"], "distributed.store.client-connect-timeout");
  EXPECT_EQ(j["primary"]["category"], "launcher");
  EXPECT_NE(decisive(j).find("while trying to connect to 192.0.0.1:1234"), std::string::npos) << decisive(j);
}

// Excerpts get an answer: the tokenizers' fork notice alone is a known warning, so the
// excerpt is incomplete ("no failure in this excerpt"), never unknown.
TEST_F(LongTail, ATokenizersForkNoticeAloneIsAnIncompleteExcerpt) {
  json j = excerpt_json("github-issues-4", "h2-016");
  SKIP_WITHOUT(j);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_TRUE(j["primary"].is_null()) << j["primary"];
}

// CATEGORIES.md rule 8, on a real torchrun run: every rank printed "training complete",
// then the agent got SIGTERM ("Received 15 death signal") while a worker hung at exit: a
// hang at exit, not the launcher's teardown after a failure.
TEST_F(LongTail, ATeardownAfterEveryRankCompletedIsAHangAtExit) {
  const std::string path =
      std::string(FF_SHARED_DIR) + "/corpus/pytorch-runs-2/cases/09_healthy_teardown_hang__tee.log";
  if (!fs::exists(path)) GTEST_SKIP() << path << " is absent";
  Outcome r = run("diagnose --format json " + quote(path));
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.err;
  EXPECT_EQ(j["primary"]["id"], "distributed.elastic.hang-at-exit");
  EXPECT_EQ(j["primary"]["category"], "hang");
  EXPECT_NE(decisive(j).find("death signal, shutting down workers"), std::string::npos) << decisive(j);
  // The same teardown with no completion before it stays the launcher's.
  const std::string cut = (dir_ / "no-completion.log").string();
  {
    std::ifstream in(path);
    std::ofstream out(cut);
    for (std::string line; std::getline(in, line);)
      if (line.find("training complete") == std::string::npos) out << line << "\n";
  }
  Outcome r2 = run("diagnose --format json " + quote(cut));
  json k = json::parse(r2.out, nullptr, false);
  ASSERT_FALSE(k.is_discarded()) << r2.err;
  EXPECT_EQ(k["primary"]["id"], "distributed.elastic.sigterm-teardown");
}

}  // namespace
