// Ranks and nodes from the text (issue 30, mechanism 6): the rank of a failure named by
// what the software prints around it, where no line prefix says it. Real program output
// (tests/data/real, written by tests/data/real/programs/make-logs.sh with Debian's
// python3-torch) and public excerpts of the labelled corpus read in place
// (../shared/corpus/github-issues-3; skipped without it).
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
  return std::string(FF_SHARED_DIR) + "/corpus/github-issues-3/cases/" + id + ".log";
}

class RanksFromText : public ff::test::TempDirTest {
 protected:
  json primary(const std::string& path) {
    Outcome r = run("diagnose --format json " + quote(path));
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.err << r.out.substr(0, 300);
    if (j.is_discarded() || !j["primary"].is_object()) return json::object();
    return j["primary"];
  }
};

#define SKIP_WITHOUT(path) \
  if (!fs::exists(path)) GTEST_SKIP() << path << " is not here"

// torch.multiprocessing.spawn: "-- Process 1 terminated with the following error:" names
// the rank of the traceback printed below it (a real spawn of two gloo processes).
TEST_F(RanksFromText, SpawnsProcessHeaderNamesTheTracebacksRank) {
  json p = primary(real_log("mp_spawn_process_raised.log"));
  EXPECT_EQ(p["rank"], 1) << p.dump().substr(0, 600);
  EXPECT_NE(p["evidence"][0]["text"].get<std::string>().find("mat1 and mat2 shapes cannot be multiplied"),
            std::string::npos);
}

// NCCL's INFO topology lines, printed with the host:pid:tid prefix, say which rank that
// process is: "Trees [0] 2/-1/-1->1->0" and "Channel 00 : 1[89000] -> 2[b1000] [send]";
// the failing line of the same host:pid then has that rank, and its node.
TEST_F(RanksFromText, NcclTopologyLinesMapAProcessToItsRank) {
  SKIP_WITHOUT(excerpt("069"));
  json p = primary(excerpt("069"));
  EXPECT_EQ(p["rank"], 1) << p.dump().substr(0, 600);
  EXPECT_EQ(p["rank_rule"], "pid-map");
}

// The watchdog's "[Rank 1] NCCL watchdog thread terminated with exception: <text>" echoes
// the error of an unprefixed traceback: that traceback is rank 1's.
TEST_F(RanksFromText, TheWatchdogsEchoNamesTheRankOfAnUnprefixedTraceback) {
  SKIP_WITHOUT(excerpt("006"));
  json p = primary(excerpt("006"));
  EXPECT_EQ(p["rank"], 1) << p.dump().substr(0, 600);
}

}  // namespace
