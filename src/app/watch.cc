#include "app/watch.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "analyze/analyze.h"
#include "app/history.h"
#include "app/kb_check.h"
#include "app/terminal.h"
#include "base/escape.h"
#include "base/interrupt.h"
#include "report/report.h"
#include "watch/exporter.h"
#include "watch/follow.h"
#include "watch/watch.h"

extern char** environ;

namespace ff::app {

namespace {

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
        struct pollfd p {fd, POLLOUT, 0};
        ::poll(&p, 1, 100);
        continue;
      }
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
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

// What watch and run share: the KB, the session, the alerts' printing, hooks, metrics.
class Live {
 public:
  Live(const Options& opt, const LiveOptions& lo, bool print_alerts) : opt_(opt), lo_(lo), print_alerts_(print_alerts) {}

  // 0, or 2 with the problem said.
  int start(const std::vector<std::string>& names) {
    names_ = names;
    if (!watch::parse_severity(lo_.severity, floor_)) {
      say_error("--severity: one of info, warning, degraded, failed");
      return 2;
    }
    watch::SessionOptions so;
    if (!lo_.stall_after.empty() && (!parse_duration_ms(lo_.stall_after, so.stall_after_ms) || so.stall_after_ms <= 0)) {
      say_error("--stall-after: not a duration: " + lo_.stall_after + " (e.g. 90s, 10m)");
      return 2;
    }
    auto loaded = load_everything(opt_, false, KbFields::kDiagnosis);
    if (!loaded.ok()) {
      say_error(loaded.error().to_string());
      return 2;
    }
    loaded_ = std::make_unique<Loaded>(std::move(loaded).value());
    if (!lo_.metrics.empty()) {
      auto ex = watch::Exporter::create(lo_.metrics);
      if (!ex.ok()) {
        say_error(ex.error().message);
        return 2;
      }
      exporter_ = std::move(ex).value();
      fmt::print(stderr, "firstfault: metrics on http://{}:{}/metrics\n",
                 lo_.metrics.find(':') != std::string::npos && lo_.metrics[0] != ':' ? lo_.metrics.substr(0, lo_.metrics.rfind(':'))
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

  watch::Session& session() { return *session_; }

  // Says each alert (printing, hook, metrics); true when --exit-on is met.
  bool handle(std::vector<watch::Alert> alerts) {
    bool stop = false;
    for (const auto& a : alerts) {
      if (a.severity < floor_) continue;
      if (print_alerts_) {
        const std::string s = lo_.format == "jsonl" ? watch::alert_json(a) + "\n" : watch::alert_text(a);
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

  void tick() {
    const bool stop = handle(session_->tick(steady_ms(), unix_ms()));
    if (stop) exit_on_met_ = true;
    publish();
  }

  void publish() {
    if (exporter_) exporter_->update(*session_, loaded_->engine->metric_aliases(), steady_ms());
  }

  // The end: everything closed and diagnosed; the alerts not said yet are said.
  const analyze::Diagnosis& finish() {
    handle(session_->finish(unix_ms()));
    publish();
    hooks_->wait_all(10000);
    return session_->diagnosis();
  }

  // The history's recurrence line ("" when none or off); `job`: what names the job
  // (the inputs, or run's command).
  std::string remember(const std::string& command, const std::vector<std::string>& job) {
    if (lo_.no_history) return {};
    return remember_diagnosis(session_->diagnosis(), command, job);
  }

  bool exit_on_met() const { return exit_on_met_; }
  bool stdout_gone() const { return stdout_gone_; }
  const std::optional<watch::Alert>& exit_alert() const { return exit_alert_; }

 private:
  const Options& opt_;
  const LiveOptions& lo_;
  bool print_alerts_;
  std::vector<std::string> names_;
  watch::Severity floor_ = watch::Severity::kWarning;
  std::unique_ptr<Loaded> loaded_;
  std::unique_ptr<watch::Exporter> exporter_;
  std::unique_ptr<watch::Session> session_;
  std::unique_ptr<Hooks> hooks_;
  bool exit_on_met_ = false;
  bool stdout_gone_ = false;
  std::optional<watch::Alert> exit_alert_;
};

// The Follower's files into the session, one source each (a rotated file goes on as the
// same source).
class FollowInto : public watch::FollowSink {
 public:
  explicit FollowInto(watch::Session& s) : s_(s) {}
  void opened(uint32_t file, const std::string& name) override {
    if (sources_.size() <= file) sources_.resize(file + 1);
    sources_[file] = s_.open(name);
  }
  void data(uint32_t file, std::string_view bytes) override { s_.feed(sources_[file], bytes, steady_ms()); }
  void cut(uint32_t file, const std::string&) override { s_.cut(sources_[file]); }
  void note(const std::string& text) override {
    s_.note(text);
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(text));
  }
  void error(const Error& e) override {
    s_.input_error(e);
    fmt::print(stderr, "firstfault: {}\n", escape_for_terminal(e.to_string()));
  }

 private:
  watch::Session& s_;
  std::vector<uint32_t> sources_;
};

void sleep_ms(int64_t ms) {
  struct timespec ts {static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
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

int run_watch(const Options& opt, const LiveOptions& lo) {
  int64_t poll_ms = 100, idle_ms = 0;
  if (!parse_duration_ms(lo.poll, poll_ms) || poll_ms <= 0) {
    say_error("--poll: not a duration: " + lo.poll);
    return 2;
  }
  if (!lo.idle_exit.empty() && (!parse_duration_ms(lo.idle_exit, idle_ms) || idle_ms <= 0)) {
    say_error("--idle-exit: not a duration: " + lo.idle_exit);
    return 2;
  }
  Live live(opt, lo, true);
  if (int rc = live.start(lo.paths); rc != 0) return rc;
  install_interrupt_handlers();
  watch::FollowOptions fo;
  fo.follow_symlinks = opt.follow_symlinks;
  watch::Follower follower(lo.paths, fo);
  FollowInto into(live.session());
  int64_t last_growth = steady_ms();
  bool first = true;
  while (!interrupted()) {
    const watch::PollStats ps = follower.poll(into);
    if (first) {
      for (const auto& m : follower.missing()) say_error(m + ": not found (yet); watched for");
      first = false;
    }
    const int64_t now = steady_ms();
    if (ps.grew) last_growth = now;
    live.tick();
    if (live.exit_on_met() || live.stdout_gone()) break;
    if (idle_ms > 0 && now - last_growth >= idle_ms) break;
    if (!ps.grew) sleep_ms(poll_ms);
  }
  const analyze::Diagnosis& d = live.finish();
  const std::string recurrence = live.remember("watch", lo.paths);
  if (lo.format == "jsonl") {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(report::render_json(d));
    if (!recurrence.empty()) j["recurrence"] = recurrence;
    write_all(STDOUT_FILENO, j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
  } else {
    std::string s = "\n" + final_text(d, opt, STDOUT_FILENO);
    if (!recurrence.empty()) s += "Seen before: " + escape_for_terminal(recurrence) + "\n";
    write_all(STDOUT_FILENO, s);
  }
  if (live.exit_on_met()) return 1;
  if (live.stdout_gone()) return 128 + SIGPIPE;
  return analyze::verdict_exit_code(d.verdict);
}

// `firstfault run -- CMD...`: the command's stdout and stderr pass through unchanged, each
// to its own, while both go through the engine as two sources.
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
    const std::string msg = "firstfault: run: cannot run " + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(errno == ENOENT ? 127 : 126);
  }
  ::close(out[1]);
  ::close(err[1]);
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
  const analyze::Diagnosis& d = live.finish();
  // The job is the command, run in this folder ("$ " marks it as no path: app/history.h).
  std::string cmdline;
  for (const auto& a : lo.command) cmdline += (cmdline.empty() ? "" : " ") + shell_quote(a);
  std::error_code ec;
  const std::string recurrence =
      live.remember("run", {"$ " + std::filesystem::current_path(ec).string() + ": " + cmdline});
  std::string header = WIFSIGNALED(status)
                           ? fmt::format("firstfault run: the command was killed by signal {} (exit status {})\n",
                                         WTERMSIG(status), rc)
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

int run_history(const LiveOptions& lo) {
  auto h = History::open(history_path());
  if (!h.ok()) {
    say_error(h.error().to_string());
    return 2;
  }
  const auto rows = h.value()->list(lo.limit);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  if (lo.format == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
      nlohmann::ordered_json j;
      j["time"] = r.unix_s;
      j["command"] = r.command;
      j["job"] = r.job;
      j["attempt"] = r.attempt >= 0 ? nlohmann::ordered_json(r.attempt) : nlohmann::ordered_json(nullptr);
      j["verdict"] = r.verdict;
      j["entry"] = r.entry.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.entry);
      j["category"] = r.category;
      j["fingerprint"] = r.fingerprint;
      j["rank"] = r.rank >= 0 ? nlohmann::ordered_json(r.rank) : nlohmann::ordered_json(nullptr);
      j["node"] = r.node.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.node);
      const Recurrence rec = h.value()->recurrence(r, now);
      j["recurrence"] = {{"times_this_week", rec.times}, {"text", rec.line}};
      arr.push_back(std::move(j));
    }
    std::cout << arr.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (rows.empty()) {
    fmt::print("no diagnosis kept yet ({})\n", escape_for_terminal(history_path()));
    return 0;
  }
  for (const auto& r : rows) {
    char when[32];
    const std::time_t t = static_cast<std::time_t>(r.unix_s);
    std::tm tm {};
    localtime_r(&t, &tm);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
    std::string what = r.entry.empty() ? std::string("-") : r.entry;
    if (r.rank >= 0) what += fmt::format(" rank {}", r.rank);
    if (!r.node.empty()) what += " on " + r.node;
    std::string job = r.job.substr(0, r.job.find('\n'));
    if (r.attempt >= 0) job += fmt::format(" (attempt {})", r.attempt);
    fmt::print("{}  {:<8} {:<10} {}  {}\n", when, r.command, r.verdict, escape_for_terminal(what), escape_for_terminal(job));
    const Recurrence rec = h.value()->recurrence(r, now);
    if (!rec.line.empty()) fmt::print("    {}\n", escape_for_terminal(rec.line));
  }
  return 0;
}

void add_live_flags(CLI::App* cmd, LiveOptions& o) {
  cmd->add_option("--severity", o.severity, "Say findings this bad or worse: info, warning (default), degraded, failed")
      ->check(CLI::IsMember({"info", "warning", "degraded", "failed"}));
  cmd->add_option("--exit-on", o.exit_on, "Stop at the first finding this bad (failed, or degraded and worse); exit 1")
      ->check(CLI::IsMember({"failed", "degraded"}));
  cmd->add_option("--on-finding", o.on_finding,
                  "Run this shell command once per incident at or above --severity: the finding as JSON on stdin, "
                  "FIRSTFAULT_KIND, _SEVERITY, _ENTRY, _CATEGORY, _VERDICT, _RANK, _KEY in its environment");
  cmd->add_option("--stall-after", o.stall_after,
                  "A stall (a hang finding) after this long without a new step (90s, 10m); default: 10 times the "
                  "run's typical step interval, at least 30 s");
  cmd->add_option("--metrics", o.metrics,
                  "Serve Prometheus metrics on this address (127.0.0.1:9464; a port alone binds 127.0.0.1)");
  cmd->add_flag("--no-history", o.no_history, "Do not keep the diagnosis in the history");
}

}  // namespace

bool parse_duration_ms(const std::string& text, int64_t& ms) {
  if (text.empty()) return false;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  else if (unit == "ms") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60000;
  else if (unit == "h") scale = 3600000;
  else return false;
  if (!std::isfinite(v) || v < 0 || v * scale > 1e15) return false;
  ms = static_cast<int64_t>(v * scale);
  return true;
}

LiveCommands& add_live_commands(CLI::App& app, Options& opt) {
  static LiveCommands c;
  LiveOptions& o = c.o;
  c.watch = app.add_subcommand(
      "watch", "Follow a running job's logs (files, folders, new per-rank files, rotation) and say each finding as it "
               "happens: the first failure, collateral, stalls; the diagnosis at the end");
  c.watch->add_option("paths", o.paths, "Log files and folders to follow (a torchrun --log_dir)")->required();
  c.watch->add_option("--format,-f", o.format, "text, or jsonl (one JSON object per finding, the diagnosis last)")
      ->check(CLI::IsMember({"text", "jsonl"}));
  c.watch->add_option("--idle-exit", o.idle_exit, "Stop when no file has grown for this long (e.g. 30s)");
  c.watch->add_option("--poll", o.poll, "How often the files are checked (default 100ms)");
  add_live_flags(c.watch, o);
  c.watch->add_flag("-L,--follow", opt.follow_symlinks, "Follow symbolic links found in folders");
  c.watch->footer("Stops at Ctrl-C, --exit-on or --idle-exit, then prints the diagnosis of everything read.\n"
                  "Exit codes: the final verdict's, as for diagnose (0 healthy, 1 failed or degraded, 3 incomplete, "
                  "4 unknown); 1 when --exit-on stopped it; 2 could not run.");

  c.run = app.add_subcommand(
      "run", "Run a command (firstfault run -- python3 train.py): its stdout and stderr pass through unchanged, both "
             "are watched live, and the diagnosis is printed on stderr when it exits");
  c.run->add_option("command", o.command, "The command and its arguments (after --)")->required();
  c.run->add_option("--report", o.report, "Write the diagnosis to this file instead of stderr");
  c.run->add_option("--format,-f", o.format, "The diagnosis's format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  add_live_flags(c.run, o);
  c.run->footer("Exit codes: the command's own (128 + N when a signal N ended it); 2 when firstfault could not "
                "start it.");

  c.history = app.add_subcommand("history", "List past diagnoses and how often their failure recurred");
  c.history->add_option("--limit,-n", o.limit, "Rows shown (default 20; 0 = all)");
  c.history->add_option("--format,-f", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  c.history->footer("The history is $XDG_STATE_HOME/firstfault/history.db (FIRSTFAULT_HISTORY names another file).\n"
                    "Exit codes: 0 listed; 2 the history cannot be read.");
  return c;
}

bool run_live_command(LiveCommands& c, const Options& opt, int& rc) {
  if (c.watch && c.watch->parsed()) {
    rc = run_watch(opt, c.o);
    return true;
  }
  if (c.run && c.run->parsed()) {
    rc = run_run(opt, c.o);
    return true;
  }
  if (c.history && c.history->parsed()) {
    rc = run_history(c.o);
    return true;
  }
  return false;
}

}  // namespace ff::app
