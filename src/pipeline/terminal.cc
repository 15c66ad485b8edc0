#include "pipeline/terminal.h"

#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>

#include "base/strings.h"

namespace ff::app {

size_t output_width(int fd) {
  if (const char* cols = std::getenv("COLUMNS"); cols && *cols) {
    long long n = 0;
    if (parse_int(cols, n) && n >= 20 && n <= 1000) return static_cast<size_t>(n);
  }
  if (!::isatty(fd)) return 0;
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20) return ws.ws_col;
  return 0;
}

size_t output_rows(int fd) {
  if (!::isatty(fd)) return 0;
  if (const char* lines = std::getenv("LINES"); lines && *lines) {
    long long n = 0;
    if (parse_int(lines, n) && n >= 5 && n <= 1000) return static_cast<size_t>(n);
  }
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row >= 5) return ws.ws_row;
  return 0;
}

bool show_in_pager(std::string_view text, size_t rows) {
  if (rows == 0 || !::isatty(STDOUT_FILENO)) return false;
  if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) < rows) return false;
  const char* chosen = std::getenv("FIRSTFAULT_PAGER");
  if (chosen == nullptr) chosen = std::getenv("PAGER");
  const std::string pager = chosen == nullptr ? "less" : std::string(trim(chosen));
  if (pager.empty() || pager == "cat") return false;
  int fds[2];
  if (::pipe(fds) != 0) return false;
  std::fflush(stdout);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  if (pid == 0) {
    ::dup2(fds[0], STDIN_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::setenv("LESS", "FRX", 0);  // git's default: the user's own LESS wins
    ::setenv("LV", "-c", 0);
    ::execl("/bin/sh", "sh", "-c", pager.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[0]);
  // A pager quit before the end closes its end of the pipe: EPIPE, not a signal.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fds[1], text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fds[1]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  ::sigaction(SIGPIPE, &old, nullptr);
  // The shell could not find or run the pager (127, 126): nothing was shown.
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 127 || WEXITSTATUS(status) == 126)) return false;
  return true;
}

}  // namespace ff::app
