// Issue 16, the terminal: the binary run under a real pseudo-terminal of a given size
// (forkpty, TIOCSWINSZ), as a person runs it. The report wraps at word boundaries to the
// width, the answer (verdict, decisive line, fix, verify) is on the first screen of 24
// rows, tables fit, and the progress bar fits and erases itself. And the conventions of
// the first minute: a reader that stops early, did you mean, help per subcommand.
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "base/wrap.h"
#include "harness.h"

namespace {

using ff::test::lines_of;

using ff::test::Outcome;
namespace fs = std::filesystem;

const std::string kCache = ff::test::shared_cache_dir().string();
const std::string kLog = std::string(FF_SOURCE_DIR) + "/tests/data/01_rank_exception__tee.log";

// Runs the binary on a pty of `rows` x `cols` (stdout and stderr both the terminal, as in
// a shell) and returns what the terminal received, CR LF turned into LF.
// `env`: NAME=VALUE sets, a bare NAME unsets. The pager is off (FIRSTFAULT_PAGER=cat) unless
// env says otherwise. `keys` are typed once output has come and paused (1.5 s): a pager's q.
Outcome run_on_pty(const std::vector<std::string>& args, unsigned short rows, unsigned short cols,
                   const std::vector<std::string>& env = {}, std::string keys = "") {
  struct winsize ws {};
  ws.ws_row = rows;
  ws.ws_col = cols;
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  if (pid == 0) {
    ::unsetenv("COLUMNS");
    ::unsetenv("NO_COLOR");
    ::setenv("FIRSTFAULT_CACHE_DIR", kCache.c_str(), 1);
    // Never the user's own history (its "seen before" line would join the output).
    ::setenv("FIRSTFAULT_NO_HISTORY", "1", 1);
    ::setenv("FIRSTFAULT_PAGER", "cat", 1);
    for (const auto& kv : env) {
      if (kv.find('=') == std::string::npos)
        ::unsetenv(kv.c_str());
      else
        ::putenv(const_cast<char*>(kv.c_str()));
    }
    std::vector<char*> argv = {const_cast<char*>(FF_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(FF_BINARY, argv.data());
    ::_exit(127);
  }
  Outcome o;
  if (pid < 0) return o;
  char buf[65536];
  int quiet = 0;
  for (;;) {
    struct pollfd p {
      master, POLLIN, 0
    };
    const int ready = ::poll(&p, 1, keys.empty() ? 60000 : 1500);
    if (ready == 0 && !keys.empty()) {
      if (o.out.empty() && ++quiet < 40) continue;  // nothing shown yet: wait (60 s at most)
      if (::write(master, keys.data(), keys.size()) != static_cast<ssize_t>(keys.size())) break;
      keys.clear();
      continue;
    }
    if (ready <= 0) break;
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child has gone and the slave is closed
    o.out.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::string lf;
  for (size_t i = 0; i < o.out.size(); ++i) {
    if (o.out[i] == '\r' && i + 1 < o.out.size() && o.out[i + 1] == '\n') continue;
    lf += o.out[i];
  }
  o.out = lf;
  return o;
}

std::string strip_escapes(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b') {
      ++i;
      if (i < s.size() && s[i] == '[') {
        while (i < s.size() && !(s[i] >= '@' && s[i] <= '~' && s[i] != '[')) ++i;
      }
      continue;
    }
    out += s[i];
  }
  return out;
}

// The words of a text, in order: wrapping may move them between lines but never split,
// drop or reorder them. A shell continuation (" \" at a line's end) is not a word.
std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& line : lines_of(s)) {
    std::string l = line;
    if (l.size() >= 2 && l.compare(l.size() - 2, 2, " \\") == 0) l.resize(l.size() - 2);
    size_t i = 0;
    while (i < l.size()) {
      while (i < l.size() && l[i] == ' ') ++i;
      size_t j = i;
      while (j < l.size() && l[j] != ' ') ++j;
      if (j > i) out.push_back(l.substr(i, j - i));
      i = j;
    }
  }
  return out;
}

// A line fits `cols` columns, or is one word of a shell command, continued (" \"), that
// is wider than the line: such a word is never cut, or the command would not paste.
bool fits(const std::string& l, size_t cols) {
  if (ff::display_width(l) <= cols) return true;
  const auto words = words_of(l);
  return words.size() == 1 && ff::display_width(words[0]) > cols - 4 && l.size() > 2 &&
         l.compare(l.size() - 2, 2, " \\") == 0;
}

