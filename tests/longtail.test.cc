// The long tail (issue 30): a wrapper takes the specific cause printed with it, and a
// failure no entry names gets a principled guess, said as one. Public excerpts of the
// labelled corpus read in place (../shared/corpus/github-issues-3; skipped without it).
#include <gtest/gtest.h>

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

}  // namespace
