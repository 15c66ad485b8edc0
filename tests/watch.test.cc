// Issue 20: the live commands on real logs (tests/data: real PyTorch runs of the shared
// corpus). The live scan against scan_job on the same bytes fed in random pieces; stalls
// on a clock the test sets; then the binary: watch replaying a log into a file that grows,
// is rotated and truncated (every line counted once, the same first failure as diagnose),
// stalls on per-rank files, --on-finding, run (output byte for byte, the exit status), a
// real Prometheus server scraping --metrics, and the history's recurrence.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "pipeline/pipeline.h"
#include "harness.h"
#include "scan/scan.h"
#include "watch/watch.h"

namespace fs = std::filesystem;
using nlohmann::json;
using ff::test::quote;
using ff::test::slurp;

namespace {

std::string data_path(const std::string& name) { return std::string(FF_SOURCE_DIR) + "/tests/data/" + name; }

const ff::app::Loaded& loaded() {
  static ff::app::Loaded* l = [] {
    ff::app::Options opt;
    opt.no_cache = true;
    auto r = ff::app::load_everything(opt, true, ff::app::KbFields::kDiagnosis);
    EXPECT_TRUE(r.ok());
    return new ff::app::Loaded(std::move(r).value());
  }();
  return *l;
}

std::string event_key(const ff::record::Event& e) {
  return std::to_string(e.source) + ":" + std::to_string(e.line) + " " + ff::record::event_kind_name(e.kind) + " " +
         e.entry_id + " r" + std::to_string(e.rank) + " tb" + std::to_string(e.traceback_first) + "-" +
         std::to_string(e.traceback_last) + " " + e.text;
}

ff::analyze::Diagnosis diagnose(const std::vector<ff::record::Event>& events, const ff::scan::JobStats& job) {
  ff::app::Options opt;
  ff::app::DiagnosedJob dj;
  EXPECT_TRUE(ff::app::diagnose_events(loaded(), opt, events, job, {"x"}, dj));
  return dj.d;
}

// The lines of a log, one string each with its '\n'.
std::vector<std::string> lines_with_newline(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    nl = nl == std::string::npos ? text.size() : nl + 1;
    out.push_back(text.substr(at, nl - at));
    at = nl;
  }
  return out;
}

// Splits a real interleaved log ("... [rankN] ...") into one text per rank.
std::map<int, std::vector<std::string>> by_rank(const std::string& text) {
  std::map<int, std::vector<std::string>> out;
  for (const auto& l : lines_with_newline(text)) {
    const size_t p = l.find("[rank");
    if (p == std::string::npos) continue;
    out[std::atoi(l.c_str() + p + 5)].push_back(l);
  }
  return out;
}

// The live scan, fed a log in random pieces (a line split anywhere, several sources at
// once), gives the events and the diagnosis scan_job gives for the whole files.
TEST(LiveScan, SameEventsAndDiagnosisAsScanJobForAnySplit) {
  const std::vector<std::vector<std::string>> jobs = {{"01_rank_exception.log"},
                                                      {"01_rank_exception__rankprefix.log"},
                                                      {"03_loss_scale_terminal__tee.log"},
                                                      {"05_signal_kill__tee.log"},
                                                      {"06_hang.log"},
                                                      {"09_healthy__tee.log"},
                                                      {"per-rank files"}};
  const fs::path tmp = fs::temp_directory_path() / ("ff-livescan-" + std::to_string(::getpid()));
  for (const auto& names : jobs) {
    std::vector<std::string> paths, texts;
    if (names[0] == "per-rank files") {
      // One job as torchrun --log_dir writes it: a file per rank, growing side by side.
      for (const auto& [rank, lines] : by_rank(slurp(data_path("01_rank_exception__tee.log")))) {
        std::string text;
        for (const auto& l : lines) text += l;
        paths.push_back((tmp / ("rank" + std::to_string(rank) + ".log")).string());
        ff::test::write_file(paths.back(), text);
        texts.push_back(text);
      }
    } else {
      for (const auto& n : names) {
        paths.push_back(data_path(n));
        texts.push_back(slurp(paths.back()));
      }
    }
    ff::scan::ScanOptions so;
    so.threads = 1;
    ff::scan::CollectSink whole;
    ff::scan::JobStats stats = ff::scan::scan_job(*loaded().engine, paths, whole, so);
    const ff::analyze::Diagnosis want = diagnose(whole.events, stats);
    for (unsigned seed : {1u, 2u, 3u}) {
      std::mt19937 rng(seed);
      ff::scan::LiveScan live(*loaded().engine, so);
      std::vector<uint32_t> ids;
      for (const auto& p : paths) ids.push_back(live.open(p));
      std::vector<size_t> at(paths.size(), 0);
      std::vector<ff::record::Event> events;
      for (bool more = true; more;) {
        more = false;
        for (size_t i = 0; i < paths.size(); ++i) {
          if (at[i] >= texts[i].size()) continue;
          const size_t n = std::uniform_int_distribution<size_t>(1, 3000)(rng);
          live.feed(ids[i], std::string_view(texts[i]).substr(at[i], n));
          at[i] += n;
          more = true;
          live.take_events(events);
        }
      }
      for (uint32_t id : ids) live.close(id);
      live.take_events(events);
      ASSERT_EQ(events.size(), whole.events.size()) << names[0] << " seed " << seed;
      for (size_t k = 0; k < events.size(); ++k)
        ASSERT_EQ(event_key(events[k]), event_key(whole.events[k])) << names[0] << " seed " << seed << " event " << k;
      EXPECT_EQ(live.lines(), stats.lines);
      EXPECT_EQ(live.bytes(), stats.bytes);
      const ff::analyze::Diagnosis got = diagnose(events, live.job());
      EXPECT_EQ(got.verdict, want.verdict) << names[0];
      ASSERT_EQ(got.primary.has_value(), want.primary.has_value()) << names[0];
      if (want.primary) {
        EXPECT_EQ(got.primary->id, want.primary->id) << names[0];
        EXPECT_EQ(got.primary->rank, want.primary->rank) << names[0];
        EXPECT_EQ(got.primary->evidence[0].line, want.primary->evidence[0].line) << names[0];
      }
      EXPECT_EQ(got.progress.last_step, want.progress.last_step) << names[0];
    }
  }
  fs::remove_all(tmp);
}