// The report's last line gives the time it took: not the same from run to run.
std::string without_timing(const std::string& s) {
  size_t at = s.rfind(" read in ");
  return at == std::string::npos ? s : s.substr(0, at);
}

TEST(Terminal, TheReportWrapsAtWordBoundariesToTheTerminalWidth) {
  const Outcome piped = ff::test::run_firstfault(
      "diagnose " + ff::test::quote(kLog), fs::path(::testing::TempDir()) / ("t-pipe-" + std::to_string(::getpid())));
  ASSERT_EQ(piped.rc, 1) << piped.err;
  size_t widest = 0;
  for (const auto& l : lines_of(piped.out)) widest = std::max(widest, ff::display_width(l));
  ASSERT_GT(widest, 80u) << "the log's report has lines wider than 80 columns, or this test proves nothing";
  // Code to paste is never wrapped (issue 33): the verify code and the decisive file:line
  // are written whole at any width, and the terminal folds them.
  std::set<std::string> verbatim;
  {
    bool in_verify = false;
    for (const auto& l : lines_of(piped.out)) {
      if (l == "Verify")
        in_verify = true;
      else if (in_verify && (l.empty() || l.rfind("  Expect:", 0) == 0 || l.rfind("  Then check", 0) == 0))
        in_verify = false;
      else if (in_verify)
        verbatim.insert(l);
      if (l.find(".log:") != std::string::npos && l.rfind("  ", 0) == 0 && l.find(' ', 2) == std::string::npos)
        verbatim.insert(l);
    }
  }
  ASSERT_FALSE(verbatim.empty());
  for (unsigned short cols : {40, 80, 200}) {
    SCOPED_TRACE("columns " + std::to_string(cols));
    // A tall screen: the steps of the fix stay in their order (see the first-screen test).
    const Outcome o = run_on_pty({"diagnose", "--color", "never", kLog}, 200, cols);
    ASSERT_EQ(o.rc, 1) << o.out;
    // Every line fits, but for a word of a shell command wider than the line (never cut:
    // it would no longer paste), alone on its line.
    for (const auto& l : lines_of(o.out)) EXPECT_TRUE(fits(l, cols) || verbatim.count(l)) << "'" << l << "'";
    // Each word of the piped report is in the terminal's, in order and whole; a word is
    // cut only where it is wider than the line itself (a long path).
    std::vector<std::string> want = words_of(without_timing(piped.out)), got = words_of(without_timing(o.out));
    if (cols >= 80) {
      EXPECT_EQ(got, want);
    } else {
      std::string a, b;
      for (const auto& w : want) a += w;
      for (const auto& w : got) b += w;
      EXPECT_EQ(b, a) << "the same characters in the same order";
      size_t whole = 0;
      for (const auto& w : want)
        whole += std::find(got.begin(), got.end(), w) != got.end() || ff::display_width(w) + 6 > cols;
      EXPECT_EQ(whole, want.size()) << "every word that fits a line is kept whole";
    }
  }
  // COLUMNS decides when it is set, as for ls and git; a pipe is not wrapped otherwise.
  const Outcome narrow = ff::test::run_firstfault(
      "diagnose " + ff::test::quote(kLog), fs::path(::testing::TempDir()) / ("t-cols-" + std::to_string(::getpid())));
  EXPECT_EQ(without_timing(narrow.out), without_timing(piped.out));
  // A name of this process's own: a file another user's run left in /tmp is not ours to write.
  const std::string cols50 = ::testing::TempDir() + "/cols50-" + std::to_string(::getpid()) + ".out";
  std::string cmd = "COLUMNS=50 FIRSTFAULT_NO_HISTORY=1 FIRSTFAULT_CACHE_DIR=" + kCache + " " + FF_BINARY +
                    " diagnose " + ff::test::quote(kLog) + " > " + cols50;
  std::system(cmd.c_str());
  for (const auto& l : lines_of(ff::test::slurp(cols50))) EXPECT_TRUE(fits(l, 50) || verbatim.count(l)) << l;
  std::remove(cols50.c_str());
}

