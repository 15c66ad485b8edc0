// watch/live.run.cc — `firstfault run -- CMD...`: the command started, its stdout and
// stderr passed through and fed to the session as two sources, the diagnosis when it exits.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "pipeline/redaction.h"
#include "watch/live_internal.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "base/strings.h"
#include "report/report.h"

namespace ff::app::live {

namespace {

namespace fs = std::filesystem;

constexpr size_t kRunsKept = 20;

// Where a run's output is kept when --log names no file: the state folder's runs/ (as the
// history's, 0700: the output may hold secrets), a file per run named by its start.
std::string runs_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return std::string(x) + "/firstfault/runs";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/state/firstfault/runs";
  return {};
}

// The newest kRunsKept of our own files (run-*.log) stay; older ones go.
void prune_runs(const std::string& dir) {
  std::vector<std::pair<fs::file_time_type, fs::path>> runs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (starts_with(name, "run-") && ends_with(name, ".log") && e.is_regular_file(ec))
      runs.emplace_back(e.last_write_time(ec), e.path());
  }
  if (runs.size() <= kRunsKept) return;
  std::sort(runs.begin(), runs.end());
  for (size_t i = 0; i + kRunsKept < runs.size(); ++i) fs::remove(runs[i].second, ec);
}

// Opens the file that keeps the run's output (0600, never through a link planted there);
// -1 and why when it cannot.
int open_capture(const std::string& wanted, std::string& path, std::string& why) {
  path = wanted;
  if (path.empty()) {
    const std::string dir = runs_dir();
    if (dir.empty()) {
      why = "no state folder (set XDG_STATE_HOME or HOME, or --log FILE)";
      return -1;
    }
    std::error_code ec;
    fs::create_directories(fs::path(dir).parent_path(), ec);
    ::mkdir(dir.c_str(), 0700);
    prune_runs(dir);
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    ::localtime_r(&now, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    path = fmt::format("{}/run-{}-{}.log", dir, stamp, ::getpid());
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) why = std::strerror(errno);
  return fd;
}

}  // namespace

