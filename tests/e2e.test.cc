// End-to-end tests: the firstfault binary on real logs (tests/data, written by real
// PyTorch runs) and on hostile inputs generated from them at test time.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <csignal>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::Outcome;
using ff::test::slurp;
using ff::test::write_file;

std::string data(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/" + name; }
std::string read_file(const std::string& path) { return slurp(path); }

class E2E : public ff::test::TempDirTest {
 protected:
  json diagnose_json(const std::string& inputs, int expect_rc = 1) {
    Outcome r = run("diagnose --format json " + inputs);
    EXPECT_EQ(r.rc, expect_rc) << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out.substr(0, 300);
    return j;
  }
};

std::string primary_id(const json& j) { return j["primary"].is_object() ? j["primary"]["id"].get<std::string>() : ""; }

// Issue 33, item 4: a timeline row keeps the nearest time its stream printed and its rank
// from its own prefix. A real torchrun run (tee prefixes `[defaultN]:`, Python logging's
// `2026-11-30 10:21:59,495` stamps on the progress lines, none on the traceback): the root
// row used to say "(no time)" and "ranks -" (every rank failed alike).
TEST_F(E2E, Issue33TimelineRowsKeepTheirStreamsTimeAndTheirLinesRank) {
  json j = diagnose_json("'" + data("03_loss_scale_terminal__tee.log") + "'");
  ASSERT_FALSE(j["timeline"].empty());
  const json& root = j["timeline"][0];
  EXPECT_EQ(root["role"], "root");
  ASSERT_TRUE(root["time"].is_string()) << root.dump();
  EXPECT_EQ(root["time"].get<std::string>().rfind("~2026-11-30 10:2", 0), 0u) << root.dump();
  EXPECT_EQ(root["ranks"], json::array({1})) << root.dump();
  // The other ranks' tracebacks too (the launcher's own lines carry no stamp: no time).
  ASSERT_GE(j["timeline"].size(), 2u);
  EXPECT_EQ(j["timeline"][1]["time"].get<std::string>().rfind("~2026-11-30 10:2", 0), 0u) << j["timeline"].dump();
  // The text report says the same.
  Outcome text = run("diagnose --no-pager '" + data("03_loss_scale_terminal__tee.log") + "'");
  EXPECT_NE(text.out.find("\n  ~2026-11-30 10:2"), std::string::npos) << text.out;
}

// Issue 33, item 4: a hang says where every rank was. A real 4-rank gloo run in which
// rank 3 stopped after step 29 while ranks 0-2 waited in a recv: the decisive line is
// another rank's timeout, so the report also quotes rank 3's own last progress line and
// lists each rank's last step, time and line.
TEST_F(E2E, Issue33AHangListsEachRanksLastStepAndQuotesTheStragglers) {
  json j = diagnose_json("'" + data("06_hang.log") + "'");
  ASSERT_TRUE(j["primary"]["hang"].is_object()) << j["primary"].dump();
  const json& h = j["primary"]["hang"];
  EXPECT_EQ(h["ranks_with_progress"], 4);
  ASSERT_EQ(h["last_progress"].size(), 4u) << h.dump();
  const json& first = h["last_progress"][0];
  EXPECT_EQ(first["rank"], 3);
  EXPECT_EQ(first["state"], "suspect");
  EXPECT_EQ(first["step"], 29);
  EXPECT_NE(first["line"]["text"].get<std::string>().find("train: epoch 0 step 29/60"), std::string::npos)
      << first.dump();
  EXPECT_EQ(first["line"]["line"], 149);
  EXPECT_EQ(first["line"]["time"].get<std::string>().rfind("2026-11-30 10:23:15", 0), 0u) << first.dump();
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(h["last_progress"][i]["state"], "timed out") << h.dump();
  // The text report: a row per group of ranks and the straggler's own line, whole.
  Outcome text = run("diagnose --no-pager '" + data("06_hang.log") + "'");
  EXPECT_NE(text.out.find("\nLast progress, by rank (4 ranks printed progress)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ranks 0-2"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 3's last progress line, " + data("06_hang.log") + ":149\n"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("> train: epoch 0 step 29/60"), std::string::npos) << text.out;
  // Markdown has the table too.
  Outcome md = run("diagnose --format markdown '" + data("06_hang.log") + "'");
  EXPECT_NE(md.out.find("| 3 | 29 | "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| 0-2 | 29 | "), std::string::npos) << md.out;
}

// Issue 33, item 3: the step the numbers give is in the fix. A real run whose script
// stops at its first NaN loss ("Loss is nan at step 45"): its grad norm was already inf at
// step 44, which the fix names with its line; a run whose loss scale fell to its floor
// names the step the Numbers section gives.
TEST_F(E2E, Issue33TheFixSaysTheStepTheNumbersGive) {
  json j = diagnose_json("'" + data("02_nan_loss.log") + "'");
  ASSERT_TRUE(j["primary"]["fix_at"].is_object()) << j["primary"].dump();
  EXPECT_EQ(j["primary"]["fix_at"]["step"], 44);
  EXPECT_NE(j["primary"]["fix_at"]["line"]["text"].get<std::string>().find("step 44"), std::string::npos)
      << j["primary"]["fix_at"].dump();
  Outcome text = run("diagnose --no-pager '" + data("02_nan_loss.log") + "'");
  const size_t fix = text.out.find("\nFix\n");
  ASSERT_NE(fix, std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("  In this log: first non-finite value: grad_norm = inf at step 44", fix), fix + 5)
      << text.out;

  json floor = diagnose_json("'" + data("fairseq-512-loss-scale-floor.log") + "'");
  ASSERT_TRUE(floor["primary"]["fix_at"].is_object()) << floor["primary"].dump();
  bool said = false;
  for (const auto& v : floor["series"]["verdicts"]) {
    if (v["step"] == floor["primary"]["fix_at"]["step"] && v["summary"] == floor["primary"]["fix_at"]["what"]) said = true;
  }
  EXPECT_TRUE(said) << floor["primary"]["fix_at"].dump() << floor["series"]["verdicts"].dump();
  // A failure that is not numerical gets none.
  json hang = diagnose_json("'" + data("06_hang.log") + "'");
  EXPECT_TRUE(hang["primary"]["fix_at"].is_null());
}

// The same real run as its script would have logged it with fewer numbers: without the
// grad norm, the loss's divergence is where it began; without loss and grad norm, the
// failing rank's last progress line (the script stopped at its NaN before printing one).
TEST_F(E2E, Issue33WithFewerNumbersTheFixSaysTheSpikeOrTheLastStep) {
  auto without = [&](const std::vector<std::string>& metrics, const std::string& name) {
    std::string log = read_file(data("02_nan_loss.log"));
    for (const auto& m : metrics) {
      const std::string key = " | " + m + " ";
      for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at)) {
        const size_t end = log.find(' ', at + key.size());
        log.erase(at, end - at);
      }
    }
    write_file(dir_ / name, log);
    return diagnose_json("'" + (dir_ / name).string() + "'")["primary"];
  };
  json spike = without({"grad_norm"}, "no-grad-norm.log");
  ASSERT_TRUE(spike["fix_at"].is_object()) << spike.dump();
  EXPECT_EQ(spike["fix_at"]["step"], 44);
  EXPECT_EQ(spike["fix_at"]["what"].get<std::string>().rfind("loss diverged: ", 0), 0u) << spike["fix_at"].dump();
  json last = without({"grad_norm", "loss"}, "no-loss.log");
  ASSERT_TRUE(last["fix_at"].is_object()) << last.dump();
  EXPECT_EQ(last["fix_at"]["what"], "the last progress line before the failure is at step 44");
  EXPECT_NE(last["fix_at"]["line"]["text"].get<std::string>().find("step 44/80 | lr "), std::string::npos)
      << last["fix_at"].dump();
}

TEST_F(E2E, JsonContractOnARealMultiRankFailure) {
  json j = diagnose_json("'" + data("01_rank_exception__rankprefix.log") + "'");
  EXPECT_EQ(j["schema"], "firstfault.diagnosis/2");
  EXPECT_EQ(j["verdict"], "failed");
  const json& p = j["primary"];
  EXPECT_EQ(p["category"], "model-code");
  EXPECT_EQ(p["rank"], 2);
  ASSERT_FALSE(p["evidence"].empty());
  const json& ev = p["evidence"][0];
  EXPECT_NE(ev["text"].get<std::string>().find("mat1 and mat2 shapes cannot be multiplied"), std::string::npos);
  EXPECT_GT(ev["line"].get<int>(), 0);
  EXPECT_TRUE(p["fix"].is_string() && !p["fix"].get<std::string>().empty());
  EXPECT_TRUE(p["verify"].is_string() && !p["verify"].get<std::string>().empty());
  // The other ranks lost their peer: collateral, explained by the primary.
  bool peer_lost = false;
  for (const auto& c : j["collateral"]) {
    EXPECT_EQ(c["explained_by"], p["id"]);
    if (c["category"] == "communication") {
      peer_lost = true;
      EXPECT_EQ(c["ranks"], json({0, 1, 3}));
    }
  }
  EXPECT_TRUE(peer_lost);
  EXPECT_TRUE(j["hypotheses"].is_array());
  EXPECT_FALSE(j["timeline"].empty());
  // The decisive line number points at the quoted text in the source.
  std::istringstream src(read_file(data("01_rank_exception__rankprefix.log")));
  std::string line;
  for (int i = 0; i < ev["line"].get<int>(); ++i) std::getline(src, line);
  EXPECT_NE(line.find(ev["text"].get<std::string>()), std::string::npos);
}

// Issue 32, item 5: the report says where the verify command runs (the entry's
// verify.where), in the text as in the JSON, on a diagnosis (not only on the page).
TEST_F(E2E, TheVerifyStepSaysWhereItRuns) {
  json j = diagnose_json("'" + data("05_signal_kill__tee.log") + "'");
  const std::string where = j["primary"].value("verify_where", "");
  ASSERT_TRUE(where == "shell" || where == "rerun" || where == "in-process") << j["primary"];
  Outcome r = run("diagnose '" + data("05_signal_kill__tee.log") + "'");
  const std::string said = where == "shell"   ? "in a shell on the node, after the fix:"
                           : where == "rerun" ? "rerun a few steps of the job with the fix:"
                                              : "add these lines to the training script:";
  EXPECT_NE(r.out.find("Verify\n  " + said), std::string::npos) << r.out;
}

// Issue 32, item 5: the history's "seen before" line on stderr is wrapped to the width,
// as the report is (COLUMNS here; a terminal's own width when stderr is one).
TEST_F(E2E, TheSeenBeforeLineIsWrappedToTheWidth) {
  const std::string env =
      "FIRSTFAULT_NO_HISTORY=0 FIRSTFAULT_HISTORY=" + ff::test::quote((dir_ / "history.db").string()) + " COLUMNS=50";
  // Two jobs (two files) with the same failure: the second is the 2nd time this week.
  fs::copy_file(data("05_signal_kill__tee.log"), dir_ / "a.log");
  fs::copy_file(data("05_signal_kill__tee.log"), dir_ / "b.log");
  ff::test::run_firstfault("diagnose " + ff::test::quote((dir_ / "a.log").string()), dir_ / "first", "", env);
  Outcome r =
      ff::test::run_firstfault("diagnose " + ff::test::quote((dir_ / "b.log").string()), dir_ / "second", "", env);
  ASSERT_NE(r.err.find("seen before"), std::string::npos) << r.err;
  std::istringstream lines(r.err);
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) EXPECT_LE(line.size(), 50u) << line;
  EXPECT_GE(n, 2u) << r.err;
}

TEST_F(E2E, PlainLogRankComesFromTheLauncherSummaryNotItsRootCauseGuess) {
  // torchrun's "Root Cause (first observed failure)" names rank 0 here; the rank whose
  // own error matches the first failure is 2.
  json j = diagnose_json("'" + data("01_rank_exception.log") + "'");
  EXPECT_EQ(j["primary"]["rank"], 2);
}

TEST_F(E2E, HealthyRunExitsZero) {
  json j = diagnose_json("'" + data("09_healthy__tee.log") + "'", 0);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_TRUE(j["primary"].is_null());
}

TEST_F(E2E, TextReportReadsAtAGlance) {
  Outcome r = run("diagnose '" + data("05_signal_kill__tee.log") + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("FAILED"), std::string::npos);
  EXPECT_NE(r.out.find("rank 1"), std::string::npos);
  EXPECT_NE(r.out.find("Signal 9 (SIGKILL)"), std::string::npos);
  EXPECT_NE(r.out.find("Fix"), std::string::npos);
  EXPECT_NE(r.out.find("Verify"), std::string::npos);
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no colour when stdout is not a TTY";
}

TEST_F(E2E, CompressedAndArchivedInputsGiveTheSameDiagnosis) {
  std::string log = data("01_rank_exception__rankprefix.log");
  std::string d = dir_.string();
  ASSERT_EQ(std::system(("gzip -c '" + log + "' > '" + d + "/a.log.gz'").c_str()), 0);
  ASSERT_EQ(std::system(("zstd -q -c '" + log + "' > '" + d + "/a.log.zst'").c_str()), 0);
  ASSERT_EQ(std::system(("xz -c '" + log + "' > '" + d + "/a.log.xz'").c_str()), 0);
  ASSERT_EQ(std::system(("mkdir -p '" + d + "/bundle' && cp '" + log + "' '" + d + "/bundle/job.log' && tar -C '" + d +
                         "' -czf '" + d + "/bundle.tar.gz' bundle")
                            .c_str()),
            0);
  json plain = diagnose_json("'" + log + "'");
  for (const char* f : {"a.log.gz", "a.log.zst", "a.log.xz", "bundle.tar.gz"}) {
    json j = diagnose_json("'" + d + "/" + f + "'");
    EXPECT_EQ(primary_id(j), primary_id(plain)) << f;
    EXPECT_EQ(j["primary"]["rank"], plain["primary"]["rank"]) << f;
    EXPECT_EQ(j["primary"]["evidence"][0]["line"], plain["primary"]["evidence"][0]["line"]) << f;
  }
  // stdin, compressed or not.
  Outcome r = run("diagnose --format json -", d + "/a.log.gz");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(primary_id(json::parse(r.out)), primary_id(plain));
}

TEST_F(E2E, PerRankFilesInAFolderAreOneJob) {
  // Split the rank-prefixed log into one file per rank, as torchrun --log_dir writes.
  std::istringstream src(read_file(data("01_rank_exception__rankprefix.log")));
  std::map<std::string, std::string> per_rank;
  std::string line;
  while (std::getline(src, line)) {
    if (line.rfind("[rank", 0) == 0) {
      size_t close = line.find("]:");
      std::string rank = line.substr(5, close - 5);
      std::string body = line.substr(close + 2);
      if (!body.empty() && body[0] == ' ') body.erase(0, 1);
      per_rank["attempt_0/" + rank + "/stderr.log"] += body + "\n";
    } else {
      per_rank["launcher.log"] += line + "\n";
    }
  }
  ASSERT_GE(per_rank.size(), 4u);
  for (const auto& [name, text] : per_rank) write_file(dir_ / "logs" / name, text);
  json j = diagnose_json("'" + (dir_ / "logs").string() + "'");
  EXPECT_EQ(j["primary"]["category"], "model-code");
  EXPECT_NE(j["primary"]["evidence"][0]["source"].get<std::string>().find("attempt_0/2/"), std::string::npos);
  EXPECT_GE(j["inputs"]["sources"].size(), 4u);
}

TEST_F(E2E, MissingFileIsExitTwoWithTheName) {
  Outcome r = run("diagnose '" + (dir_ / "nope.log").string() + "'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nope.log"), std::string::npos);
  EXPECT_NE(r.err.find("no such file"), std::string::npos);
}

TEST_F(E2E, MissingFileNextToAGoodOneLosesNothing) {
  Outcome r =
      run("diagnose --format json '" + (dir_ / "nope.log").string() + "' '" + data("05_signal_kill__tee.log") + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("nope.log"), std::string::npos);
  json j = json::parse(r.out);
  EXPECT_EQ(j["primary"]["rank"], 1);
  EXPECT_FALSE(j["inputs"]["errors"].empty());
}

TEST_F(E2E, EmptyFileIsUnknownAndEmptyDirectoryIsAnError) {
  write_file(dir_ / "empty.log", "");
  json j = diagnose_json("'" + (dir_ / "empty.log").string() + "'", 4);
  EXPECT_EQ(j["verdict"], "unknown");
  EXPECT_EQ(j["reasons"][0]["rule"], "verdict.unknown-empty");
  fs::create_directories(dir_ / "nologs");
  Outcome r = run("diagnose '" + (dir_ / "nologs").string() + "'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no log files"), std::string::npos);
}

