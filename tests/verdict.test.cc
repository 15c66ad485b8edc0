// Verdicts with evidence (issue "A verdict you can trust"): the binary on real runs
// (tests/data, written by real PyTorch programs), cut, truncated and pasted the ways users
// hand them over. Each test names the rule (analyze/rules.h) it guards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using ff::test::Outcome;
using ff::test::quote;
using ff::test::slurp;
using ff::test::write_file;

std::string data_path(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/" + name; }

class Verdict : public ff::test::TempDirTest {
 protected:
  json diagnose(const std::string& args, int expect_rc, const std::string& stdin_file = "") {
    Outcome r = run("diagnose --format json " + args, stdin_file);
    EXPECT_EQ(r.rc, expect_rc) << args << "\n" << r.err << r.out.substr(0, 2000);
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out.substr(0, 300);
    return j;
  }
  // The real log up to (not including) the first line that contains `marker`.
  std::string cut_before(const std::string& name, const std::string& marker, const std::string& out) {
    std::string text = slurp(data_path(name));
    size_t at = text.find(marker);
    EXPECT_NE(at, std::string::npos) << marker;
    at = text.rfind('\n', at);
    write_file(dir_ / out, text.substr(0, at == std::string::npos ? 0 : at + 1));
    return quote((dir_ / out).string());
  }
  // The real log without the lines that contain `marker`.
  std::string without(const std::string& name, const std::string& marker, const std::string& out) {
    std::string text = slurp(data_path(name)), kept;
    size_t pos = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      size_t end = nl == std::string::npos ? text.size() : nl + 1;
      std::string_view line(text.data() + pos, end - pos);
      if (line.find(marker) == std::string_view::npos) kept.append(line);
      pos = end;
    }
    write_file(dir_ / out, kept);
    return quote((dir_ / out).string());
  }
  static std::string first_rule(const json& j) { return j["reasons"].empty() ? "" : j["reasons"][0]["rule"].get<std::string>(); }
};

// verdict.healthy-completion: the run's own completion lines.
TEST_F(Verdict, ACompletedRunIsHealthyByItsCompletionLines) {
  json j = diagnose(quote(data_path("09_healthy__tee.log")), 0);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(first_rule(j), "verdict.healthy-completion");
  EXPECT_NE(j["reasons"][0]["evidence"].get<std::string>().find("training complete"), std::string::npos);
  EXPECT_TRUE(j["progress"]["completed"].get<bool>());
  EXPECT_EQ(j["exit_code"], 0);
}

// verdict.healthy-final-step: without completion lines, the final step of the stated total.
TEST_F(Verdict, WithoutCompletionLinesTheFinalStepOfTheTotalIsHealthy) {
  json j = diagnose(without("09_healthy__tee.log", "training complete", "no-complete.log"), 0);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(first_rule(j), "verdict.healthy-final-step");
  EXPECT_EQ(j["progress"]["total"], 60);
  EXPECT_NE(j["reasons"][0]["text"].get<std::string>().find("60/60 on all 4 ranks"), std::string::npos);
}