bool is_progress(const std::string& line) {
  return line.find(" step ") != std::string::npos && line.find("| loss") != std::string::npos;
}

// A stall on a clock the test sets: learned from the step intervals (10 x 100 ms, no
// floor), it fires once, with the last step and the rank that stopped first.
TEST(Session, StallLearnedFromTheRunsRhythmNamesTheRankThatStoppedFirst) {
  ff::watch::SessionOptions so;
  so.stall_floor_ms = 0;
  ff::watch::Session s(*loaded().engine, diagnose, so);
  auto ranks = by_rank(slurp(data_path("09_healthy__tee.log")));
  ASSERT_GE(ranks.size(), 4u);
  std::map<int, uint32_t> src;
  std::map<int, size_t> at;
  for (auto& [r, lines] : ranks) src[r] = s.open("rank" + std::to_string(r) + ".log");
  // Steps 100 ms apart on every rank; rank 2 writes nothing after its 20th step.
  int64_t now = 0;
  std::map<int, int> steps;
  std::vector<ff::watch::Alert> alerts;
  for (int round = 0; round < 24; ++round) {
    now += 100;
    for (auto& [r, lines] : ranks) {
      if (r == 2 && steps[r] >= 20) continue;
      // Everything up to and including the rank's next progress line.
      while (at[r] < lines.size()) {
        const std::string& l = lines[at[r]++];
        s.feed(src[r], l, now);
        if (is_progress(l)) {
          ++steps[r];
          break;
        }
      }
    }
    for (auto& a : s.tick(now, 0)) alerts.push_back(a);
  }
  for (const auto& a : alerts) EXPECT_NE(a.kind, "stall") << "no stall while steps come";
  EXPECT_EQ(s.stall_threshold_ms(), 1000);
  for (auto& a : s.tick(now + 900, 0)) EXPECT_NE(a.kind, "stall");
  auto late = s.tick(now + 1100, 0);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].kind, "stall");
  EXPECT_EQ(late[0].category, "hang");
  EXPECT_EQ(late[0].step, std::optional<double>(24));
  EXPECT_EQ(late[0].ranks, std::vector<int>{2});
  EXPECT_TRUE(s.tick(now + 5000, 0).empty()) << "one incident, said once";
}

// Issue 33: one incident is said once. A real run whose fp16 loss scale falls to its floor
// and then raises FloatingPointError: the failure is said, and the loss-scale trend (the
// same incident, seen in the numbers) is not said again after it as a warning.
TEST(Session, Issue33ATrendOfTheFailuresOwnKindIsNotSaidAgainAfterIt) {
  ff::watch::Session s(*loaded().engine, diagnose, {});
  const uint32_t src = s.open("train.log");
  s.feed(src, slurp(data_path("03_loss_scale_terminal__tee.log")), 0);
  std::vector<ff::watch::Alert> alerts = s.tick(10000, 0);
  for (auto& a : s.finish(0)) alerts.push_back(a);
  ASSERT_TRUE(s.diagnosis().primary);
  ASSERT_EQ(s.diagnosis().primary->category, "numerical");
  bool trend_seen = false;
  for (const auto& v : s.diagnosis().verdicts) trend_seen = trend_seen || v.id == "loss-scale";
  ASSERT_TRUE(trend_seen) << "the log's loss scale falls to its floor";
  int failures = 0, numerical_trends = 0;
  for (const auto& a : alerts) {
    if (a.kind == "failure") ++failures;
    if (a.kind == "trend" && a.category == "numerical" && a.severity >= ff::watch::Severity::kWarning)
      ++numerical_trends;
  }
  EXPECT_EQ(failures, 1);
  EXPECT_EQ(numerical_trends, 0) << "the loss scale's fall is the failure's own incident";
}

