// Many ranks, one cause: jobs of up to 1,024 ranks made by bench/genlog.py (one planted
// failure; the other ranks time out in any order; whole-second timestamps; skewed node
// clocks), as one interleaved stream, srun-labelled, and as per-node files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::slurp;

class MultiRank : public ff::test::TempDirTest {
 protected:
  // Generates a job; returns the generator's answer ({"rank", "node", ...}).
  json generate(const std::string& args, const std::string& out) {
    std::string cmd = "python3 " + ff::test::quote(std::string(FF_SOURCE_DIR) + "/bench/genlog.py") + " " + args +
                      " > " + ff::test::quote(out) + " 2> " + ff::test::quote((dir_ / "answer.json").string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return json::parse(slurp(dir_ / "answer.json"));
  }

  json diagnose(const std::string& input) {
    ff::test::Outcome r = run("diagnose --format json " + ff::test::quote(input));
    EXPECT_EQ(r.rc, 1) << r.err;
    return json::parse(r.out);
  }
};

TEST_F(MultiRank, OomOnOneOf1024RanksWithWholeSecondStampsAndSkewedClocks) {
  std::string log = (dir_ / "job.log").string();
  json want = generate("--ranks 1024 --steps 4 --failure oom --stamp s --skew 4 --seed 11", log);
  json d = diagnose(log);
  EXPECT_EQ(d["primary"]["category"], "gpu-memory");
  EXPECT_EQ(d["primary"]["rank"], want["rank"]);
  EXPECT_EQ(d["primary"]["node"], want["node"]);
  // 1,023 watchdog timeouts are one incident, not a thousand lines.
  EXPECT_LE(d["collateral"].size(), 6u);
  EXPECT_LE(d["timeline"].size(), 8u);
  bool timeouts = false;
  for (const auto& c : d["collateral"]) {
    EXPECT_EQ(c["explained_by"], d["primary"]["id"]);
    if (c["category"] == "hang") {
      timeouts = true;
      EXPECT_EQ(c["ranks"].size(), 1023u);
    }
  }
  EXPECT_TRUE(timeouts);
}

TEST_F(MultiRank, HangStragglerIsTheRankThatNeverTimedOut) {
  std::string log = (dir_ / "job.log").string();
  json want = generate("--ranks 1024 --steps 3 --failure hang --stamp s --skew 3 --seed 5", log);
  json d = diagnose(log);
  EXPECT_EQ(d["primary"]["category"], "hang");
  EXPECT_EQ(d["primary"]["rank"], want["rank"]);
  EXPECT_EQ(d["primary"]["node"], want["node"]);
  const json& h = d["primary"]["hang"];
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h["op"], "ALLREDUCE");
  EXPECT_EQ(h["timeout_ms"], 600000);
  EXPECT_EQ(h["suspect_ranks"], json::array({want["rank"]}));
  EXPECT_EQ(h["timed_out_ranks"].size(), 1023u);
}

TEST_F(MultiRank, SrunLabelledStream) {
  std::string log = (dir_ / "job.log").string();
  json want = generate("--ranks 256 --steps 3 --failure segv --style srun --seed 3", log);
  json d = diagnose(log);
  EXPECT_EQ(d["primary"]["id"], "python.crash.segfault");
  EXPECT_EQ(d["primary"]["rank"], want["rank"]);
}

TEST_F(MultiRank, PerNodeFilesFormOneJob) {
  fs::path logs = dir_ / "logs";
  json want = generate("--ranks 128 --steps 3 --failure oom --out-dir '" + logs.string() + "' --seed 9",
                       (dir_ / "stdout.txt").string());
  json d = diagnose(logs.string());
  EXPECT_EQ(d["primary"]["rank"], want["rank"]);
  EXPECT_EQ(d["primary"]["node"], want["node"]);
  EXPECT_NE(d["primary"]["evidence"][0]["source"].get<std::string>().find(want["node"].get<std::string>()),
            std::string::npos);
}

TEST_F(MultiRank, XidOnANodeOutranksTheTimeoutsElsewhere) {
  std::string log = (dir_ / "job.log").string();
  generate("--ranks 64 --steps 3 --failure xid --seed 2", log);
  json d = diagnose(log);
  EXPECT_EQ(d["primary"]["category"], "hardware");
  EXPECT_NE(d["primary"]["verify"].get<std::string>().find("nvidia-smi"), std::string::npos);
}

// Hardware first, whatever the clocks say (issue 32, item 2): a 256-rank DeepSpeed job whose
// node gpu-node-0042 logs "Xid ... 79, GPU has fallen off the bus" in its own kernel log
// while every other node's NCCL reports "Got completion from peer <that node> with
// status=12" (untimed), then watchdog timeouts and the launcher's kills. Variants of the
// generator (tests/gen/hardware_job.py): the kernel log's time with or without a year, its
// file first or last, the peer named by IP or by host name.
TEST_F(MultiRank, AnXidOnTheNodeTheTransportErrorsNameIsTheFirstFailure) {
  for (bool year : {false, true}) {
    for (bool xid_first : {false, true}) {
      for (const char* peer : {"ip", "host"}) {
        const std::string variant = std::string(year ? "year" : "no-year") + (xid_first ? "-first" : "-last") + "-" + peer;
        const fs::path job = dir_ / variant;
        std::string cmd = "python3 " + ff::test::quote(std::string(FF_SOURCE_DIR) + "/tests/gen/hardware_job.py") + " " +
                          ff::test::quote(job.string()) + " --peer " + peer + (year ? " --syslog-year" : "") +
                          (xid_first ? " --xid-first" : "") + " > " + ff::test::quote((dir_ / "answer.json").string());
        ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
        json d = diagnose(job.string());
        EXPECT_EQ(d["primary"]["id"], "nvidia.xid.79-fallen-off-bus") << variant << ": " << d["primary"]["evidence"][0];
        EXPECT_EQ(d["primary"]["node"], "gpu-node-0042") << variant;
        EXPECT_TRUE(d["recovered"].empty()) << variant << ": " << d["recovered"];
      }
    }
  }
}

}  // namespace