TEST_F(E2E, BinaryFileIsNamedAndSkipped) {
  std::string bin(4096, '\0');
  for (size_t i = 0; i < bin.size(); i += 7) bin[i] = static_cast<char>(i * 31);
  write_file(dir_ / "model.pt", bin);
  Outcome r = run("diagnose '" + (dir_ / "model.pt").string() + "'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("model.pt"), std::string::npos);
  EXPECT_NE(r.err.find("binary"), std::string::npos);
}

TEST_F(E2E, TruncatedGzipKeepsWhatWasReadAndSaysSo) {
  std::string d = dir_.string();
  ASSERT_EQ(std::system(("gzip -c '" + data("05_signal_kill__tee.log") + "' > '" + d + "/full.gz'").c_str()), 0);
  std::string gz = read_file(d + "/full.gz");
  write_file(dir_ / "cut.gz", gz.substr(0, gz.size() * 9 / 10));
  Outcome r = run("diagnose --format json '" + d + "/cut.gz'");
  EXPECT_LE(r.rc, 1) << r.err;  // something was read: a diagnosis, not a crash
  EXPECT_NE(r.err.find("cut.gz"), std::string::npos);
  json j = json::parse(r.out);
  EXPECT_GT(j["inputs"]["lines"].get<int>(), 100);
  EXPECT_FALSE(j["inputs"]["errors"].empty());
  // A file that only pretends to be gzip.
  write_file(dir_ / "fake.gz", std::string("\x1f\x8b") + "this is not gzip at all\n");
  Outcome f = run("diagnose '" + d + "/fake.gz'");
  EXPECT_EQ(f.rc, 2);
  EXPECT_NE(f.err.find("fake.gz"), std::string::npos);
}

TEST_F(E2E, InvalidUtf8NulBytesAndCrlfStillDiagnose) {
  std::string log = read_file(data("01_rank_exception__rankprefix.log"));
  std::string dirty;
  std::istringstream src(log);
  std::string line;
  int n = 0;
  while (std::getline(src, line)) {
    if (++n % 5 == 0) line += std::string(" \xff\xfe\xc0\xaf ", 6) + std::string(1, '\0') + "tail";
    dirty += line + "\r\n";
  }
  write_file(dir_ / "dirty.log", dirty);
  json clean = diagnose_json("'" + data("01_rank_exception__rankprefix.log") + "'");
  json j = diagnose_json("'" + (dir_ / "dirty.log").string() + "'");
  EXPECT_EQ(primary_id(j), primary_id(clean));
  EXPECT_EQ(j["primary"]["rank"], 2);
  EXPECT_EQ(j["primary"]["evidence"][0]["line"], clean["primary"]["evidence"][0]["line"]);
}

TEST_F(E2E, HugeLineDoesNotStopTheDiagnosis) {
  // A 200 MB line without structure, then the real log.
  {
    std::ofstream out(dir_ / "huge.log", std::ios::binary);
    std::string block(1 << 20, 'x');
    for (int i = 0; i < 200; ++i) out << block;
    out << "\n" << read_file(data("05_signal_kill__tee.log"));
  }
  json j = diagnose_json("'" + (dir_ / "huge.log").string() + "'");
  EXPECT_EQ(j["primary"]["rank"], 1);
  EXPECT_FALSE(j["inputs"]["notes"].empty());  // the long line is mentioned
}

TEST_F(E2E, EventsJsonlHasOneObjectPerLine) {
  Outcome r = run("events --format jsonl '" + data("05_signal_kill__tee.log") + "'");
  EXPECT_EQ(r.rc, 1);
  std::istringstream in(r.out);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    for (const char* k : {"source", "line", "rank", "node", "time", "entry", "role", "text"})
      EXPECT_TRUE(j.contains(k)) << k;
    ++n;
  }
  EXPECT_GT(n, 5);
}

