// analyze/rules.h — the reasoning rules of diagnose(), named, in the order they apply.
//
// Each rule is one step a reader can follow (ARCHITECTURE.md, "Reasoning"); `firstfault
// rules` prints this table. A rule can be switched off by name (RuleSwitches), which a
// test build does from the environment (FIRSTFAULT_DISABLE_RULES=a,b) so that
// tools/rule-off-check can show, for every rule, a test that fails without it.
//
// Thread-safety: the table is immutable; RuleSwitches is a plain value.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ff::analyze {

enum class Rule : uint8_t {
  // Incidents
  kTeardownIsCollateral,  // a traceback ending in a teardown exception is collateral
  kUnrecognisedCrash,     // a traceback no entry names is an unrecognised crash of its type
  kWrapperCause,          // a wrapper (kb `wrapper: true`) takes the specific cause printed with it
  kGuessFromWords,        // an unnamed failure's category from the closest entries' words
  kHangAtExit,            // a teardown after the run's completion is a hang at exit (kb after_completion)
  // Precedence and order
  kPrecedence,      // hardware > root > weak > launcher summary > collateral
  kControlNoise,    // lines a healthy control also prints are noise (diff)
  kRecovered,       // an error followed by progress on the same rank is not the failure
  kClockAlignment,  // node clocks aligned on the step lines before ordering
  // Rank attribution, in order; the first that names a rank wins
  kRankLauncherSameText,   // the launcher table row with the primary's error text
  kRankLauncherExclusion,  // the only failed rank in the table without a collateral error
  kRankHangStraggler,      // a hang: the rank that never entered the stuck collective
  kRankAllAlike,           // every rank failed alike at the same time: no rank named
  kRankPidMap,             // NCCL's host:pid mapped to a rank
  kRankEcho,               // the primary's error text echoed on a line that names its rank
  kRankDetailLine,         // a detail line of the primary's message, matched by its entry, names the rank
  kRankLocalSingleNode,    // the local rank, on a single-node job
  kRankProgressBehind,     // the only rank whose last step is behind the others
  kRankOnlyRankNamed,      // a process's line in a log that names a single rank
  kNodeFromRank,           // the node from the rank -> node map the log states
  // Numbers
  kSeriesConfirm,            // a terminal series confirms a numerical primary
  kSeriesTerminalLossScale,  // a collapsed loss scale is a failure without an error line
  kSeriesEndsNonFinite,      // a loss or grad norm non-finite to the end, every step skipped: a failure
  // Verdict
  kVerdictDegradedSymptoms,    // error-severity warnings while no failure: degraded
  kVerdictDegradedRecovered,   // errors recovered from more than once: degraded
  kVerdictDegradedSeries,      // a straggler or a throughput drop: degraded
  kVerdictIncompleteInput,     // input not fully read: incomplete, never healthy
  kVerdictHealthyCompletion,   // a completion line of the framework: healthy
  kVerdictHealthyFinalStep,    // the last step reaches the stated total: healthy
  kVerdictIncompleteShort,     // progress stops short of the total: incomplete
  kVerdictIncompleteWarnings,  // only known warnings, no failure: incomplete, the warnings named benign
  kVerdictIncompleteLogLines,  // no event, but lines a log has (rank prefixes, tracebacks, levels): incomplete
  kVerdictUnknownEmpty,        // no events and no progress: unknown
  kCount
};

struct RuleInfo {
  Rule rule;
  const char* name;  // stable, used by switches and in Reason::rule
  const char* what;  // one line for `firstfault rules`
};

// Every rule, in the order diagnose() applies them.
const std::vector<RuleInfo>& rules();
const char* rule_name(Rule r);

struct RuleSwitches {
  std::bitset<static_cast<size_t>(Rule::kCount)> off;
  bool on(Rule r) const { return !off.test(static_cast<size_t>(r)); }
  // Switches the named rules off; returns the names that are no rule.
  std::vector<std::string> disable(std::string_view comma_separated);
  // FIRSTFAULT_DISABLE_RULES in builds with FF_RULE_SWITCHES (tests); all on otherwise.
  static RuleSwitches from_environment();
};

}  // namespace ff::analyze
