#include "schedulers/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace ff::app {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int r = -1, w = -1;
  bool open() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    r = p[0];
    w = p[1];
    return true;
  }
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Starts argv with stdout and stderr to the pipes' write ends, in a process group of its
// own (so that a timeout ends whatever it started too). Returns the pid, or -1 with errno.
pid_t spawn(const std::vector<std::string>& argv, int out_w, int err_w, std::string& error) {
  if (argv.empty()) {
    error = "no command";
    return -1;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_w, STDERR_FILENO);
  posix_spawnattr_setpgroup(&attr, 0);
  // The child starts with default signal handling and nothing blocked, whatever this
  // process set up (SIGPIPE ignored, the interrupt handlers).
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = rc == ENOENT ? "not found on PATH" : std::strerror(rc);
    return -1;
  }
  return pid;
}

void take_status(int status, CommandResult& r) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

// SIGTERM to the group, a second to go, then SIGKILL; reaps it.
void end_group(pid_t pid, CommandResult& r) {
  ::kill(-pid, SIGTERM);
  const auto until = Clock::now() + std::chrono::seconds(1);
  int status = 0;
  while (Clock::now() < until) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      take_status(status, r);
      ::kill(-pid, SIGKILL);  // anything it left in its group
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  take_status(status, r);
}

}  // namespace

std::string CommandResult::describe(const std::string& name) const {
  if (!started) return fmt::format("{}: could not start: {}", name, error);
  if (timed_out) return fmt::format("{}: did not finish in time (killed)", name);
  std::string what = signal ? fmt::format("killed by signal {}", signal) : fmt::format("exit {}", exit_code);
  std::string text = err.empty() ? out : err;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > 400) text = text.substr(0, 400) + "...";
  return text.empty() ? fmt::format("{}: {}", name, what) : fmt::format("{}: {}: {}", name, what, text);
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  CommandResult r;
  Pipe out, err;
  if (!out.open() || !err.open()) {
    r.error = std::strerror(errno);
    close_fd(out.r), close_fd(out.w), close_fd(err.r), close_fd(err.w);
    return r;
  }
  const pid_t pid = spawn(argv, out.w, err.w, r.error);
  close_fd(out.w);
  close_fd(err.w);
  if (pid < 0) {
    close_fd(out.r), close_fd(err.r);
    return r;
  }
  r.started = true;
  const auto deadline = Clock::now() + options.timeout;
  char buf[65536];
  while (out.r >= 0 || err.r >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2];
    int n = 0;
    if (out.r >= 0) fds[n++] = {out.r, POLLIN, 0};
    if (err.r >= 0) fds[n++] = {err.r, POLLIN, 0};
    const int p = ::poll(fds, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (p < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      const bool is_out = fds[i].fd == out.r;
      if (k <= 0) {
        close_fd(is_out ? out.r : err.r);
        continue;
      }
      std::string& to = is_out ? r.out : r.err;
      const size_t room = options.max_output > to.size() ? options.max_output - to.size() : 0;
      to.append(buf, std::min<size_t>(room, static_cast<size_t>(k)));
      if (is_out && room < static_cast<size_t>(k)) r.out_cut = true;
    }
  }
  close_fd(out.r);
  close_fd(err.r);
  if (r.timed_out) {
    end_group(pid, r);
    r.exit_code = -1;
    r.error = "timed out";
    return r;
  }
  // Both streams closed: it has exited, or is about to; wait for it up to the deadline.
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      take_status(status, r);
      break;
    }
    if (w < 0 && errno != EINTR) break;
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      end_group(pid, r);
      r.exit_code = -1;
      r.error = "timed out";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return r;
}

bool start_streaming(const std::vector<std::string>& argv, StreamingCommand& cmd) {
  Pipe out, err;
  if (!out.open() || !err.open()) {
    cmd.error = std::strerror(errno);
    close_fd(out.r), close_fd(out.w), close_fd(err.r), close_fd(err.w);
    return false;
  }
  cmd.pid = spawn(argv, out.w, err.w, cmd.error);
  close_fd(out.w);
  close_fd(err.w);
  if (cmd.pid < 0) {
    close_fd(out.r), close_fd(err.r);
    return false;
  }
  // stderr is drained at the end: keep the child from blocking on a full stderr pipe
  // meanwhile by making the pipe non-blocking on our side only when read (see finish).
  cmd.fd = out.r;
  cmd.err_fd = err.r;
  return true;
}

CommandResult finish_streaming(StreamingCommand& cmd, std::chrono::milliseconds grace) {
  CommandResult r;
  r.started = cmd.pid > 0;
  if (cmd.pid <= 0) {
    r.error = cmd.error;
    return r;
  }
  const auto deadline = Clock::now() + grace;
  char buf[4096];
  int status = 0;
  bool reaped = false;
  ::fcntl(cmd.err_fd, F_SETFL, ::fcntl(cmd.err_fd, F_GETFL) | O_NONBLOCK);
  while (!reaped) {
    for (;;) {
      const ssize_t k = cmd.err_fd >= 0 ? ::read(cmd.err_fd, buf, sizeof buf) : 0;
      if (k <= 0) break;
      if (r.err.size() < 65536) r.err.append(buf, static_cast<size_t>(k));
    }
    pid_t w = ::waitpid(cmd.pid, &status, WNOHANG);
    if (w == cmd.pid) {
      take_status(status, r);
      reaped = true;
      break;
    }
    if (Clock::now() >= deadline) {
      r.timed_out = true;
      end_group(cmd.pid, r);
      reaped = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (;;) {
    const ssize_t k = cmd.err_fd >= 0 ? ::read(cmd.err_fd, buf, sizeof buf) : 0;
    if (k <= 0) break;
    if (r.err.size() < 65536) r.err.append(buf, static_cast<size_t>(k));
  }
  close_fd(cmd.err_fd);
  cmd.pid = -1;
  return r;
}

}  // namespace ff::app