TEST_F(E2E, BadKbOverrideIsReportedWithFileAndLineAndTheRestWorks) {
  write_file(dir_ / "kb" / "bad.yaml", "id: my.bad\ntitle: x\ncategory: not-a-category\n");
  Outcome r =
      run("--kb '" + (dir_ / "kb").string() + "' diagnose --format json '" + data("05_signal_kill__tee.log") + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("bad.yaml:3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("category"), std::string::npos);
  EXPECT_EQ(json::parse(r.out)["primary"]["rank"], 1);
}

TEST_F(E2E, KbOverrideAddsAnEntry) {
  write_file(dir_ / "kb" / "mine.yaml", R"(id: mine.custom.failure
title: Our custom failure
category: model-code
severity: fatal
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [look at the log]
root_cause: r
fix: [do this]
verify: run it again
references: [{url: 'https://example.org'}]
patterns:
  - {id: p, role: root, literal: 'OUR_CUSTOM_FAILURE_MARKER'}
examples: ['OUR_CUSTOM_FAILURE_MARKER at step 3']
)");
  write_file(dir_ / "x.log", "starting\nERROR OUR_CUSTOM_FAILURE_MARKER at step 3\n");
  Outcome r = run("--kb '" + (dir_ / "kb").string() + "' diagnose --format json '" + (dir_ / "x.log").string() + "'");
  EXPECT_EQ(r.rc, 1) << r.err;
  EXPECT_EQ(primary_id(json::parse(r.out)), "mine.custom.failure");
}

TEST_F(E2E, UnrecognisedCrashIsStillReported) {
  write_file(dir_ / "x.log",
             "step 1 ok\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    f()\n"
             "ZyzzyvaError: the frobnicator is out of flux\n");
  json j = diagnose_json("'" + (dir_ / "x.log").string() + "'");
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(primary_id(j), "unrecognized.ZyzzyvaError");
  EXPECT_EQ(j["primary"]["evidence"][0]["line"], 5);
  EXPECT_EQ(j["primary"]["category"], "model-code");
}

TEST_F(E2E, BadArgumentsExitTwoAndHelpListsExitCodes) {
  EXPECT_EQ(run("diagnose --format yaml x.log").rc, 2);
  EXPECT_EQ(run("frobnicate").rc, 2);
  Outcome h = run("diagnose --help");
  EXPECT_EQ(h.rc, 0);
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
}

}  // namespace

namespace {

// Issue 16: a reader that stops early. `firstfault kb list | head -1` died with SIGABRT
// ("terminate called ... Broken pipe"); now it stops quietly with SIGPIPE's status (141),
// as grep and git do, for the text and the JSON outputs.
TEST(E2ECli, AReaderThatStopsEarlyEndsTheOutputQuietly) {
  const std::string log = ff::test::data("01_rank_exception__tee.log");
  const std::string healthy = ff::test::data("09_healthy__tee.log");
  const std::string site = ::testing::TempDir() + "/pipe-site-" + std::to_string(::getpid());
  for (const std::string& args :
       {std::string("kb list"), std::string("kb list --format json"), std::string("rules"), std::string("kb check"),
        std::string("kb literals"), "diagnose " + log, "diagnose --format json " + log, log, "events " + log,
        std::string("explain pytorch.cuda.out-of-memory"), std::string("search 'CUDA out of memory'"),
        "diff " + log + " --control " + healthy, "verify --before " + log + " --after " + healthy, "site " + site,
        std::string("--help"), std::string("diagnose --help"), std::string("-V")}) {
    SCOPED_TRACE(args);
    const std::string err = ::testing::TempDir() + "/pipe-" + std::to_string(::getpid()) + ".err";
    // stdout is a pipe whose reader has already gone, as when `head` has read its lines:
    // the first write finds no reader, however fast the command is.
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    ::close(fds[0]);
    const std::string cmd = "FIRSTFAULT_CACHE_DIR=" + ::testing::TempDir() + "/ff-cache-" + std::to_string(::getpid()) +
                            " " + FF_BINARY + " " + args + " 2>" + err;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[1]);
      ::signal(SIGPIPE, SIG_DFL);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(fds[1]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
    const int rc = WEXITSTATUS(status);
    EXPECT_EQ(rc, 141);
    std::ifstream in(err);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.find("terminate"), std::string::npos) << text;
    EXPECT_EQ(text.find("Broken pipe"), std::string::npos) << text;
  }
}

}  // namespace

