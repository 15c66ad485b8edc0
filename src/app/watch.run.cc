// app/watch.run.cc — `firstfault run -- CMD...`: the command started, its stdout and
// stderr passed through and fed to the session as two sources, the diagnosis when it exits.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "app/redaction.h"
#include "app/watch_internal.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "base/strings.h"
#include "report/report.h"

namespace ff::app::live {

// Over 80 lines: the command's life in order (pipes, fork, the poll loop passing bytes on
// and feeding the session, the exit, the report), sharing the pipes and the child's status.
int run_run(const Options& opt, const LiveOptions& lo) {
  if (lo.command.empty()) {
    say_error("run: no command (firstfault run -- python3 train.py ...)");
    return 2;
  }
  Live live(opt, lo, false);
  if (int rc = live.start({"stdout", "stderr"}); rc != 0) return rc;
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
  const uint32_t src_out = s.open("stdout"), src_err = s.open("stderr");
  struct Stream {
    int fd;
    int to;
    uint32_t source;
    bool open = true;
    bool pass = true;  // our own output still takes bytes
  } streams[2] = {{out[0], STDOUT_FILENO, src_out}, {err[0], STDERR_FILENO, src_err}};
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
          continue;
        }
        const std::string_view bytes(buf.data(), static_cast<size_t>(got));
        if (st.pass && !write_all(st.to, bytes)) st.pass = false;
        if (st.to == STDERR_FILENO) stderr_last = bytes.back();
        s.feed(st.source, bytes, steady_ms());
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
    s.feed(s.open("run"), line, steady_ms());
  }
  const analyze::Diagnosis& d = live.finish();
  // The job is the command, run in this folder ("$ " marks it as no path: app/history.h).
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