// ---------------------------------------------------------------------------------------
// The binary.

class Watch : public ff::test::TempDirTest {
 protected:
  // Starts `firstfault ARGS` in the background (stdout and stderr to files in dir_).
  pid_t start(const std::string& args, const std::string& env = "") {
    const std::string cmd = "FIRSTFAULT_CACHE_DIR=" + quote(ff::test::shared_cache_dir().string()) +
                            " FIRSTFAULT_NO_HISTORY=1 NO_COLOR=1 " + env + " exec " + FF_BINARY + " " + args + " >" +
                            quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string()) +
                            " </dev/null";
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }
  // Its exit status, waiting at most `seconds` (then it is killed: -1).
  int finish(pid_t pid, double seconds = 30) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  std::vector<json> jsonl(const std::string& text) {
    std::vector<json> out;
    for (const auto& l : ff::test::lines_of(text)) {
      if (!l.empty()) out.push_back(json::parse(l));
    }
    return out;
  }
  static void append(const fs::path& p, const std::string& s) {
    const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, s.data(), s.size()), static_cast<ssize_t>(s.size()));
    ::close(fd);
  }
  static void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  ff::test::Outcome run_firstfault_env(const std::string& env, const std::string& args) {
    return ff::test::run_firstfault(args, dir_, "", env);
  }
};

// A real log written at speed in random pieces (lines split anywhere) into a file that is
// rotated by rename, then truncated in place (copytruncate): watch counts every line once
// and names the same first failure as diagnose on the whole log.
TEST_F(Watch, ReplayIntoAGrowingRotatedTruncatedFileCountsEveryLineOnce) {
  for (const std::string name : {"01_rank_exception__rankprefix.log", "05_signal_kill__tee.log"}) {
    SCOPED_TRACE(name);
    const std::string text = slurp(data_path(name));
    ff::test::Outcome want_run = run("diagnose --no-history -f json " + quote(data_path(name)));
    const json want = json::parse(want_run.out);
    const fs::path logs = dir_ / "logs", f = logs / "train.log";
    fs::remove_all(logs);
    fs::create_directories(logs);
    append(f, "");
    const pid_t pid = start("watch -f jsonl --poll 10ms --idle-exit 1500ms " + quote(logs.string()));
    sleep_ms(300);
    std::mt19937 rng(7);
    const size_t third = text.size() / 3;
    size_t at = 0;
    bool rotated = false, truncated = false;
    while (at < text.size()) {
      size_t n = std::min(text.size() - at, std::uniform_int_distribution<size_t>(1, 2000)(rng));
      // The piece that crosses a third ends at a line's end: the file is cut there.
      if ((!rotated && at + n >= third) || (rotated && !truncated && at + n >= 2 * third)) {
        const size_t nl = text.find('\n', std::max(at, rotated ? 2 * third : third));
        if (nl != std::string::npos) n = nl + 1 - at;
      }
      append(f, text.substr(at, n));
      at += n;
      if (!rotated && at >= third && text[at - 1] == '\n') {
        fs::rename(f, logs / "train.log.1");  // logrotate's default: rename, new file
        append(f, "");
        rotated = true;
      } else if (rotated && !truncated && at >= 2 * third && text[at - 1] == '\n') {
        sleep_ms(300);  // copytruncate loses what was not read before the cut: let it read
        fs::copy_file(f, logs / "train.log.2");
        fs::resize_file(f, 0);
        truncated = true;
      }
      if (n % 7 == 0) sleep_ms(1);
    }
    ASSERT_TRUE(rotated && truncated);
    ASSERT_EQ(finish(pid), 1) << slurp(dir_ / "stderr");
    const auto out = jsonl(slurp(dir_ / "stdout"));
    ASSERT_FALSE(out.empty());
    const json& d = out.back();
    EXPECT_EQ(d["inputs"]["lines"], want["inputs"]["lines"]) << "every line once";
    EXPECT_EQ(d["inputs"]["bytes"], want["inputs"]["bytes"]);
    EXPECT_EQ(d["inputs"]["sources"].size(), 1u) << "the rotated copies are not read again";
    EXPECT_EQ(d["verdict"], want["verdict"]);
    EXPECT_EQ(d["primary"]["id"], want["primary"]["id"]);
    EXPECT_EQ(d["primary"]["rank"], want["primary"]["rank"]);
    EXPECT_EQ(d["primary"]["evidence"][0]["text"], want["primary"]["evidence"][0]["text"]);
    // The first failure was said as it happened, once.
    int failures = 0;
    for (const auto& a : out) {
      if (a.value("schema", "") == "firstfault.alert/1" && a["kind"] == "failure" && a["id"] == want["primary"]["id"])
        ++failures;
    }
    EXPECT_EQ(failures, 1);
    const std::string err = slurp(dir_ / "stderr");
    EXPECT_NE(err.find("rotated"), std::string::npos) << err;
    EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  }
}