namespace {

// Issue 16, the first minute: `firstfault FILE` is `firstfault diagnose FILE`; with no
// input, a pipe or file on stdin is read; a typo of a subcommand gets "did you mean"; -V.
class E2EFirstMinute : public ff::test::TempDirTest {};

TEST_F(E2EFirstMinute, AFileAloneIsDiagnosedAndStdinIsReadWhenNoInputIsNamed) {
  const std::string log = std::string(FF_SOURCE_DIR) + "/tests/data/01_rank_exception__tee.log";
  ff::test::Outcome named = run("diagnose --format json " + ff::test::quote(log));
  ff::test::Outcome bare = run(ff::test::quote(log) + " --format json");
  EXPECT_EQ(bare.rc, 1) << bare.err;
  EXPECT_EQ(bare.out, named.out);
  ff::test::Outcome piped = run("diagnose --format json", log);  // stdin is the file
  EXPECT_EQ(piped.rc, 1) << piped.err;
  nlohmann::json a = nlohmann::json::parse(named.out), b = nlohmann::json::parse(piped.out);
  EXPECT_EQ(a["primary"]["id"], b["primary"]["id"]);
  EXPECT_EQ(a["primary"]["evidence"][0]["line"], b["primary"]["evidence"][0]["line"]);
  ff::test::Outcome events = run("events", log);
  EXPECT_EQ(events.rc, 1) << events.err;
  EXPECT_NE(events.out.find("\"kind\""), std::string::npos);
}

TEST_F(E2EFirstMinute, ATypoGetsDidYouMeanAndVersionHasAShortFlag) {
  ff::test::Outcome typo = run("diagnoze x.log");
  EXPECT_EQ(typo.rc, 2);
  EXPECT_NE(typo.err.find("did you mean 'diagnose'?"), std::string::npos) << typo.err;
  EXPECT_NE(typo.err.find("subcommands: diagnose, events"), std::string::npos) << typo.err;
  ff::test::Outcome missing = run("no-such-file.log");
  EXPECT_EQ(missing.rc, 2);
  EXPECT_NE(missing.err.find("'no-such-file.log' is not a subcommand, nor a file or folder here"), std::string::npos)
      << missing.err;
  ff::test::Outcome v = run("-V");
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out.rfind("firstfault ", 0), 0u) << v.out;
  ff::test::Outcome help = run("--help");
  EXPECT_NE(help.out.find("Usage: firstfault"), std::string::npos) << help.out.substr(0, 300);
}

}  // namespace

