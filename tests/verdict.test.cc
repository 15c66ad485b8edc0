// Verdicts with evidence (issue "A verdict you can trust"): the binary on real runs
// (tests/data, written by real PyTorch programs), cut, truncated and pasted the ways users
// hand them over. Each test names the rule (analyze/rules.h) it guards.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
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
  static std::string first_rule(const json& j) {
    return j["reasons"].empty() ? "" : j["reasons"][0]["rule"].get<std::string>();
  }
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
  ASSERT_EQ(std::system(("gzip -c " + quote(data_path("09_healthy__tee.log")) + " > " + quote(gz.string())).c_str()),
            0);
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
// the end, is not the job's failure; twice, a second apart and followed by the rest of the
// run, is still a note (issue 32, item 3: degraded is for errors that keep coming).
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
  j = diagnose(quote((dir_ / "twice.log").string()), 0);
  EXPECT_EQ(j["verdict"], "healthy");
  EXPECT_EQ(j["recovered"].size(), 2u);
}

// A false-alarm suite (issue 32, item 3): logs with no failure are healthy or incomplete,
// never failed or degraded. The public excerpts labelled healthy (read in place), a real
// healthy run, and a generated 64-rank DeepSpeed run cut at step 3,000 of 100,000 with
// three S3 read timeouts retried early, DeepSpeed's "untested optimizer, proceed with
// caution" note and loss-scale overflows (tests/gen/healthy_noisy.py).
TEST_F(Verdict, LogsWithNoFailureAreNeverFailedOrDegraded) {
  std::vector<std::string> logs = {data_path("09_healthy__tee.log")};
  const fs::path corpus = fs::path(FF_SHARED_DIR) / "corpus";
  if (fs::exists(corpus)) {
    for (const auto& folder : fs::directory_iterator(corpus)) {
      if (!fs::exists(folder.path() / "labels.jsonl")) continue;
      std::istringstream in(slurp(folder.path() / "labels.jsonl"));
      for (std::string line; std::getline(in, line);) {
        json l = json::parse(line, nullptr, false);
        if (!l.is_discarded() && l.value("category", "") == "healthy")
          logs.push_back((folder.path() / "cases" / (l["id"].get<std::string>() + ".log")).string());
      }
    }
  }
  const std::string gen = std::string(FF_SOURCE_DIR) + "/tests/gen/healthy_noisy.py";
  const std::string noisy = (dir_ / "noisy.log").string();
  ASSERT_EQ(std::system(("python3 " + quote(gen) + " > " + quote(noisy)).c_str()), 0);
  logs.push_back(noisy);
  EXPECT_GE(logs.size(), 2u);
  for (const auto& log : logs) {
    Outcome r = run("diagnose --format json " + quote(log));
    json j = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << log << ": " << r.err;
    const std::string v = j["verdict"];
    EXPECT_TRUE(v == "healthy" || v == "incomplete") << log << ": " << v << " " << j["reasons"].dump().substr(0, 400);
    EXPECT_EQ(r.rc, v == "healthy" ? 0 : 3) << log;
  }
}

// verdict.degraded-recovered: errors recovered from that keep coming to the end of the run
// (retries spread over all its steps) are degraded, with an exit code of their own (5).
TEST_F(Verdict, RecoveriesThatKeepComingAreDegradedWithExitCodeFive) {
  const std::string gen = std::string(FF_SOURCE_DIR) + "/tests/gen/healthy_noisy.py";
  const std::string log = (dir_ / "retries.log").string();
  ASSERT_EQ(
      std::system(
          ("python3 " + quote(gen) + " --ranks 8 --steps 1000 --retries 8 --retry-until 990 > " + quote(log)).c_str()),
      0);
  json j = diagnose(quote(log), 5);
  EXPECT_EQ(j["verdict"], "degraded");
  EXPECT_EQ(j["exit_code"], 5);
  EXPECT_GE(j["recovered"].size(), 2u);
}