TEST(Terminal, TheAnswerIsOnTheFirstScreenOfA24RowTerminal) {
  for (const std::string& name : {std::string("01_rank_exception__tee.log"), std::string("05_signal_kill__tee.log"),
                                  std::string("06_hang.log")}) {
    SCOPED_TRACE(name);
    const std::string log = std::string(FF_SOURCE_DIR) + "/tests/data/" + name;
    const Outcome o = run_on_pty({"diagnose", log}, 24, 80);
    ASSERT_EQ(o.rc, 1) << o.out;
    const std::string text = strip_escapes(o.out);
    auto ls = lines_of(text);
    ASSERT_GT(ls.size(), 24u) << "a report longer than a screen, or this test proves nothing";
    std::string first;
    for (size_t i = 0; i < 24; ++i) first += ls[i] + "\n";
    EXPECT_EQ(first.rfind("FAILED", 0), 0u) << first;
    EXPECT_NE(first.find("  > "), std::string::npos) << "the decisive line\n" << first;
    EXPECT_NE(first.find("\nFix\n"), std::string::npos) << first;
    EXPECT_NE(first.find("\nVerify\n"), std::string::npos) << first;
    EXPECT_NE(first.find("$ firstfault verify --before"), std::string::npos) << "the verify command\n" << first;
    EXPECT_NE(o.out.find("\x1b[1;31mFAILED"), std::string::npos) << "colour on a terminal";
  }
}

// Issue 33, item 2: a report longer than the screen goes through the pager (less -FRX when
// neither FIRSTFAULT_PAGER nor PAGER is set), so the verdict is what the screen shows when
// the user is done; the exit code is still the verdict's. --no-pager and a pipe print it all.
TEST(Terminal, Issue33ALongReportGoesThroughThePagerWithTheAnswerOnScreen) {
  if (::access("/usr/bin/less", X_OK) != 0 && ::access("/bin/less", X_OK) != 0) GTEST_SKIP() << "no less";
  const std::vector<std::string> no_pager_set = {"FIRSTFAULT_PAGER", "PAGER", "LESS"};
  const Outcome paged = run_on_pty({"diagnose", kLog}, 24, 80, no_pager_set, "q");
  EXPECT_EQ(paged.rc, 1) << paged.out;
  const std::string shown = strip_escapes(paged.out);
  EXPECT_EQ(shown.find("FAILED"), shown.find_first_not_of("\r\n ")) << "the verdict on top\n" << shown;
  EXPECT_NE(shown.find("\nVerify\n"), std::string::npos) << shown;
  EXPECT_EQ(shown.find(" read in "), std::string::npos) << "the pager showed the first screen only\n" << shown;

  const Outcome whole = run_on_pty({"diagnose", "--no-pager", kLog}, 24, 80, no_pager_set);
  EXPECT_EQ(whole.rc, 1);
  EXPECT_NE(strip_escapes(whole.out).find(" read in "), std::string::npos) << "--no-pager: the whole report";

  // A pager that cannot start: the report is printed as it is.
  const Outcome missing = run_on_pty({"diagnose", kLog}, 24, 80, {"FIRSTFAULT_PAGER=firstfault-no-such-pager"});
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(strip_escapes(missing.out).find(" read in "), std::string::npos) << missing.out;

  // On a pipe nothing changes: no pager, and --no-pager is the same report.
  const fs::path dir = fs::path(::testing::TempDir()) / ("t-pager-" + std::to_string(::getpid()));
  const Outcome piped = ff::test::run_firstfault("diagnose " + ff::test::quote(kLog), dir);
  const Outcome piped_no = ff::test::run_firstfault("diagnose --no-pager " + ff::test::quote(kLog), dir);
  EXPECT_EQ(piped.rc, 1);
  EXPECT_NE(piped.out.find(" read in "), std::string::npos);
  EXPECT_EQ(without_timing(piped.out), without_timing(piped_no.out));
}