// Per-rank files that stop growing: a stall (hang) with the last step and the rank that
// went silent first; --exit-on failed stops the watch there.
TEST_F(Watch, StallOnPerRankFilesNamesTheSilentRank) {
  auto ranks = by_rank(slurp(data_path("09_healthy__tee.log")));
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  const pid_t pid = start("watch -f jsonl --poll 20ms --stall-after 1500ms --exit-on failed " + quote(logs.string()));
  std::map<int, size_t> at;
  std::map<int, int> steps;
  for (int round = 0; round < 12; ++round) {
    for (auto& [r, lines] : ranks) {
      if (r == 1 && steps[r] >= 8) continue;
      std::string chunk;
      while (at[r] < lines.size()) {
        chunk += lines[at[r]++];
        if (is_progress(chunk.substr(chunk.rfind('\n', chunk.size() - 2) + 1))) {
          ++steps[r];
          break;
        }
      }
      append(logs / ("rank" + std::to_string(r) + ".log"), chunk);
    }
    sleep_ms(50);
  }
  ASSERT_EQ(finish(pid, 20), 1) << slurp(dir_ / "stderr");
  const auto out = jsonl(slurp(dir_ / "stdout"));
  const json* stall = nullptr;
  for (const auto& a : out) {
    if (a.value("kind", "") == "stall") stall = &a;
  }
  ASSERT_NE(stall, nullptr) << slurp(dir_ / "stdout");
  EXPECT_EQ((*stall)["category"], "hang");
  EXPECT_EQ((*stall)["step"], 12);
  EXPECT_EQ((*stall)["ranks"], json::array({1}));
  EXPECT_EQ((*stall)["rank"], 1);
  EXPECT_GE((*stall)["silent_seconds"].get<double>(), 1.5);
}

// Issue 33: a stall the watch saw stays in its final verdict: the log's lines only stop,
// so `diagnose` of the same files would say incomplete, but the watch timed the silence
// and said "failed stall" as it happened; its last word must not contradict that.
TEST_F(Watch, Issue33ALiveStallStaysInTheFinalVerdict) {
  auto ranks = by_rank(slurp(data_path("09_healthy__tee.log")));
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  const pid_t pid =
      start("watch -f jsonl --poll 20ms --stall-after 1500ms --idle-exit 2500ms " + quote(logs.string()));
  std::map<int, size_t> at;
  for (int round = 0; round < 10; ++round) {
    for (auto& [r, lines] : ranks) {
      std::string chunk;
      while (at[r] < lines.size()) {
        chunk += lines[at[r]++];
        if (is_progress(chunk.substr(chunk.rfind('\n', chunk.size() - 2) + 1))) break;
      }
      append(logs / ("rank" + std::to_string(r) + ".log"), chunk);
    }
    sleep_ms(50);
  }
  ASSERT_EQ(finish(pid, 20), 1) << slurp(dir_ / "stderr");
  const auto out = jsonl(slurp(dir_ / "stdout"));
  ASSERT_FALSE(out.empty());
  bool stall_said = false;
  for (const auto& a : out) stall_said = stall_said || a.value("kind", "") == "stall";
  ASSERT_TRUE(stall_said) << slurp(dir_ / "stdout");
  const json& d = out.back();
  EXPECT_EQ(d["verdict"], "failed") << d.dump(1);
  ASSERT_FALSE(d["reasons"].empty());
  EXPECT_EQ(d["reasons"][0]["rule"], "watch.stall") << d["reasons"].dump(1);
  bool stall_verdict = false;
  for (const auto& v : d["series"]["verdicts"]) stall_verdict = stall_verdict || v["id"] == "stall";
  EXPECT_TRUE(stall_verdict) << d["series"].dump(1);
}

// Issue 33: --until-done stops once the logs say the job ended (here torchrun's failure
// table, in a real run's log), when the files have been quiet for 2 s after it, without
// --idle-exit; without --until-done the watch keeps following.
TEST_F(Watch, Issue33UntilDoneStopsWhenTheLauncherSaysTheJobEnded) {
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  fs::copy_file(data_path("01_rank_exception.log"), logs / "train.log");
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = start("watch --poll 20ms --until-done " + quote(logs.string()));
  ASSERT_EQ(finish(pid, 20), 1) << slurp(dir_ / "stderr");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(took, 2.0) << "quiet for 2 s after the end first";
  const std::string err = slurp(dir_ / "stderr");
  EXPECT_NE(err.find("the job ended (" + (logs / "train.log").string() + ":"), std::string::npos) << err;
  EXPECT_NE(slurp(dir_ / "stdout").find("FAILED"), std::string::npos);
  // Without it: still following after 3 s.
  const pid_t again = start("watch --poll 20ms " + quote(logs.string()));
  sleep_ms(3000);
  EXPECT_EQ(::waitpid(again, nullptr, WNOHANG), 0) << "watch without --until-done stopped by itself";
  ::kill(again, SIGINT);
  EXPECT_EQ(finish(again, 20), 1);
}