// verdict.incomplete-short: a run cut at step 10 of 60, before its failure.
TEST_F(Verdict, ARunCutBeforeItsFailureIsIncompleteWithWhereItStopped) {
  json j = diagnose(cut_before("01_rank_exception__tee.log", "step 10/60", "cut.log"), 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_TRUE(j["primary"].is_null());
  EXPECT_EQ(first_rule(j), "verdict.incomplete-short");
  std::string why = j["reasons"][0]["text"];
  EXPECT_NE(why.find("/60"), std::string::npos) << why;
  EXPECT_NE(why.find("4 ranks"), std::string::npos) << why;
  EXPECT_NE(why.find("2026-11-30 10:20:43"), std::string::npos) << why;
}

// verdict.incomplete-input: --max-bytes stops the read of a healthy run.
TEST_F(Verdict, AReadLimitMakesAHealthyRunIncomplete) {
  json j = diagnose("--max-bytes 10K " + quote(data_path("09_healthy__tee.log")), 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(first_rule(j), "verdict.incomplete-input");
  EXPECT_NE(j["reasons"][0]["text"].get<std::string>().find("limit"), std::string::npos);
}

// verdict.incomplete-input: a gzip cut off after 2 kB.
TEST_F(Verdict, ATruncatedGzipOfAHealthyRunIsIncomplete) {
  fs::path gz = dir_ / "full.gz";
  ASSERT_EQ(std::system(("gzip -c " + quote(data_path("09_healthy__tee.log")) + " > " + quote(gz.string())).c_str()), 0);
  write_file(dir_ / "cut.gz", slurp(gz).substr(0, 2048));
  json j = diagnose(quote((dir_ / "cut.gz").string()), 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(first_rule(j), "verdict.incomplete-input");
}

// verdict.unknown-empty: empty stdin, and a file with nothing that reads as a job log.
TEST_F(Verdict, EmptyStdinAndAHelloFileAreUnknown) {
  write_file(dir_ / "empty", "");
  json j = diagnose("-", 4, (dir_ / "empty").string());
  EXPECT_EQ(j["verdict"], "unknown");
  EXPECT_EQ(first_rule(j), "verdict.unknown-empty");
  write_file(dir_ / "hello.log", "hello\n");
  j = diagnose(quote((dir_ / "hello.log").string()), 4);
  EXPECT_EQ(j["verdict"], "unknown");
}

// A single pasted exception line is a failure, named by its type.
TEST_F(Verdict, ASinglePastedExceptionLineIsAFailure) {
  write_file(dir_ / "paste.log", "ValueError: Expected input batch_size (32) to match target batch_size (16).\n");
  json j = diagnose(quote((dir_ / "paste.log").string()), 1);
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(j["primary"]["id"], "unrecognized.ValueError");
  EXPECT_EQ(j["primary"]["category"], "model-code");
  EXPECT_EQ(first_rule(j), "diagnosis.primary");
}

// order.recovered: a connection error on rank 2 at step 5, after which rank 2 trains to
// the end, is not the job's failure; twice is degraded (verdict.degraded-recovered).
TEST_F(Verdict, AnErrorFollowedByProgressOnTheSameRankIsRecovered) {
  std::string text = slurp(data_path("09_healthy__tee.log"));
  const std::string err =
      "[default2]:2026-11-30 10:25:28,200 ERROR [rank2] data: ConnectionResetError: [Errno 104] Connection reset by peer\n";
  size_t at = text.find("[default2]:2026-11-30 10:25:28,2");
  ASSERT_NE(at, std::string::npos);
  write_file(dir_ / "once.log", text.substr(0, at) + err + text.substr(at));
  json j = diagnose(quote((dir_ / "once.log").string()), 0);
  EXPECT_EQ(j["verdict"], "healthy");
  ASSERT_EQ(j["recovered"].size(), 1u);
  EXPECT_EQ(j["recovered"][0]["rank"], 2);
  EXPECT_GE(j["recovered"][0]["steps_after"].get<double>(), 2);
  size_t later = text.find("[default2]:2026-11-30 10:25:29,1");
  ASSERT_NE(later, std::string::npos);
  ASSERT_GT(later, at);
  const std::string err2 =
      "[default2]:2026-11-30 10:25:29,100 ERROR [rank2] data: ConnectionResetError: [Errno 104] Connection reset by peer\n";
  write_file(dir_ / "twice.log", text.substr(0, at) + err + text.substr(at, later - at) + err2 + text.substr(later));
  j = diagnose(quote((dir_ / "twice.log").string()), 1);
  EXPECT_EQ(j["verdict"], "degraded");
  EXPECT_EQ(j["recovered"].size(), 2u);
}

TEST_F(Verdict, ExitCodesAreInTheHelp) {
  Outcome r = run("diagnose --help");
  EXPECT_NE(r.out.find("3  incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4  unknown"), std::string::npos);
}

// verify: a rerun cut off before the original's failing step is inconclusive, never fixed.
TEST_F(Verdict, VerifyOnATruncatedRerunIsInconclusive) {
  std::string before = quote(data_path("01_rank_exception__tee.log"));
  std::string cut = cut_before("01_rank_exception__tee.log", "step 10/60", "rerun.log");
  Outcome r = run("verify --format json --before " + before + " --after " + cut);
  EXPECT_EQ(r.rc, 3) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["outcome"], "inconclusive");
  EXPECT_NE(j["detail"].get<std::string>().find("the original failed at step"), std::string::npos) << j["detail"];
  write_file(dir_ / "hello.log", "hello\n");
  r = run("verify --before " + before + " --after " + quote((dir_ / "hello.log").string()));
  EXPECT_EQ(r.rc, 3) << r.out;
  EXPECT_EQ(r.out.rfind("INCONCLUSIVE", 0), 0u) << r.out;
  r = run("verify --before " + before + " --after " + quote(data_path("09_healthy__tee.log")));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.rfind("FIXED", 0), 0u) << r.out;
}

// diff: a control that failed too is said first, and the exit code is not 0 or 1.
TEST_F(Verdict, DiffAgainstAFailedControlSaysSo) {
  Outcome r = run("diff " + quote(data_path("01_rank_exception__tee.log")) + " --control " +
                  quote(data_path("05_signal_kill__tee.log")));
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out.rfind("WARNING: the control run is not healthy (failed", 0), 0u) << r.out.substr(0, 300);
  r = run("diff --format json " + quote(data_path("01_rank_exception__tee.log")) + " --control " +
          quote(data_path("09_healthy__tee.log")));
  EXPECT_EQ(r.rc, 1);
  json j = json::parse(r.out);
  EXPECT_EQ(j["control_verdict"], "healthy");
  // The failure's own decisive line is the first new line.
  EXPECT_EQ(j["new_templates"][0]["first"], j["diagnosis"]["primary"]["evidence"][0]["text"]);
}

}  // namespace
