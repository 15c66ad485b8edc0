// watch/watch.h — a live diagnosis: the engine over logs that are still being written.
//
// A Session owns a scan::LiveScan (each source's new bytes scanned once, events kept)
// and, at every tick(), re-runs the diagnosis over the events gathered so far when new
// ones came out (or, for the numbers alone, every second), compares it with what it has
// already said and returns the new Alerts: the first failure, collateral, symptoms, trend
// verdicts and stalls, each incident once (its fingerprint is the key). The diagnosis is
// the caller's DiagnoseFn, so it is exactly what `firstfault diagnose` would say of the
// same events. A stall is the watch's own finding: no progress line for k times the run's
// typical step interval (learned from when the steps arrived; SessionOptions fixes it),
// with the last step and the ranks that went silent first.
//
//   watch::Session s(engine, diagnose_fn, {});
//   uint32_t src = s.open("rank0.log");
//   s.feed(src, bytes, now_ms);
//   for (const watch::Alert& a : s.tick(now_ms)) print(a);
//   s.finish(unix_ms);  // and s.diagnosis()
//
// Thread-safety: one thread at a time. Memory: the LiveScan's (bounded), the alerts said.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "record/event.h"
#include "scan/scan.h"

namespace ff::watch {

// How much an alert matters, lowest first (the severity floor, --severity).
enum class Severity : uint8_t { kInfo, kWarning, kDegraded, kFailed };
const char* severity_name(Severity s);
bool parse_severity(std::string_view text, Severity& out);

// One thing the watch says, as it happens.
struct Alert {
  std::string kind;  // failure, collateral, symptom, trend, stall
  Severity severity = Severity::kInfo;
  std::string key;  // the incident (alerts with one key are said once)
  std::string id;   // KB entry id, a trend id ("loss-scale"), or "watch.stall"
  std::string title;
  std::string category;  // DESIGN.md's categories; a stall is "hang"
  std::optional<int> rank;
  std::string node;
  std::string source;  // where its decisive line is
  uint64_t line = 0;
  std::string text;     // the decisive line (as logged: escape it for a terminal)
  std::string fix;      // the first step of the fix
  std::string verify;   // the command that verifies the fix
  std::string verdict;  // the job's verdict when it was said
  std::string fingerprint;
  std::optional<double> step;  // stall: the last step; failure: the step it failed at
  std::vector<int> ranks;      // stall: the ranks that went silent first; collateral: its ranks
  double silent_s = 0;         // stall: seconds without a progress line
  double threshold_s = 0;      // stall: the silence that makes a stall
  int64_t unix_ms = 0;         // when it was said
};
// One JSON object on one line ("schema": "firstfault.alert/1").
std::string alert_json(const Alert& a);
// A few lines for a terminal; every text from the log escaped; wrapped at word boundaries to
// `width` columns (0: whole lines), but for the verify code, written whole line by line (it
// is pasted: base/wrap.h's kVerbatim).
std::string alert_text(const Alert& a, size_t width = 0);

struct SessionOptions {
  int64_t stall_after_ms = 0;  // 0: learned (stall_factor x the typical step interval)
  double stall_factor = 10;
  int64_t stall_floor_ms = 30000;   // a learned threshold is never shorter
  int stall_min_intervals = 3;      // step intervals seen before a learned threshold holds
  int64_t analyze_every_ms = 200;   // re-analysis at most this often while events come out
  int64_t numbers_every_ms = 1000;  // re-analysis for the numbers alone (trend verdicts)
  int64_t settle_quiet_ms = 500;    // a source quiet this long has its open tracebacks closed
  int64_t settle_open_ms = 2000;    // so has one whose traceback stays open this long
};

// The diagnosis of the events and the job as read so far (app: as `diagnose` makes it).
using DiagnoseFn = std::function<analyze::Diagnosis(const std::vector<record::Event>&, const scan::JobStats&)>;

// Per rank: how far it got and when its last step arrived (for stalls and metrics).
struct RankProgress {
  double step = 0;
  int64_t at_ms = 0;               // when that step arrived
  std::vector<int64_t> intervals;  // the last few intervals between steps, ms
};

class Session {
 public:
  Session(const scan::Engine& engine, DiagnoseFn diagnose, SessionOptions options = {},
          const scan::ScanOptions& scan_options = {});

