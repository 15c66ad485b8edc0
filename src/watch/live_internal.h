// watch/live_internal.h — what the files of the live commands (watch/live.h) share:
//
//   watch.cc          the command line of watch, run and history, and the dispatch
//   watch.live.cc     Live: the KB, the session, the alerts' printing, --on-finding hooks
//                     and metrics that watch and run share; small helpers
//   watch.follow.cc   `watch`: files and folders followed into the session
//   watch.run.cc      `run`: a command's pipes passed through and watched
//   watch.history.cc  `history`: the diagnoses kept and how often they recur
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "pipeline/pipeline.h"
#include "watch/live.h"
#include "watch/exporter.h"
#include "watch/watch.h"

namespace ff::app::live {

// Milliseconds of the steady clock (for intervals) and of the wall clock (for alerts).
int64_t steady_ms();
int64_t unix_ms();
// "firstfault: TEXT" on stderr, escaped for the terminal.
void say_error(const std::string& text);
// Writes all of bytes to fd; false when the reader is gone (EPIPE) or the write fails.
bool write_all(int fd, std::string_view bytes);
// Sleeps; a signal ends it early (the loops look at the interrupt flag).
void sleep_ms(int64_t ms);
// The diagnosis as the final text: no colour, wrapped to fd's width (-1: not a terminal).
std::string final_text(const analyze::Diagnosis& d, const Options& opt, int fd);

class Hooks;

// What watch and run share: the KB, the session, the alerts' printing, hooks, metrics.
class Live {
 public:
  // Out of line, as the destructor: Hooks is complete only in watch.live.cc.
  Live(const Options& opt, const LiveOptions& lo, bool print_alerts);
  ~Live();

  // 0, or 2 with the problem said.
  int start(const std::vector<std::string>& names);

  watch::Session& session() { return *session_; }

  // Says each alert (printing, hook, metrics); true when --exit-on is met.
  bool handle(std::vector<watch::Alert> alerts);
  void tick();
  void publish();
  // The end: everything closed and diagnosed; the alerts not said yet are said.
  const analyze::Diagnosis& finish();
  // The history's recurrence line ("" when none or off); `job`: what names the job
  // (the inputs, or run's command).
  std::string remember(const std::string& command, const std::vector<std::string>& job);

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
  int64_t started_ms_ = 0;    // steady time at start(): the final report's "read in"
  analyze::Diagnosis final_;  // the session's last diagnosis, with the time it took
  std::unique_ptr<Hooks> hooks_;
  bool exit_on_met_ = false;
  bool stdout_gone_ = false;
  std::optional<watch::Alert> exit_alert_;
};

int run_watch(const Options& opt, const LiveOptions& lo);
// `firstfault run -- CMD...`: the command's stdout and stderr pass through unchanged, each
// to its own, while both go through the engine as two sources.
int run_run(const Options& opt, const LiveOptions& lo);
int run_history(const LiveOptions& lo);

}  // namespace ff::app::live
