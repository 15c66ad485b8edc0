#include "app/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

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

}  // namespace ff::app
