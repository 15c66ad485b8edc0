// analyze/analyze.h — from events to a Diagnosis: first failure vs collateral.
//
// diagnose() is a pure function of the events (in (source, line) order), the sources'
// names and the knowledge base. It groups events into incidents (a joined traceback is
// one incident; a pattern hit outside a traceback is one), ranks the candidate root
// events (hardware first, then the ranks' own recognised failures, then unrecognised
// crashes, then launcher-summary facts, then collateral alone), orders them in time
// (sub-second times; whole-second ties and untimed lines by position), explains the
// rest as collateral, and fills fix and verification from the KB.
//
// Thread-safety: pure; no shared state.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "analyze/rules.h"
#include "kb/kb.h"
#include "metrics/metrics.h"
#include "record/event.h"

namespace ff::analyze {

// Numbers from the log (optional): progress-line series and the job's last time.
struct JobNumbers {
  const metrics::SeriesSet* series = nullptr;
  const metrics::Aliases* aliases = nullptr;
  int64_t last_time_us = record::kNoTime;
  record::Clock last_time_clock = record::Clock::kNone;
  // From `firstfault diff`: true for a line whose template also occurs in a healthy
  // control run. Such lines never become the primary failure (they are noise).
  std::function<bool(std::string_view)> seen_in_control;
  // The long-tail guess (a failure line no entry names): the entries whose words are
  // closest to a message, best first, each with the share of the message's words it
  // holds (0..1). app fills it with the encyclopedia's search (site::KeywordIndex); unset,
  // the guess uses the raising frame and the type alone.
  struct NearEntry {
    std::string id;
    double share = 0;
  };
  std::function<std::vector<NearEntry>(std::string_view)> nearest_entries;
  // What was not read (input errors, a read limit reached, a truncated stream): a job
  // with any is never healthy (rule verdict.incomplete-input); also Diagnosis::errors.
  std::vector<std::string> unread;
  // Lines that make the input a job's log even when nothing in it is an event or a
  // progress line (rule verdict.incomplete-log-lines): with a rank prefix, with a time,
  // that may start a traceback (or a launcher summary).
  uint64_t lines_with_rank = 0, lines_with_time = 0, traceback_starts = 0;
  // The reasoning rules that apply (all, unless a test switches some off).
  RuleSwitches rules = RuleSwitches::from_environment();
};

Diagnosis diagnose(const std::vector<record::Event>& events, const std::vector<SourceSummary>& sources,
                   const kb::KnowledgeBase& kb, const JobNumbers& numbers = {});

// Trend verdicts over the series (used by diagnose; exposed for tests).
std::vector<Verdict> judge_series(const metrics::SeriesSet& series, const metrics::Aliases& aliases,
                                  const std::vector<SourceSummary>& sources, int64_t last_time_us,
                                  record::Clock last_time_clock);

// The category guessed for an exception no entry recognises: from the innermost frame's
// file when a rule names it (kb/formats/exceptions.yaml `frames:`), else from the words of
// the message when known failures are close enough (`nearest`, best first), else from the
// exception type. `from` says which ("frame", "words", "type"), `evidence` what decided it.
struct Guess {
  std::string category;
  std::string from;
  std::string evidence;
};
Guess guess_failure(const kb::KnowledgeBase& kb, const std::string& exc_type, const std::string& frame,
                    const std::vector<JobNumbers::NearEntry>& nearest = {});
std::string guess_exception_category(const kb::KnowledgeBase& kb, const std::string& exc_type,
                                     const std::string& frame = {});
// A share of the message's words at least this large makes the closest entry's category
// the guess (the words rule of guess_failure).
inline constexpr double kGuessMinShare = 0.6;

}  // namespace ff::analyze
