// watch/live.session.cc — what watch and run share: Live (the KB, the session, the alerts'
// printing, --on-finding hooks and metrics) and small helpers for the live loops.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "history/history.h"
#include "pipeline/terminal.h"
#include "watch/live_internal.h"
#include "base/escape.h"
#include "report/report.h"

namespace ff::app::live {

namespace {

// Whether --metrics ADDRESS:PORT (or PORT alone, which binds 127.0.0.1) listens on loopback
// only: localhost, 127.0.0.0/8 or ::1.
bool metrics_on_loopback(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return true;  // a port alone
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return true;
  unsigned char v4[4], v6[16];
  if (::inet_pton(AF_INET, host.c_str(), v4) == 1) return v4[0] == 127;
  if (::inet_pton(AF_INET6, host.c_str(), v6) == 1) {
    static const unsigned char kLoopback6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return std::memcmp(v6, kLoopback6, 16) == 0;
  }
  return false;
}

}  // namespace

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void say_error(const std::string& text) { fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(text)); }

// Writes all of bytes to fd; false when the reader is gone (EPIPE) or the write fails.
bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        struct pollfd p {
          fd, POLLOUT, 0
        };
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void sleep_ms(int64_t ms) {
  struct timespec ts {
    static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)
  };
  ::nanosleep(&ts, nullptr);  // a signal ends it early: the loop looks at the flag
}

std::string final_text(const analyze::Diagnosis& d, const Options& opt, int fd) {
  report::TextOptions to;
  to.color = false;
  to.verbose = opt.verbose;
  to.width = output_width(fd);
  to.rows = 0;
  return report::render_text(d, to);
}

// --on-finding: the command runs under /bin/sh with the alert as JSON on stdin and a few
// FIRSTFAULT_* variables; at most kMaxRunning at once (more are skipped, with a note), and
// the watch does not wait for them, but for up to 10 s at its end.
class Hooks {
 public:
  explicit Hooks(std::string command) : command_(std::move(command)) {}
  ~Hooks() { wait_all(10000); }

  void run(const watch::Alert& a) {
    if (command_.empty()) return;
    reap();
    if (running_.size() >= kMaxRunning) {
      say_error("--on-finding: " + std::to_string(kMaxRunning) + " still running; not run for " + a.key);
      return;
    }
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return;
    const std::string json = watch::alert_json(a) + "\n";
    const std::string rank = a.rank ? std::to_string(*a.rank) : "";
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(in[0]);
      ::close(in[1]);
      say_error(std::string("--on-finding: cannot start: ") + std::strerror(errno));
      return;
    }
    if (pid == 0) {
      ::dup2(in[0], STDIN_FILENO);
      ::setenv("FIRSTFAULT_KIND", a.kind.c_str(), 1);
      ::setenv("FIRSTFAULT_SEVERITY", watch::severity_name(a.severity), 1);
      ::setenv("FIRSTFAULT_ENTRY", a.id.c_str(), 1);
      ::setenv("FIRSTFAULT_CATEGORY", a.category.c_str(), 1);
      ::setenv("FIRSTFAULT_VERDICT", a.verdict.c_str(), 1);
      ::setenv("FIRSTFAULT_RANK", rank.c_str(), 1);
      ::setenv("FIRSTFAULT_KEY", a.key.c_str(), 1);
      ::signal(SIGPIPE, SIG_DFL);
      ::execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(in[0]);
    // The alert is small (well under a pipe's buffer): written at once, then closed.
    (void)write_all(in[1], json);
    ::close(in[1]);
    running_.push_back(pid);
  }