// --on-finding: the finding as JSON on stdin and FIRSTFAULT_* in the environment, once
// per incident (the log is read in one go, then watched again: nothing is said twice).
TEST_F(Watch, OnFindingRunsOncePerIncident) {
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  fs::copy_file(data_path("01_rank_exception.log"), logs / "train.log");
  const fs::path hook_out = dir_ / "hook.jsonl";
  const std::string hook = "{ cat; echo \"$FIRSTFAULT_ENTRY $FIRSTFAULT_SEVERITY $FIRSTFAULT_RANK\" >> " +
                           quote((dir_ / "env.txt").string()) + "; } >> " + quote(hook_out.string());
  const pid_t pid = start("watch --poll 20ms --idle-exit 1s --severity failed --on-finding " + quote(hook) + " " +
                          quote(logs.string()));
  sleep_ms(400);
  append(logs / "train.log", "more text after the failure\n");  // a new analysis: same incident
  ASSERT_EQ(finish(pid), 1) << slurp(dir_ / "stderr");
  const auto hooks = jsonl(slurp(hook_out));
  ASSERT_EQ(hooks.size(), 1u) << slurp(hook_out);
  EXPECT_EQ(hooks[0]["id"], "pytorch.model.shape-mismatch");
  EXPECT_EQ(hooks[0]["rank"], 2);
  EXPECT_EQ(slurp(dir_ / "env.txt"), "pytorch.model.shape-mismatch failed 2\n");
  // The text output said it too, escaped, with the fix.
  const std::string out = slurp(dir_ / "stdout");
  EXPECT_NE(out.find("failed failure pytorch.model.shape-mismatch rank 2"), std::string::npos) << out;
  EXPECT_NE(out.find("fix: "), std::string::npos) << out;
}

// run: stdout and stderr through unchanged and apart (bytes that are not UTF-8, a last
// line without a newline), the command's exit status, the diagnosis in the report.
TEST_F(Watch, RunPassesOutputThroughAndKeepsTheExitStatus) {
  const std::string log = data_path("01_rank_exception.log");
  const std::string py =
      "import sys\n"
      "sys.stdout.buffer.write(open(" +
      quote(log) +
      ".strip(\"'\"), 'rb').read())\n"
      "sys.stdout.flush()\n"
      "sys.stderr.buffer.write(b'warn \\xff\\x00 bytes\\nno newline')\n"
      "sys.exit(7)\n";
  ff::test::write_file(dir_ / "job.py", py);
  ff::test::Outcome r = run("run --no-history --report " + quote((dir_ / "report.txt").string()) + " -- python3 " +
                            quote((dir_ / "job.py").string()));
  EXPECT_EQ(r.rc, 7);
  EXPECT_EQ(r.out, slurp(log));
  static constexpr char kErr[] = "warn \xff\x00 bytes\nno newline";
  EXPECT_EQ(r.err, std::string(kErr, sizeof kErr - 1));
  const std::string rep = slurp(dir_ / "report.txt");
  EXPECT_NE(rep.find("exited with status 7"), std::string::npos) << rep;
  EXPECT_NE(rep.find("Tensor shape mismatch"), std::string::npos) << rep;
  EXPECT_NE(rep.find("rank 2"), std::string::npos) << rep;

  // Without --report the diagnosis follows the command's stderr; JSON on request.
  ff::test::Outcome j = run("run --no-history -f json -- python3 " + quote((dir_ / "job.py").string()));
  EXPECT_EQ(j.rc, 7);
  const size_t brace = j.err.find("\n{");
  ASSERT_NE(brace, std::string::npos) << j.err;
  const json d = json::parse(j.err.substr(brace + 1));
  EXPECT_EQ(d["primary"]["id"], "pytorch.model.shape-mismatch");
  EXPECT_EQ(d["command_exit_status"], 7);

  // A signal: 128 + its number, as a shell says it.
  ff::test::Outcome k =
      run("run --no-history --report " + quote((dir_ / "r2.txt").string()) + " -- sh -c 'kill -9 $$'");
  EXPECT_EQ(k.rc, 137);
  const std::string killed = slurp(dir_ / "r2.txt");
  EXPECT_NE(killed.find("killed by signal 9"), std::string::npos);
  // Issue 33: the signal is the run's evidence, not an empty input: SIGKILL's entry.
  EXPECT_EQ(killed.find("UNKNOWN"), std::string::npos) << killed;
  EXPECT_NE(killed.find("FAILED"), std::string::npos) << killed;
  ff::test::Outcome kj = run("run --no-history -f json -- sh -c 'kill -9 $$'");
  const size_t kb = kj.err.find("{");
  ASSERT_NE(kb, std::string::npos) << kj.err;
  const json kd = json::parse(kj.err.substr(kb));
  EXPECT_EQ(kd["verdict"], "failed");
  EXPECT_EQ(kd["primary"]["id"], "distributed.elastic.worker-sigkill");
  EXPECT_EQ(kd["primary"]["category"], "host-memory");
  // A command that closes its output and goes on: waited for (not spun on), its status kept.
  const auto t0 = std::chrono::steady_clock::now();
  ff::test::Outcome c = run("run --no-history --report " + quote((dir_ / "r4.txt").string()) +
                            " -- sh -c 'exec >&- 2>&-; sleep 1; exit 5'");
  EXPECT_EQ(c.rc, 5);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(900));
  // A command that cannot start: firstfault could not run it (2, as the help says), with
  // why, and no diagnosis of an empty run.
  ff::test::Outcome m = run("run --no-history --report " + quote((dir_ / "r3.txt").string()) + " -- /nonexistent/cmd");
  EXPECT_EQ(m.rc, 2);
  EXPECT_NE(m.err.find("cannot run /nonexistent/cmd: No such file or directory"), std::string::npos) << m.err;
  EXPECT_FALSE(fs::exists(dir_ / "r3.txt"));
}