namespace {

// Issue 16: a mistake gets the nearest right answer, not an empty one.
class E2EDidYouMean : public ff::test::TempDirTest {};

TEST_F(E2EDidYouMean, FlagsEntryIdsAndFilterValues) {
  const std::string log = ff::test::data("01_rank_exception__tee.log");
  ff::test::Outcome flag = run("diagnose --fromat json " + log);
  EXPECT_EQ(flag.rc, 2);
  EXPECT_NE(flag.err.find("did you mean '--format'?"), std::string::npos) << flag.err;
  ff::test::Outcome verbose = run("diagnose --verbsoe " + log);
  EXPECT_NE(verbose.err.find("'--verbose'"), std::string::npos) << verbose.err;
  ff::test::Outcome id = run("explain out-of-memory");
  EXPECT_EQ(id.rc, 2);
  EXPECT_NE(id.err.find("did you mean "), std::string::npos) << id.err;
  EXPECT_NE(id.err.find("pytorch.cuda.out-of-memory"), std::string::npos) << id.err;
  ff::test::Outcome typo_id = run("explain pytorch.cuda.out-of-memroy");
  EXPECT_NE(typo_id.err.find("did you mean pytorch.cuda.out-of-memory"), std::string::npos) << typo_id.err;
  ff::test::Outcome fw = run("kb list --framework PyTorch");
  EXPECT_EQ(fw.rc, 2) << "a value no entry has is a mistake, not an empty list";
  EXPECT_EQ(fw.out, "");
  EXPECT_NE(fw.err.find("no entry has --framework 'PyTorch'; did you mean pytorch"), std::string::npos) << fw.err;
  EXPECT_NE(fw.err.find("deepspeed"), std::string::npos) << "the values that exist are named\n" << fw.err;
  ff::test::Outcome cat = run("kb list --category oom");
  EXPECT_EQ(cat.rc, 2);
  EXPECT_NE(cat.err.find("--category values: "), std::string::npos) << cat.err;
  EXPECT_NE(cat.err.find("gpu-memory"), std::string::npos) << cat.err;
  EXPECT_NE(run("kb list --category memory").err.find("did you mean gpu-memory, host-memory?"), std::string::npos);
  ff::test::Outcome good = run("kb list --framework pytorch --category gpu-memory");
  EXPECT_EQ(good.rc, 0) << good.err;
  EXPECT_NE(good.out.find("pytorch.cuda.out-of-memory"), std::string::npos);
}

// `-o /dev/null` and `-o` a pipe are written into, as a shell's `>` would: the report's
// atomic rename replaced the device node itself (as root, /dev/null became a regular file,
// and every later `> /dev/null` of the machine wrote into it). Bench scripts do this.
TEST_F(E2EDidYouMean, AnOutputThatIsADeviceOrAPipeIsWrittenIntoNotReplaced) {
  const std::string log = ff::test::data("01_rank_exception__tee.log");
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  ASSERT_TRUE(S_ISCHR(before.st_mode));
  for (const char* format : {"text", "json", "html"}) {
    ff::test::Outcome o = run(std::string("diagnose -f ") + format + " -o /dev/null " + log);
    EXPECT_EQ(o.rc, 1) << format << ": " << o.err;
    struct stat after {};
    ASSERT_EQ(::stat("/dev/null", &after), 0);
    EXPECT_TRUE(S_ISCHR(after.st_mode)) << "/dev/null is still the device after -f " << format;
    EXPECT_EQ(after.st_ino, before.st_ino);
  }
  // A named pipe: its reader gets the whole report.
  const std::string fifo = (dir_ / "report.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = ff::test::slurp(fifo); });
  ff::test::Outcome p = run("diagnose -f json -o " + ff::test::quote(fifo) + " " + log);
  // Had it not opened the pipe, the reader would wait in open() for ever: a writer of our
  // own lets it go (and reads as the end at once when firstfault has written).
  if (const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK); w >= 0) ::close(w);
  reader.join();
  EXPECT_EQ(p.rc, 1) << p.err;
  EXPECT_NE(got.find("\"pytorch.model.shape-mismatch\""), std::string::npos) << got.substr(0, 200);
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the pipe is still a pipe";
}

// explain takes several ids: a page each, in the order given, separated by a line of
// dashes; an unknown id among them is named on stderr (exit 2) and the others still shown.
TEST_F(E2EDidYouMean, ExplainShowsAPagePerIdAndKeepsTheOthersWhenOneIsUnknown) {
  ff::test::Outcome o =
      run("explain pytorch.cuda.out-of-memory pytorch.cuda.out-of-memroy distributed.nccl.watchdog-collective-timeout");
  EXPECT_EQ(o.rc, 2);
  EXPECT_NE(o.err.find("no entry with id 'pytorch.cuda.out-of-memroy'"), std::string::npos) << o.err;
  const size_t first = o.out.find("\npytorch.cuda.out-of-memory\n");
  const size_t rule = o.out.find("\n" + std::string(72, '-') + "\n");
  const size_t second = o.out.find("\ndistributed.nccl.watchdog-collective-timeout\n");
  ASSERT_NE(first, std::string::npos) << o.out;
  ASSERT_NE(rule, std::string::npos) << o.out;
  ASSERT_NE(second, std::string::npos) << o.out;
  EXPECT_LT(first, rule);
  EXPECT_LT(rule, second);
  EXPECT_EQ(o.out.find(std::string(72, '-'), rule + 2), std::string::npos) << "one rule between two pages";
}

// Issue 22: explain shows the page in the terminal: where the verify command runs and what it
// shows, the transient/terminal rule and the FAQ; kb list --tags counts the tags.
TEST_F(E2EDidYouMean, ExplainShowsThePageAndKbListCountsTags) {
  ff::test::Outcome o = run("explain pytorch.cuda.out-of-memory");
  ASSERT_EQ(o.rc, 0) << o.err;
  for (const char* part :
       {"\nVerify: ", "  expect: ", "\nTransient or terminal: terminal", "  recovers: ", "  stop: ", "\nFAQ\n",
        "Hardware or software?", "From 1 GPU to 1,000?", "What to monitor?", "Documentation\n    https://"})
    EXPECT_NE(o.out.find(part), std::string::npos) << part << "\n" << o.out;
  ff::test::Outcome tags = run("kb list --tags --format json");
  ASSERT_EQ(tags.rc, 0) << tags.err;
  auto j = nlohmann::ordered_json::parse(tags.out);
  ASSERT_TRUE(j.contains("oom")) << tags.out;
  EXPECT_GE(j["oom"].get<int>(), 2);
  int previous = 1 << 30;
  for (const auto& [tag, n] : j.items()) {
    EXPECT_LE(n.get<int>(), previous) << "most used first: " << tag;
    previous = n.get<int>();
  }
}

TEST_F(E2EDidYouMean, EachSubcommandsHelpSpeaksOfThatSubcommand) {
  ff::test::Outcome diag = run("diagnose --help");
  EXPECT_NE(diag.out.find("healthy: the log shows the run completing"), std::string::npos) << diag.out;
  for (const std::string& sub :
       std::vector<std::string>{"explain", "site", "rules", "search", "kb list", "kb check", "events"}) {
    SCOPED_TRACE(sub);
    ff::test::Outcome h = run(sub + " --help");
    EXPECT_EQ(h.rc, 0);
    EXPECT_EQ(h.out.find("healthy: the log shows"), std::string::npos) << "diagnose's exit codes are not this one's";
    EXPECT_NE(h.out.find("Exit codes:"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("Usage: firstfault " + sub.substr(0, sub.find(' '))), std::string::npos) << h.out;
  }
}

}  // namespace

// `firstfault serve` refuses what would expose logs or cannot work, before it listens.
TEST_F(E2E, ServeRefusesARemoteAddressWithoutConsentAndAPortInUse) {
  Outcome remote = run("serve --bind 0.0.0.0 --port 0");
  if (remote.err.find("no web server") != std::string::npos) GTEST_SKIP() << "a build without civetweb";
  EXPECT_EQ(remote.rc, 2);
  EXPECT_NE(remote.err.find("--allow-remote"), std::string::npos) << remote.err;
  EXPECT_NE(remote.err.find("private"), std::string::npos) << remote.err;
  EXPECT_EQ(remote.out, "");  // never listened, so no URL
  // A port already taken: said, with the way out.
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len), 0);
  Outcome taken = run("serve --port " + std::to_string(ntohs(a.sin_port)));
  ::close(s);
  EXPECT_EQ(taken.rc, 2);
  EXPECT_NE(taken.err.find("cannot listen"), std::string::npos) << taken.err;
  EXPECT_NE(taken.err.find("--port 0"), std::string::npos) << taken.err;
}