  void reap() {
    for (size_t i = 0; i < running_.size();) {
      int status = 0;
      const pid_t r = ::waitpid(running_[i], &status, WNOHANG);
      if (r == running_[i] || (r < 0 && errno == ECHILD)) {
        if (r == running_[i] && WIFEXITED(status) && WEXITSTATUS(status) != 0)
          say_error(fmt::format("--on-finding: the command exited with status {}", WEXITSTATUS(status)));
        running_.erase(running_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }

  void wait_all(int64_t ms) {
    const int64_t until = steady_ms() + ms;
    while (!running_.empty() && steady_ms() < until) {
      reap();
      if (!running_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  static constexpr size_t kMaxRunning = 8;
  std::string command_;
  std::vector<pid_t> running_;
};

Live::Live(const Options& opt, const LiveOptions& lo, bool print_alerts)
    : opt_(opt), lo_(lo), print_alerts_(print_alerts) {}

Live::~Live() = default;

int Live::start(const std::vector<std::string>& names) {
  names_ = names;
  started_ms_ = steady_ms();
  if (!watch::parse_severity(lo_.severity, floor_)) {
    say_error("--severity: one of info, warning, degraded, failed");
    return 2;
  }
  watch::SessionOptions so;
  if (!lo_.stall_after.empty() && (!parse_duration_ms(lo_.stall_after, so.stall_after_ms) || so.stall_after_ms <= 0)) {
    say_error("--stall-after: not a duration: " + lo_.stall_after + " (e.g. 90s, 10m)");
    return 2;
  }
  auto loaded = load_or_say(opt_, false, KbFields::kDiagnosis);
  if (!loaded) return 2;
  loaded_ = std::make_unique<Loaded>(std::move(*loaded));
  if (!lo_.metrics.empty() && !lo_.allow_remote && !metrics_on_loopback(lo_.metrics)) {
    say_error("--metrics " + lo_.metrics +
              ": not a loopback address, so anyone who can reach this machine would read the run's metrics; add "
              "--allow-remote if that is what you want (as firstfault serve asks)");
    return 2;
  }
  if (!lo_.metrics.empty()) {
    auto ex = watch::Exporter::create(lo_.metrics);
    if (!ex.ok()) {
      say_error(ex.error().message);
      return 2;
    }
    exporter_ = std::move(ex).value();
    fmt::print(stderr, "firstfault: metrics on http://{}:{}/metrics\n",
               lo_.metrics.find(':') != std::string::npos && lo_.metrics[0] != ':'
                   ? lo_.metrics.substr(0, lo_.metrics.rfind(':'))
                   : std::string("127.0.0.1"),
               exporter_->port());
  }
  scan::ScanOptions sc;
  sc.threads = 1;
  session_ = std::make_unique<watch::Session>(
      *loaded_->engine,
      [this](const std::vector<record::Event>& events, const scan::JobStats& job) {
        DiagnosedJob dj;
        diagnose_events(*loaded_, opt_, events, job, names_, dj);
        return std::move(dj.d);
      },
      so, sc);
  hooks_ = std::make_unique<Hooks>(lo_.on_finding);
  return 0;
}

bool Live::handle(std::vector<watch::Alert> alerts) {
  bool stop = false;
  for (const auto& a : alerts) {
    if (a.severity < floor_) continue;
    if (print_alerts_) {
      const std::string s =
          lo_.format == "jsonl" ? watch::alert_json(a) + "\n" : watch::alert_text(a, output_width(STDOUT_FILENO));
      if (!write_all(STDOUT_FILENO, s)) stdout_gone_ = true;
    }
    hooks_->run(a);
    if ((lo_.exit_on == "failed" && a.severity >= watch::Severity::kFailed) ||
        (lo_.exit_on == "degraded" && a.severity >= watch::Severity::kDegraded)) {
      stop = true;
      exit_alert_ = a;
    }
  }
  return stop;
}

void Live::tick() {
  const bool stop = handle(session_->tick(steady_ms(), unix_ms()));
  if (stop) exit_on_met_ = true;
  publish();
}

void Live::publish() {
  if (exporter_) exporter_->update(*session_, loaded_->engine->metric_aliases(), steady_ms());
}

const analyze::Diagnosis& Live::finish() {
  handle(session_->finish(unix_ms()));
  publish();
  hooks_->wait_all(10000);
  // The report's "read in" is the time the lines took to come: from the start to the end
  // of the watch or of the command (the session's own diagnosis leaves it 0).
  final_ = session_->diagnosis();
  final_.seconds = static_cast<double>(steady_ms() - started_ms_) / 1000.0;
  return final_;
}

std::string Live::remember(const std::string& command, const std::vector<std::string>& job) {
  if (lo_.no_history) return {};
  return remember_diagnosis(session_->diagnosis(), command, job);
}

}  // namespace ff::app::live