// Over 80 lines: the command's life in order (pipes, fork, the poll loop passing bytes on
// and feeding the session, the exit, the report), sharing the pipes and the child's status.
int run_run(const Options& opt, const LiveOptions& lo) {
  if (lo.command.empty()) {
    say_error("run: no command (firstfault run -- python3 train.py ...)");
    return 2;
  }
  // The command's output is kept in a file, stdout and stderr line by line in the order
  // they came, and the session reads the same lines as one source named by that file: the
  // report's file:line and its verify command name a file that exists (issue 33).
  std::string capture_path, why;
  const int capture = open_capture(lo.log, capture_path, why);
  if (capture < 0)
    say_error("run: cannot keep the output in " + (capture_path.empty() ? std::string("a file") : capture_path) + ": " +
              why + "; the report names stdout and stderr instead");
  const std::vector<std::string> names =
      capture >= 0 ? std::vector<std::string>{capture_path} : std::vector<std::string>{"stdout", "stderr"};
  Live live(opt, lo, false);
  if (int rc = live.start(names); rc != 0) {
    if (capture >= 0) ::close(capture);
    return rc;
  }
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    say_error(std::string("run: pipe: ") + std::strerror(errno));
    return 2;
  }
  // The child reports a failed exec through a close-on-exec pipe (a successful exec closes
  // it unread): a command that cannot start is firstfault's failure to run it (exit 2),
  // not a run whose output was empty.
  int exec_err[2];
  if (::pipe2(exec_err, O_CLOEXEC) != 0) {
    say_error(std::string("run: pipe: ") + std::strerror(errno));
    return 2;
  }
  std::vector<std::string> args = lo.command;
  const pid_t pid = ::fork();
  if (pid < 0) {
    say_error(std::string("run: fork: ") + std::strerror(errno));
    return 2;
  }
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::signal(SIGPIPE, SIG_DFL);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    const int e = errno;
    (void)!::write(exec_err[1], &e, sizeof e);
    ::_exit(e == ENOENT ? 127 : 126);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::close(exec_err[1]);
  int exec_errno = 0;
  ssize_t got_errno;
  do got_errno = ::read(exec_err[0], &exec_errno, sizeof exec_errno);
  while (got_errno < 0 && errno == EINTR);
  ::close(exec_err[0]);
  if (got_errno == static_cast<ssize_t>(sizeof exec_errno)) {
    ::waitpid(pid, nullptr, 0);
    ::close(out[0]);
    ::close(err[0]);
    say_error("run: cannot run " + args[0] + ": " + std::strerror(exec_errno));
    return 2;
  }
  // Ctrl-C reaches the command from the terminal itself (one process group); a SIGTERM
  // sent to firstfault (a scheduler's) is handed on to the command, which decides.
  install_interrupt_handlers();
  watch::Session& s = live.session();
  const uint32_t src_out = s.open(names[0]), src_err = capture >= 0 ? src_out : s.open(names[1]);
  struct Stream {
    int fd;
    int to;
    uint32_t source;
    bool open = true;
    bool pass = true;     // our own output still takes bytes
    std::string partial;  // with a capture: the line begun and not yet ended
  } streams[2] = {{out[0], STDOUT_FILENO, src_out, true, true, {}}, {err[0], STDERR_FILENO, src_err, true, true, {}}};
  bool capture_ok = capture >= 0;
  // Whole lines to the capture and the session (the two streams never split one another's
  // line); without a capture the bytes go to the stream's own source as they come.
  auto take = [&](Stream& st, std::string_view bytes, bool end) {
    if (capture < 0) {
      if (!bytes.empty()) s.feed(st.source, bytes, steady_ms());
      return;
    }
    st.partial.append(bytes);
    size_t upto = st.partial.size();
    if (!end) {
      const size_t nl = st.partial.rfind('\n');
      if (nl == std::string::npos) return;
      upto = nl + 1;
    }
    std::string lines = st.partial.substr(0, upto);
    st.partial.erase(0, upto);
    if (lines.empty()) return;
    if (lines.back() != '\n') lines += '\n';
    if (capture_ok && !write_all(capture, lines)) {
      capture_ok = false;
      say_error("run: writing " + capture_path + " failed: " + std::strerror(errno) + "; it is not whole");
    }
    s.feed(st.source, lines, steady_ms());
  };
  std::vector<char> buf(1 << 16);
  int status = 0;
  bool exited = false;
  int64_t exited_at = 0;
  int forwarded = 0;
  char stderr_last = '\n';  // the diagnosis starts on a line of its own
  for (;;) {
    if (const int sig = interrupted(); sig == SIGTERM && forwarded == 0 && !exited) {
      ::kill(pid, sig);
      forwarded = sig;
    }
    struct pollfd p[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!streams[i].open) continue;
      p[n] = {streams[i].fd, POLLIN, 0};
      which[n++] = i;
    }
    if (n == 0 && exited) break;
    if (n == 0) sleep_ms(50);  // both pipes closed, the command still running: wait for it
    if (n > 0) {
      const int r = ::poll(p, static_cast<nfds_t>(n), 100);
      if (r < 0 && errno != EINTR) break;
      for (int k = 0; r > 0 && k < n; ++k) {
        if ((p[k].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        Stream& st = streams[which[k]];
        const ssize_t got = ::read(st.fd, buf.data(), buf.size());
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          st.open = false;
          ::close(st.fd);
          take(st, {}, true);
          continue;
        }
        const std::string_view bytes(buf.data(), static_cast<size_t>(got));
        if (st.pass && !write_all(st.to, bytes)) st.pass = false;
        if (st.to == STDERR_FILENO) stderr_last = bytes.back();
        take(st, bytes, false);
      }
    }
    if (!exited) {
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) {
        exited = true;
        exited_at = steady_ms();
      }
    }
    // The command is gone but something it started still holds the pipes: what it
    // writes within a second is still passed on, then the diagnosis is made.
    if (exited && steady_ms() - exited_at > 1000) break;
    live.tick();
  }
  if (!exited) ::waitpid(pid, &status, 0);
  for (auto& st : streams) {
    if (st.open) ::close(st.fd);
    take(st, {}, true);
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  // The command's own end is evidence too: a signal that killed it is read as one more
  // line of the run (source "run"), which the KB names like any other (SIGKILL: the
  // kernel's OOM killer is the usual sender), so a command killed before it printed
  // anything is a failure with its cause, not an empty input.
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    const std::string line = fmt::format("firstfault run: the command was killed by signal {} (SIG{})\n", sig,
                                         name ? name : std::to_string(sig).c_str());
    if (capture >= 0) {
      take(streams[1], line, true);
    } else {
      s.feed(s.open("run"), line, steady_ms());
    }
  }
  if (capture >= 0) ::close(capture);
  const analyze::Diagnosis& d = live.finish();
  // The job is the command, run in this folder ("$ " marks it as no path: history/history.h).
  // The history keeps it, so its secrets (`--hf_token hf_...`) and identities are replaced
  // first, by the rules of --redact; without the rules only the program's name is kept.
  std::string cmdline;
  for (const auto& a : lo.command) cmdline += (cmdline.empty() ? "" : " ") + shell_quote(a);
  if (auto redactor = make_redactor(); redactor.ok())
    cmdline = redactor.value().apply(cmdline);
  else
    cmdline = lo.command.empty() ? std::string() : shell_quote(lo.command[0]) + " [arguments not kept]";
  std::error_code ec;
  const std::string recurrence =
      live.remember("run", {"$ " + std::filesystem::current_path(ec).string() + ": " + cmdline});
  std::string header =
      WIFSIGNALED(status)
          ? fmt::format("firstfault run: the command was killed by signal {} (exit status {})\n", WTERMSIG(status), rc)
          : fmt::format("firstfault run: the command exited with status {}\n", rc);
  std::string rendered;
  if (lo.format == "json") {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(report::render_json(d));
    j["command_exit_status"] = rc;
    if (!recurrence.empty()) j["recurrence"] = recurrence;
    rendered = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  } else {
    rendered = header + final_text(d, opt, lo.report.empty() ? STDERR_FILENO : -1);
    if (!recurrence.empty()) rendered += "Seen before: " + escape_for_terminal(recurrence) + "\n";
  }
  if (!lo.report.empty() && lo.report != "-") {
    if (std::string problem = write_output_file(lo.report, rendered); !problem.empty())
      say_error("cannot write the report " + lo.report + ": " + problem);
  } else {
    write_all(STDERR_FILENO, (stderr_last == '\n' ? "" : "\n") + rendered);
  }
  return rc;
}

}  // namespace ff::app::live