// --brief: the answer alone (verdict, decisive line, fix, verify), on a terminal and a pipe.
TEST(Terminal, Issue33BriefIsTheAnswerAlone) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("t-brief-" + std::to_string(::getpid()));
  const Outcome o = ff::test::run_firstfault("diagnose --brief " + ff::test::quote(kLog), dir);
  EXPECT_EQ(o.rc, 1);
  EXPECT_EQ(o.out.rfind("FAILED", 0), 0u) << o.out;
  EXPECT_NE(o.out.find("\nFix\n"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("\nVerify\n"), std::string::npos) << o.out;
  for (const char* gone : {"What happened", "Root cause", "Timeline", " read in "})
    EXPECT_EQ(o.out.find(gone), std::string::npos) << gone << "\n" << o.out;
  const Outcome tty = run_on_pty({"diagnose", "--brief", kLog}, 24, 80, {"FIRSTFAULT_PAGER", "PAGER"});
  EXPECT_EQ(tty.rc, 1);
  EXPECT_LE(lines_of(strip_escapes(tty.out)).size(), 24u) << "fits a screen: no pager\n" << tty.out;
}

TEST(Terminal, AnEntryIsWrappedLikeTheReport) {
  const Outcome o = run_on_pty({"explain", "pytorch.cuda.out-of-memory"}, 24, 50);
  ASSERT_EQ(o.rc, 0) << o.out;
  ASSERT_GT(lines_of(o.out).size(), 10u);
  // The verify code is written whole (issue 33: it must paste); everything else wraps.
  std::set<std::string> code;
  bool in_verify = false;
  for (const auto& l : lines_of(o.out)) {
    if (l.rfind("Verify:", 0) == 0)
      in_verify = true;
    else if (in_verify && l.rfind("    ", 0) != 0)
      in_verify = false;
    else if (in_verify)
      code.insert(l);
  }
  ASSERT_FALSE(code.empty()) << o.out;
  for (const auto& l : lines_of(o.out)) EXPECT_TRUE(ff::display_width(l) <= 50u || code.count(l)) << "'" << l << "'";
}

TEST(Terminal, TablesFitTheWidth) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"kb", "list"}, std::vector<std::string>{"search", "CUDA out of memory"}}) {
    for (unsigned short cols : {40, 100, 200}) {
      SCOPED_TRACE(args[0] + " at " + std::to_string(cols));
      const Outcome o = run_on_pty(args, 24, cols);
      ASSERT_EQ(o.rc, 0) << o.out;
      auto ls = lines_of(o.out);
      ASSERT_GT(ls.size(), 3u);
      for (const auto& l : ls) EXPECT_LE(ff::display_width(l), cols) << "'" << l << "'";
      EXPECT_NE(o.out.find("pytorch.cuda.out-of-memory"), std::string::npos) << "ids are never cut at this width";
    }
  }
}

TEST(Terminal, TheProgressBarFitsTheWidthAndErasesItself) {
  // 160 MB of training lines: over the 100 MB from which the bar is drawn.
  const std::string big = ::testing::TempDir() + "/progress-big-" + std::to_string(::getpid()) + ".log";
  {
    std::ofstream f(big);
    std::string line = "step 1234 | loss 2.3456 | lr 1.0e-04 | grad_norm 0.812 | tokens/s 123456 | padding padding\n";
    for (size_t n = 0; n < (160u << 20) / line.size(); ++n) f << line;
  }
  const Outcome p = run_on_pty({"diagnose", "--color", "never", "--threads", "1", big}, 24, 60);
  std::remove(big.c_str());
  ASSERT_NE(p.out.find("\r"), std::string::npos) << "a bar was drawn\n" << p.out.substr(0, 400);
  // Each state of the bar (between carriage returns) fits in 60 columns, and the last
  // one is erased (CR, erase to end of line) before the report begins.
  size_t draws = 0;
  std::string before_report = p.out.substr(0, p.out.find("\n"));
  for (const auto& part : lines_of(before_report)) {
    size_t start = 0;
    while (start <= part.size()) {
      size_t cr = part.find('\r', start);
      std::string seg = part.substr(start, cr == std::string::npos ? std::string::npos : cr - start);
      if (seg.rfind("firstfault: [", 0) == 0) {
        EXPECT_LE(ff::display_width(seg), 59u) << "'" << seg << "'";
        ++draws;
      }
      if (cr == std::string::npos) break;
      start = cr + 1;
    }
  }
  EXPECT_GT(draws, 0u);
  EXPECT_NE(p.out.find("\r\x1b[K"), std::string::npos) << "the bar erases itself";
}

}  // namespace