// Issue 33: run keeps the command's output in a file (stdout and stderr line by line as they
// came) and the report names it: the decisive line's file:line is that file's line, and the
// verify command, pasted, reads it.
TEST_F(Watch, Issue33RunKeepsItsOutputInTheFileItsVerifyCommandNames) {
  const std::string log = data_path("01_rank_exception.log");
  // (A pause between the two streams: lines written to two pipes at the same instant have no
  // order to keep, and a loaded machine's poll may find both ready at once.)
  ff::test::write_file(dir_ / "job.sh", "echo 'starting on stderr' >&2\nsleep 0.3\ncat " + quote(log) + "\nexit 3\n");
  const fs::path kept = dir_ / "kept.log";
  ff::test::Outcome r =
      run("run --no-history -f json --log " + quote(kept.string()) + " -- sh " + quote((dir_ / "job.sh").string()));
  EXPECT_EQ(r.rc, 3);
  const size_t brace = r.err.find("{");
  ASSERT_NE(brace, std::string::npos) << r.err;
  const json d = json::parse(r.err.substr(brace));
  ASSERT_TRUE(fs::exists(kept));
  const std::string text = slurp(kept);
  EXPECT_EQ(text, "starting on stderr\n" + slurp(log)) << "both streams, whole lines";
  EXPECT_EQ(fs::status(kept).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  const json& ev = d["primary"]["evidence"][0];
  EXPECT_EQ(ev["source"], kept.string());
  const auto lines = ff::test::lines_of(text);
  const size_t at = ev["line"].get<size_t>();
  ASSERT_GE(at, 1u);
  ASSERT_LE(at, lines.size());
  EXPECT_EQ(lines[at - 1], ev["text"].get<std::string>()) << "file:line is the kept file's line";
  const std::string verify = d["primary"]["verify"];
  EXPECT_NE(verify.find("firstfault verify --before " + quote(kept.string()) + " --after"), std::string::npos)
      << verify;
  EXPECT_EQ(verify.find("'stdout'"), std::string::npos) << verify;
  // Pasted, with the kept file as the rerun too: it runs, and says the failure is still there.
  EXPECT_EQ(run("verify --before " + quote(kept.string()) + " --after " + quote(kept.string())).rc, 1);

  // Without --log: a file of its own under the state folder, 0700, named in the report.
  ff::test::Outcome def = run("run --no-history -- sh " + quote((dir_ / "job.sh").string()));
  EXPECT_EQ(def.rc, 3);
  const fs::path runs = dir_ / "state" / "firstfault" / "runs";
  ASSERT_TRUE(fs::is_directory(runs)) << def.err;
  EXPECT_EQ(fs::status(runs).permissions() & fs::perms::all, fs::perms::owner_all);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(runs)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(def.err.find(files[0].string()), std::string::npos) << def.err;
  // The report's time is the run's, not 0.000 s (issue 33).
  ff::test::Outcome slow =
      run("run --no-history --report " + quote((dir_ / "slow.txt").string()) + " -- sh -c 'sleep 1; exit 4'");
  EXPECT_EQ(slow.rc, 4);
  const std::string slow_report = slurp(dir_ / "slow.txt");
  const size_t read_in = slow_report.rfind(" read in ");
  ASSERT_NE(read_in, std::string::npos) << slow_report;
  EXPECT_GE(std::stod(slow_report.substr(read_in + 9)), 0.9) << slow_report;
  // A place that cannot be written: said, and the run goes on as before.
  ff::test::Outcome bad = run("run --no-history --log " + quote((dir_ / "no" / "such" / "dir.log").string()) +
                              " -- sh " + quote((dir_ / "job.sh").string()));
  EXPECT_EQ(bad.rc, 3);
  EXPECT_NE(bad.err.find("cannot keep the output in"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("Tensor shape mismatch"), std::string::npos) << bad.err;
}

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

// A real Prometheus (Debian's package) scrapes watch --metrics on loopback; PromQL over
// its HTTP API gives the log's last step, loss scale, the finding and the lines read.
TEST_F(Watch, PrometheusScrapesTheMetrics) {
  if (std::system("command -v prometheus >/dev/null 2>&1") != 0 || std::system("command -v curl >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "prometheus or curl not installed (tools/install-deps installs both)";
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  const std::string name = "03_loss_scale_terminal__tee.log";
  fs::copy_file(data_path(name), logs / "train.log");
  const json want = json::parse(run("diagnose --no-history -f json " + quote(data_path(name))).out);
  const int port = free_port(), prom_port = free_port();
  const pid_t watch =
      start("watch --poll 50ms --metrics 127.0.0.1:" + std::to_string(port) + " " + quote(logs.string()));
  ff::test::write_file(
      dir_ / "prometheus.yml",
      "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
      "rule_files:\n  - " +
          std::string(FF_SOURCE_DIR) +
          "/docs/alerting-rules.yml\n"
          "scrape_configs:\n  - job_name: firstfault\n    static_configs:\n      - targets: ['127.0.0.1:" +
          std::to_string(port) + "']\n");
  const std::string prom_cmd = "exec prometheus --config.file=" + quote((dir_ / "prometheus.yml").string()) +
                               " --storage.tsdb.path=" + quote((dir_ / "tsdb").string()) +
                               " --web.listen-address=127.0.0.1:" + std::to_string(prom_port) + " >" +
                               quote((dir_ / "prom.log").string()) + " 2>&1";
  const pid_t prom = ::fork();
  if (prom == 0) {
    ::execl("/bin/sh", "sh", "-c", prom_cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  auto query = [&](const std::string& promql) -> json {
    const std::string cmd = "curl -s -G --max-time 5 http://127.0.0.1:" + std::to_string(prom_port) +
                            "/api/v1/query --data-urlencode " + quote("query=" + promql) + " > " +
                            quote((dir_ / "q.json").string());
    if (std::system(cmd.c_str()) != 0) return json();
    json j = json::parse(slurp(dir_ / "q.json"), nullptr, false);
    if (j.is_discarded() || j.value("status", "") != "success" || j["data"]["result"].empty()) return json();
    return j["data"]["result"];
  };
  json step;
  for (int i = 0; i < 150 && step.is_null(); ++i) {  // up to 30 s for the first scrapes
    sleep_ms(200);
    step = query("max(firstfault_last_step)");
  }
  ASSERT_FALSE(step.is_null()) << slurp(dir_ / "prom.log");
  EXPECT_EQ(std::stod(step[0]["value"][1].get<std::string>()), want["progress"]["last_step"].get<double>());
  const json lines = query("firstfault_lines_read_total");
  ASSERT_FALSE(lines.is_null());
  EXPECT_EQ(std::stoll(lines[0]["value"][1].get<std::string>()), want["inputs"]["lines"].get<long long>());
  const json failed = query("firstfault_verdict{verdict=\"failed\"}");
  ASSERT_FALSE(failed.is_null());
  EXPECT_EQ(failed[0]["value"][1], "1");
  const json finding = query("sum by (entry) (firstfault_findings_total{severity=\"failed\"})");
  ASSERT_FALSE(finding.is_null());
  EXPECT_EQ(finding[0]["metric"]["entry"], want["primary"]["id"]);
  const json scale = query("min(firstfault_loss_scale)");
  ASSERT_FALSE(scale.is_null());
  EXPECT_GT(std::stod(scale[0]["value"][1].get<std::string>()), 0);
  // The example alerting rules load, and the one for a failed job fires.
  json alert;
  for (int i = 0; i < 50 && alert.is_null(); ++i) {
    alert = query("ALERTS{alertname=\"TrainingJobFailed\",alertstate=\"firing\"}");
    if (alert.is_null()) sleep_ms(200);
  }
  EXPECT_FALSE(alert.is_null()) << "docs/alerting-rules.yml: TrainingJobFailed did not fire";
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    EXPECT_EQ(std::system(("promtool check rules " + quote(std::string(FF_SOURCE_DIR) + "/docs/alerting-rules.yml") +
                           " >/dev/null")
                              .c_str()),
              0);
  }
  ::kill(prom, SIGTERM);
  ::kill(watch, SIGINT);
  int st = 0;
  ::waitpid(prom, &st, 0);
  EXPECT_EQ(finish(watch), 1);
}

// The history: the same failure in three jobs (folders) is "3rd time this week", said
// by diagnose on stderr and listed by history; the same logs again count once.
TEST_F(Watch, HistorySaysWhenAFailureRecurs) {
  const std::string env = "XDG_STATE_HOME=" + quote((dir_ / "state").string()) + " FIRSTFAULT_NO_HISTORY= ";
  auto diagnose_in = [&](const std::string& job) {
    fs::create_directories(dir_ / job);
    fs::copy_file(data_path("01_rank_exception.log"), dir_ / job / "train.log", fs::copy_options::overwrite_existing);
    return run_firstfault_env(env, "diagnose " + quote((dir_ / job).string()));
  };
  EXPECT_EQ(diagnose_in("job1").err, "");
  EXPECT_EQ(diagnose_in("job1").err, "") << "the same logs again are not a recurrence";
  ff::test::Outcome second = diagnose_in("job2");
  EXPECT_NE(second.err.find("2nd time this week"), std::string::npos) << second.err;
  ff::test::Outcome third = diagnose_in("job3");
  EXPECT_NE(third.err.find("3rd time this week (pytorch.model.shape-mismatch); node localhost 3 times"),
            std::string::npos)
      << third.err;
  ff::test::Outcome h = run_firstfault_env(env, "history -f json");
  ASSERT_EQ(h.rc, 0) << h.err;
  const json rows = json::parse(h.out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["entry"], "pytorch.model.shape-mismatch");
  EXPECT_EQ(rows[0]["recurrence"]["times_this_week"], 3);
  ff::test::Outcome off = run_firstfault_env(env, "diagnose --no-history " + quote((dir_ / "job1").string()));
  EXPECT_EQ(off.err, "");
  EXPECT_TRUE(fs::exists(dir_ / "state" / "firstfault" / "history.db"));
}

// Issue 31: `watch --metrics 0.0.0.0:P` listened on every interface without a word, where
// serve asks for --allow-remote. A non-loopback address is refused (exit 2) without it.
TEST_F(Watch, Issue31MetricsOffLoopbackNeedAllowRemote) {
  ff::test::write_file(dir_ / "train.log", "step 1 loss 1.0\n");
  for (const char* address : {"0.0.0.0:0", "[::]:0", "192.0.2.1:9464"}) {
    const pid_t pid =
        start("watch " + quote((dir_ / "train.log").string()) + " --metrics " + quote(std::string(address)));
    EXPECT_EQ(finish(pid, 10), 2) << address;
    const std::string err = ff::test::slurp(dir_ / "stderr");
    EXPECT_NE(err.find("--allow-remote"), std::string::npos) << address << ": " << err;
  }
}

// Issue 31: `run` keeps its command line in the history, and a token given on it
// (`--hf_token hf_...`) was kept as it is, in a 0644 database in a 0755 folder, and
// printed by `history`. It is redacted by --redact's rules, the folder 0700, the file 0600.
TEST_F(Watch, Issue31RunKeepsNoTokenOfItsCommandLineInAPrivateHistory) {
  const std::string env = "XDG_STATE_HOME=" + quote((dir_ / "state").string()) + " FIRSTFAULT_NO_HISTORY= ";
  const std::string token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567";
  const std::string cmd =
      "sh -c " + quote("cat " + quote(data_path("01_rank_exception.log")) + "; exit 1") + " sh --hf_token " + token;
  ff::test::Outcome r = run_firstfault_env(env, "run --report " + quote((dir_ / "report.txt").string()) + " -- " + cmd);
  EXPECT_EQ(r.rc, 1) << r.err;
  ff::test::Outcome h = run_firstfault_env(env, "history -f json");
  ASSERT_EQ(h.rc, 0) << h.err;
  const json rows = json::parse(h.out);
  ASSERT_EQ(rows.size(), 1u) << h.out;
  const std::string job = rows[0]["job"];
  EXPECT_EQ(job.find(token), std::string::npos) << job;
  EXPECT_NE(job.find("[REDACTED:"), std::string::npos) << job;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "state")) {
    if (!e.is_regular_file()) continue;
    EXPECT_EQ(ff::test::slurp(e.path()).find(token), std::string::npos) << e.path();
  }
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "state" / "firstfault").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ / "state" / "firstfault" / "history.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A folder an older version made 0755, and its 0644 database, are made private.
  ::chmod((dir_ / "state" / "firstfault").c_str(), 0755);
  ::chmod((dir_ / "state" / "firstfault" / "history.db").c_str(), 0644);
  ASSERT_EQ(run_firstfault_env(env, "history").rc, 0);
  ASSERT_EQ(::stat((dir_ / "state" / "firstfault").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ / "state" / "firstfault" / "history.db").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
