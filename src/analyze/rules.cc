#include "analyze/rules.h"

#include <cstdlib>

#include "analyze/diagnosis.h"
#include "base/strings.h"

namespace ff::analyze {

const std::vector<RuleInfo>& rules() {
  static const std::vector<RuleInfo> kRules = {
      {Rule::kTeardownIsCollateral, "incident.teardown-is-collateral",
       "a traceback ending in a teardown exception (kb/formats/exceptions.yaml: teardown) is collateral"},
      {Rule::kUnrecognisedCrash, "incident.unrecognised-crash",
       "a traceback no entry names is a crash of its exception type, category guessed from the type"},
      {Rule::kWrapperCause, "incident.wrapper-cause",
       "a wrapper's message (kb `wrapper: true`: DistBackendError, a launcher's exit code, the watchdog's echo) "
       "is named by the specific failure printed with it; alone, it is a weak candidate"},
      {Rule::kGuessFromWords, "incident.guess-from-words",
       "a failure no entry names takes the category of the closest known failure by its words (the encyclopedia's "
       "search) when no frame rule decides"},
      {Rule::kHangAtExit, "incident.hang-at-exit",
       "a teardown line after the run reported its completion (kb `after_completion`: torchrun's death signal, the "
       "exit barrier) is a hang at exit, named by the entry it points to"},
      {Rule::kPrecedence, "order.precedence",
       "candidates by the KB's precedence: hardware > root > weak > launcher summary > collateral"},
      {Rule::kControlNoise, "order.control-noise", "lines a healthy control run also prints are noise (diff)"},
      {Rule::kRecovered, "order.recovered",
       "an error followed by progress on the same rank is not the job's failure; it is listed as recovered"},
      {Rule::kClockAlignment, "order.clock-alignment",
       "node clocks are aligned on the step lines every rank prints, then the earliest candidate wins"},
      {Rule::kRankLauncherSameText, "rank.launcher-same-text",
       "the rank of the launcher table row whose error text is the primary's"},
      {Rule::kRankLauncherExclusion, "rank.launcher-exclusion",
       "the only failed rank of the launcher table whose error is not collateral"},
      {Rule::kRankHangStraggler, "rank.hang-straggler",
       "a hang: the rank whose last enqueued work is below the stuck collective, or the only one without a timeout"},
      {Rule::kRankAllAlike, "rank.all-alike", "every rank reports the failure at the same time: no rank initiated it"},
      {Rule::kRankPidMap, "rank.pid-map", "the line's host:pid, mapped to a rank by NCCL's or the launcher's lines"},
      {Rule::kRankEcho, "rank.echo",
       "the primary's error text echoed on a line that names a rank (the watchdog's \"[Rank 1] ... terminated with "
       "exception: <text>\" under an unprefixed traceback): that rank"},
      {Rule::kRankDetailLine, "rank.detail-line",
       "a line printed with the primary's message (within its span), matched by the same entry, names one rank "
       "(DDP's \"Parameters which did not receive grad for rank 3: ...\"): that rank"},
      {Rule::kRankLocalSingleNode, "rank.local-single-node", "the local rank, when the job runs on one node"},
      {Rule::kRankProgressBehind, "rank.progress-behind",
       "the only rank whose last logged step is behind all the others"},
      {Rule::kRankOnlyRankNamed, "rank.only-rank-named",
       "a line of a rank's process (NCCL's host:pid:tid) in a log whose lines name one rank only: that rank"},
      {Rule::kNodeFromRank, "node.from-rank", "the node of the primary's rank, from the rank -> node lines of the log"},
      {Rule::kSeriesConfirm, "series.confirm",
       "a terminal loss scale or a non-finite loss confirms a numerical primary"},
      {Rule::kSeriesTerminalLossScale, "series.loss-scale-terminal",
       "a loss scale halving to its floor is a numerical failure even without an error line"},
      {Rule::kSeriesEndsNonFinite, "series.ends-non-finite",
       "a loss or grad norm non-finite to the last value logged, every iteration skipped, or nan iterations in the "
       "last interval is a numerical failure even without an error line"},
      {Rule::kVerdictDegradedSymptoms, "verdict.degraded-symptoms",
       "no failure, but warnings of an error-severity entry (not the advisory lines of a fatal one): degraded"},
      {Rule::kVerdictDegradedRecovered, "verdict.degraded-recovered",
       "no failure, but errors recovered from that keep coming (two or more, the run after the last no longer than "
       "the stretch they came over): degraded"},
      {Rule::kVerdictDegradedSeries, "verdict.degraded-series",
       "no failure, but a straggler rank or a throughput drop in the numbers: degraded"},
      {Rule::kVerdictIncompleteInput, "verdict.incomplete-input",
       "part of the input was not read (an error, a read limit, a truncated stream): never healthy"},
      {Rule::kVerdictHealthyCompletion, "verdict.healthy-completion",
       "a completion line (the framework's own, or the launcher's success): healthy"},
      {Rule::kVerdictHealthyFinalStep, "verdict.healthy-final-step",
       "every rank's last step reaches the stated total (step 80/80): healthy"},
      {Rule::kVerdictIncompleteShort, "verdict.incomplete-short",
       "progress stops short of the stated total, or no end is shown: incomplete"},
      {Rule::kVerdictIncompleteWarnings, "verdict.incomplete-warnings",
       "no failure, only warnings the KB knows: incomplete, the warnings named as benign here"},
      {Rule::kVerdictIncompleteLogLines, "verdict.incomplete-log-lines",
       "no event and no progress line, but rank prefixes, timestamps or a traceback: a job's log, incomplete"},
      {Rule::kVerdictUnknownEmpty, "verdict.unknown-empty",
       "no line reads as a job log (no event, no progress line): unknown"},
  };
  return kRules;
}

const char* rule_name(Rule r) {
  for (const auto& info : rules()) {
    if (info.rule == r) return info.name;
  }
  return "?";
}

std::vector<std::string> RuleSwitches::disable(std::string_view names) {
  std::vector<std::string> unknown;
  for (std::string_view n : split(names, ',')) {
    n = trim(n);
    if (n.empty()) continue;
    bool found = false;
    for (const auto& info : rules()) {
      if (n == info.name) off.set(static_cast<size_t>(info.rule)), found = true;
    }
    if (!found) unknown.emplace_back(n);
  }
  return unknown;
}

RuleSwitches RuleSwitches::from_environment() {
  RuleSwitches s;
#ifdef FF_RULE_SWITCHES
  if (const char* v = std::getenv("FIRSTFAULT_DISABLE_RULES"); v && *v) (void)s.disable(v);
#endif
  return s;
}

const char* verdict_name(VerdictKind v) {
  switch (v) {
    case VerdictKind::kFailed: return "failed";
    case VerdictKind::kDegraded: return "degraded";
    case VerdictKind::kHealthy: return "healthy";
    case VerdictKind::kIncomplete: return "incomplete";
    case VerdictKind::kUnknown: return "unknown";
  }
  return "unknown";
}

int verdict_exit_code(VerdictKind v) {
  switch (v) {
    case VerdictKind::kHealthy: return 0;
    case VerdictKind::kFailed: return 1;
    case VerdictKind::kDegraded: return 5;
    case VerdictKind::kIncomplete: return 3;
    case VerdictKind::kUnknown: return 4;
  }
  return 4;
}

const char* rank_source_name(RankSource s) {
  switch (s) {
    case RankSource::kNone: return "none";
    case RankSource::kPrefix: return "prefix";
    case RankSource::kLauncherSummary: return "launcher-summary";
    case RankSource::kLauncherSameText: return "launcher-same-text";
    case RankSource::kLauncherExclusion: return "launcher-exclusion";
    case RankSource::kHangStraggler: return "hang-straggler";
    case RankSource::kAllAlike: return "all-alike";
    case RankSource::kPidMap: return "pid-map";
    case RankSource::kLocalRankSingleNode: return "local-rank-single-node";
    case RankSource::kProgressBehind: return "progress-behind";
    case RankSource::kOnlyRankNamed: return "only-rank-named";
    case RankSource::kEcho: return "echo";
    case RankSource::kDetailLine: return "detail-line";
  }
  return "none";
}

}  // namespace ff::analyze