  uint32_t open(const std::string& name);
  void feed(uint32_t source, std::string_view bytes, int64_t now_ms);
  void cut(uint32_t source);
  void close(uint32_t source, const Status& status = Status::Ok());
  // An input problem (a file that cannot be read): the verdict is never healthy.
  void input_error(const Error& e) {
    input_errors_.push_back(e);
    live_.add_error(e);
  }
  void note(const std::string& text) { notes_.push_back(text); }

  // Settles quiet sources, re-analyses when due, checks for a stall; the new alerts.
  std::vector<Alert> tick(int64_t now_ms, int64_t unix_ms);
  // Closes every source and diagnoses the whole (once): the alerts not said yet; then
  // diagnosis() is the final one.
  std::vector<Alert> finish(int64_t unix_ms);
  // The diagnosis as of the last analysis.
  const analyze::Diagnosis& diagnosis() const { return diagnosis_; }
  bool analysed() const { return analyses_ > 0; }

  const std::vector<record::Event>& events() const { return events_; }
  scan::LiveScan& live() { return live_; }
  const scan::JobStats& job() { return live_.job(); }
  const std::vector<Error>& input_errors() const { return input_errors_; }
  const std::vector<std::string>& notes() const { return notes_; }
  const std::map<int, RankProgress>& ranks() const { return ranks_; }
  // The stall threshold in force (0: none yet) and the time since the last step, ms.
  int64_t stall_threshold_ms() const;
  int64_t silent_ms(int64_t now_ms) const { return last_step_ms_ > 0 ? now_ms - last_step_ms_ : 0; }
  bool stalled() const { return stalled_; }
  // The job's end as its logs say it: a completion line, the launcher's failure table, or
  // a line of an entry tagged `job-end` (a scheduler's cancel, a launcher's exit); the
  // event that says it, or null (watch --until-done).
  const record::Event* job_end();
  // Alerts said so far, per (id, category, severity), for metrics.
  const std::map<std::tuple<std::string, std::string, std::string>, uint64_t>& alert_counts() const { return counts_; }
  uint64_t analyses() const { return analyses_; }

 private:
  void analyse();
  std::vector<Alert> alerts_from(const analyze::Diagnosis& d, int64_t unix_ms);
  std::optional<Alert> check_stall(int64_t now_ms, int64_t unix_ms);
  void track_progress(int64_t now_ms);
  bool say(Alert& a, std::vector<Alert>& out);

  const scan::Engine& engine_;
  DiagnoseFn diagnose_;
  SessionOptions options_;
  scan::LiveScan live_;
  std::vector<record::Event> events_;
  std::vector<Error> input_errors_;
  std::vector<std::string> notes_;
  analyze::Diagnosis diagnosis_;
  bool finished_ = false;
  uint64_t analyses_ = 0;
  bool dirty_ = false;  // new events since the last analysis
  uint64_t lines_at_analysis_ = 0;
  int64_t last_analysis_ms_ = -1;
  struct SourceState {
    int64_t last_data_ms = 0;
    int64_t open_since_ms = -1;  // events held by an open traceback since then
    bool settled = true;
    bool open = true;
  };
  std::vector<SourceState> sources_;
  std::set<std::string> said_;  // alert keys
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> counts_;
  std::map<int, RankProgress> ranks_;
  int64_t last_step_ms_ = 0;
  bool stalled_ = false;
  double stalled_at_step_ = -1;
  std::optional<Alert> stall_;  // the stall said while it lasts (kept in the final verdict)
  size_t end_scanned_ = 0;      // events looked at by job_end()
  std::optional<size_t> end_;   // the event that ended the job
};

}  // namespace ff::watch