TEST_F(Verdict, ExitCodesAreInTheHelp) {
  Outcome r = run("diagnose --help");
  EXPECT_NE(r.out.find("3  incomplete"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4  unknown"), std::string::npos);
  EXPECT_NE(r.out.find("5  degraded"), std::string::npos);
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

// Issue 30, mechanism 4: numbers in other frameworks' words become the numerical
// findings they are (series.ends-non-finite, series.loss-scale-terminal).
std::string corpus_case(const std::string& folder, const std::string& id) {
  return std::string(FF_SHARED_DIR) + "/corpus/" + folder + "/cases/" + id + ".log";
}

TEST_F(Verdict, NumbersInOtherFrameworksWordsAreNumericalFindings) {
  // The Hugging Face Trainer's dict lines ending in 'grad_norm': nan (a public excerpt,
  // read in place): numerical, decided by the first line of the non-finite tail.
  const std::string hf = corpus_case("github-issues-3", "066");
  if (!fs::exists(hf)) GTEST_SKIP() << "no corpus at " << hf;
  json j = diagnose(quote(hf), 1);
  EXPECT_EQ(j["verdict"], "failed");
  EXPECT_EQ(j["primary"]["id"], "series.non-finite");
  EXPECT_EQ(j["primary"]["category"], "numerical");
  EXPECT_NE(j["primary"]["evidence"][0]["text"].get<std::string>().find("'grad_norm': nan"), std::string::npos)
      << j["primary"]["evidence"];

  // apex amp's overflow message (the format string of apex/amp/handle.py, filled in as
  // apex does: no apex on this machine), halving from 65536 to its floor and below.
  std::string apex;
  for (double scale = 32768; scale >= 0.25; scale /= 2) {
    char buf[128];  // Python's str() of the float: "32768.0", "0.5", "0.25"
    std::snprintf(buf, sizeof buf, scale >= 1 ? "%.1f" : "%g", scale);
    apex += std::string("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to ") + buf + "\n";
  }
  write_file(dir_ / "apex.log", apex);
  j = diagnose(quote((dir_ / "apex.log").string()), 1);
  EXPECT_EQ(j["primary"]["id"], "series.loss-scale-terminal") << j.dump(1).substr(0, 2000);
  EXPECT_EQ(j["primary"]["category"], "numerical");

  // A few overflows at warm-up, then steps again: transient, not a failure.
  write_file(dir_ / "apex-warmup.log",
             "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 32768.0\n"
             "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0\n"
             "{'loss': 2.31, 'grad_norm': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
             "{'loss': 2.12, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.2}\n");
  j = diagnose(quote((dir_ / "apex-warmup.log").string()), 3);
  EXPECT_TRUE(j["primary"].is_null()) << j["primary"];

  // Megatron's training_log (the layout of a public excerpt, github-issues-2/d2-028) with
  // every iteration of the last intervals counted as skipped.
  std::string mega;
  for (int it = 10; it <= 40; it += 10) {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  " iteration %8d/  250000 | consumed samples: %12d | elapsed time per iteration (ms): 4247.9 | "
                  "learning rate: 2.999E-04 | global batch size:     8 | lm loss: 2.345678E+00 | loss scale: 1.0 | "
                  "number of skipped iterations: %3d | number of nan iterations: %3d |\n",
                  it, it * 8, it <= 10 ? 0 : 10, 0);
    mega += buf;
  }
  write_file(dir_ / "megatron.log", mega);
  j = diagnose(quote((dir_ / "megatron.log").string()), 1);
  EXPECT_EQ(j["primary"]["id"], "series.skipped-iterations") << j.dump(1).substr(0, 2000);
  EXPECT_EQ(j["primary"]["category"], "numerical");
}

// Issue 30, mechanism 5: an excerpt gets an answer. A traceback with nothing an entry
// names (github-issues-3/050 from its traceback on, read in place) is a job's log, not
// `unknown`; a known warning alone is "no failure in this excerpt", the warning named.
TEST_F(Verdict, ExcerptsWithLogLinesOrKnownWarningsGetAnAnswer) {
  const std::string tb = corpus_case("github-issues-3", "050");
  if (!fs::exists(tb)) GTEST_SKIP() << "no corpus at " << tb;
  std::string text = slurp(tb);
  write_file(dir_ / "tb.log", text.substr(text.find("Traceback (most recent call last):")));
  json j = diagnose(quote((dir_ / "tb.log").string()), 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(first_rule(j), "verdict.incomplete-log-lines");

  // PyTorch 2.4+'s exit warning (the KB entry's example, as ProcessGroupNCCL prints it).
  write_file(dir_ / "warn.log",
             "[rank0]:[W1104 15:22:31.713592185 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT "
             "been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
             "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare "
             "cases this process can exit before this point and block the progress of another member of the process "
             "group. This constraint has always been present,  but this warning has only been added since PyTorch 2.4 "
             "(function operator())\n");
  j = diagnose(quote((dir_ / "warn.log").string()), 3);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(first_rule(j), "verdict.incomplete-warnings");
  const std::string why = j["reasons"][0]["text"];
  EXPECT_NE(why.find("no failure in this excerpt"), std::string::npos) << why;
  EXPECT_NE(why.find("distributed.nccl.pg-not-destroyed-warning"), std::string::npos) << why;

  // Plain text is still `unknown`.
  write_file(dir_ / "hello.log", "hello\n");
  j = diagnose(quote((dir_ / "hello.log").string()), 4);
  EXPECT_EQ(j["verdict"], "unknown");
}

}  // namespace
