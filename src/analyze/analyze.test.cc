#include "analyze/analyze.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ff::analyze {
namespace {

using record::Event;
using record::EventKind;

std::string entry_yaml(const std::string& id, const std::string& category, const std::string& severity = "fatal",
                       const std::string& precedence = "", const std::string& role = "root") {
  return "id: " + id + "\ntitle: " + id + "\ncategory: " + category + "\nseverity: " + severity +
         "\nphase: any\nframeworks: [x]\nsummary: s\nmechanism: m\naffected: [any]\nconfirm: [c]\n"
         "root_cause: r\nfix: [f]\nverify: v\n"
         "references: [{url: 'https://example.org'}]\npatterns:\n  - {id: p, role: " +
         role + ", " + (precedence.empty() ? "" : "precedence: " + precedence + ", ") + "literal: '" + id +
         " marker'}\nexamples: ['" + id + " marker']\n";
}

kb::KnowledgeBase test_kb() {
  auto r = kb::load({{"a.yaml", entry_yaml("t.oom", "gpu-memory")},
                     {"b.yaml", entry_yaml("t.peer-lost", "communication")},
                     {"c.yaml", entry_yaml("t.xid", "hardware", "fatal", "hardware")},
                     {"d.yaml", entry_yaml("t.timeout", "hang")},
                     {"e.yaml", entry_yaml("t.warn", "numerical", "warning")},
                     {"f.yaml", entry_yaml("t.nan", "numerical")},
                     {"g.yaml", entry_yaml("t.slow", "hang", "error", "", "symptom")},
                     {"h.yaml", "wrapper: true\n" + entry_yaml("t.wrap", "communication", "error")},
                     {"formats/exceptions.yaml",
                      "teardown: [KeyboardInterrupt]\nexceptions:\n  - {type: OSError, category: storage}\n"
                      "frames:\n  - {path: torch/utils/data/, category: data-pipeline}\n"}});
  EXPECT_TRUE(r.errors.empty());
  return std::move(r.kb);
}

Event hit(const std::string& entry, kb::Role role, uint64_t line, int rank, int64_t t_ms = record::kNoTime,
          uint32_t source = 0) {
  Event e;
  e.kind = EventKind::kPattern;
  e.entry_id = entry;
  e.pattern_id = "p";
  e.role = role;
  e.line = line;
  e.rank = rank;
  e.source = source;
  e.text = entry + " marker on rank " + std::to_string(rank);
  if (t_ms != record::kNoTime) {
    e.time_us = t_ms * 1000;
    e.clock = record::Clock::kWall;
    e.time_subsecond = true;
    e.time_text = std::to_string(t_ms);
  }
  return e;
}

std::vector<SourceSummary> one_source() {
  return {SourceSummary{"job.log", "plain", 100, 10, 0, true, "", {}, {}, {}}};
}

TEST(Diagnose, NoEventsIsUnknownNotHealthy) {
  kb::KnowledgeBase kb = test_kb();
  Diagnosis d = diagnose({}, one_source(), kb);
  EXPECT_EQ(d.verdict, VerdictKind::kUnknown);
  ASSERT_FALSE(d.reasons.empty());
  EXPECT_EQ(d.reasons[0].rule, "verdict.unknown-empty");
  EXPECT_FALSE(d.primary.has_value());
}

TEST(Diagnose, FirstRootWinsAndPeerLossIsCollateralExplainedByIt) {
  kb::KnowledgeBase kb = test_kb();
  std::vector<Event> ev = {hit("t.peer-lost", kb::Role::kCollateral, 5, 0, 1500),
                           hit("t.oom", kb::Role::kRoot, 7, 3, 1000),  // earlier in time, later in the file
                           hit("t.peer-lost", kb::Role::kCollateral, 9, 1, 1510)};
  ev[1].source = 1;
  Diagnosis d = diagnose(ev, {one_source()[0], one_source()[0]}, kb);
  ASSERT_TRUE(d.primary.has_value());
  EXPECT_EQ(d.verdict, VerdictKind::kFailed);
  EXPECT_EQ(d.primary->id, "t.oom");
  EXPECT_EQ(d.primary->rank, 3);
  ASSERT_EQ(d.collateral.size(), 1u);
  EXPECT_EQ(d.collateral[0].id, "t.peer-lost");
  EXPECT_EQ(d.collateral[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.collateral[0].count, 2);
  EXPECT_EQ(d.collateral[0].explained_by, "t.oom");
}

TEST(Diagnose, HardwareOutranksAnEarlierSoftwareFailure) {
  kb::KnowledgeBase kb = test_kb();
  std::vector<Event> ev = {hit("t.oom", kb::Role::kRoot, 1, 0, 1000), hit("t.xid", kb::Role::kRoot, 2, -1, 2000)};
  Diagnosis d = diagnose(ev, one_source(), kb);
  EXPECT_EQ(d.primary->id, "t.xid");
  EXPECT_EQ(d.primary->category, "hardware");
  ASSERT_FALSE(d.hypotheses.empty());
  EXPECT_EQ(d.hypotheses[0].id, "t.oom");
}

TEST(Diagnose, WarningSeverityAloneIsNoFailureButNoEndEither) {
  kb::KnowledgeBase kb = test_kb();
  Diagnosis d = diagnose({hit("t.warn", kb::Role::kRoot, 3, 0)}, one_source(), kb);
  EXPECT_EQ(d.verdict, VerdictKind::kIncomplete);
  ASSERT_EQ(d.symptoms.size(), 1u);
  EXPECT_EQ(d.symptoms[0].id, "t.warn");
}

TEST(Diagnose, OnlyCollateralStillFailsWithLowConfidence) {
  kb::KnowledgeBase kb = test_kb();
  Diagnosis d = diagnose({hit("t.peer-lost", kb::Role::kCollateral, 3, 0)}, one_source(), kb);
  EXPECT_EQ(d.verdict, VerdictKind::kFailed);
  EXPECT_EQ(d.primary->id, "t.peer-lost");
  EXPECT_LT(d.primary->confidence, 0.5);
}

// A traceback's final exception line (lines 9-12) that no entry names.
Event unnamed_exception(const std::string& type, const std::string& text) {
  Event e;
  e.kind = EventKind::kException;
  e.line = 12;
  e.exc_type = type;
  e.text = text;
  e.traceback_first = 9;
  e.traceback_last = 12;
  return e;
}

TEST(Diagnose, UnrecognisedExceptionGetsACategoryFromItsFrameOrType) {
  kb::KnowledgeBase kb = test_kb();
  Event e = unnamed_exception("OSError", "OSError: [Errno 5] Input/output error");
  Diagnosis d = diagnose({e}, one_source(), kb);
  EXPECT_EQ(d.primary->id, "unrecognized.OSError");
  EXPECT_EQ(d.primary->category, "storage");
  e.exc_frame = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py";
  d = diagnose({e}, one_source(), kb);
  EXPECT_EQ(d.primary->category, "data-pipeline");
}

// The long tail (issue 30): no entry names the line, so the category is a guess, from the
// raising frame first, then the closest entries' words, then the type; said as a guess.
TEST(Diagnose, AnUnnamedFailureIsGuessedFromTheFrameThenTheWordsThenTheType) {
  kb::KnowledgeBase kb = test_kb();
  Event e = unnamed_exception("OSError", "OSError: loss went non-finite in the reducer");
  JobNumbers n;
  n.nearest_entries = [](std::string_view) {
    return std::vector<JobNumbers::NearEntry>{{"t.nan", 0.8}, {"t.oom", 0.2}};
  };
  Diagnosis d = diagnose({e}, one_source(), kb, n);
  EXPECT_EQ(d.primary->basis, "guess");
  EXPECT_EQ(d.primary->category, "numerical");
  EXPECT_EQ(d.primary->guess_from, "words");
  ASSERT_EQ(d.primary->closest.size(), 1u);  // t.oom's share is below half the threshold
  EXPECT_EQ(d.primary->closest[0].id, "t.nan");
  EXPECT_NE(d.primary->summary.find("is a guess"), std::string::npos);
  // A frame rule decides before the words.
  e.exc_frame = "/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py";
  d = diagnose({e}, one_source(), kb, n);
  EXPECT_EQ(d.primary->category, "data-pipeline");
  EXPECT_EQ(d.primary->guess_from, "frame");
  // Words too far from every entry: the type.
  e.exc_frame.clear();
  n.nearest_entries = [](std::string_view) { return std::vector<JobNumbers::NearEntry>{{"t.nan", 0.4}}; };
  d = diagnose({e}, one_source(), kb, n);
  EXPECT_EQ(d.primary->category, "storage");
  EXPECT_EQ(d.primary->guess_from, "type");
}

// A wrapper (kb `wrapper: true`) on a line of its own takes the specific failure printed
// just before it on the same stream as its cause; alone, it is only a weak candidate.
TEST(Diagnose, AWrapperIsNamedByTheCausePrintedWithIt) {
  kb::KnowledgeBase kb = test_kb();
  std::vector<Event> ev = {hit("t.oom", kb::Role::kRoot, 10, 2), hit("t.wrap", kb::Role::kRoot, 14, 2)};
  Diagnosis d = diagnose(ev, one_source(), kb);
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->id, "t.oom");
  EXPECT_EQ(d.primary->basis, "wrapper-cause");
  EXPECT_EQ(d.primary->wrapper_id, "t.wrap");
  // An earlier wrapper with no cause near it loses to a specific failure elsewhere.
  ev = {hit("t.wrap", kb::Role::kRoot, 10, 1, 1000), hit("t.oom", kb::Role::kRoot, 500, 2, 5000)};
  d = diagnose(ev, one_source(), kb);
  EXPECT_EQ(d.primary->id, "t.oom");
  EXPECT_EQ(d.primary->basis, "entry");
  // The same two lines on one line: the specific hit names the incident.
  ev = {hit("t.wrap", kb::Role::kRoot, 10, 1), hit("t.oom", kb::Role::kRoot, 10, 1)};
  d = diagnose(ev, one_source(), kb);
  EXPECT_EQ(d.primary->id, "t.oom");
}

TEST(Diagnose, StragglerIsTheOnlyRankThatDidNotTimeOut) {
  kb::KnowledgeBase kb = test_kb();
  std::vector<Event> ev = {hit("t.timeout", kb::Role::kRoot, 10, 0, 1000),
                           hit("t.timeout", kb::Role::kRoot, 11, 1, 1001),
                           hit("t.timeout", kb::Role::kRoot, 12, 2, 1002)};
  auto src = one_source();
  src[0].ranks = {0, 1, 2, 3};
  Diagnosis d = diagnose(ev, src, kb);
  EXPECT_EQ(d.primary->id, "t.timeout");
  EXPECT_EQ(d.primary->rank, 3);
  EXPECT_NE(d.primary->rank_source.find("straggler"), std::string::npos);
  EXPECT_EQ(d.primary->evidence[0].rank, 0);  // the quoted line is rank 0's own
}

TEST(Diagnose, SkewedNodeClocksAreAlignedOnStepLines) {
  kb::KnowledgeBase kb = test_kb();
  kb::LoadResult full = kb::load(kb::embedded_files());
  metrics::Aliases aliases = metrics::Aliases::from_kb(full.kb.metric_specs);
  metrics::SeriesSet series;
  // Node B's clock is 4 s behind node A's: it logs the same steps 4 s "earlier".
  for (int step = 1; step <= 6; ++step) {
    metrics::ProgressLine p;
    p.has_step = true;
    p.step = step;
    p.samples.push_back({aliases.id("loss"), 1.0});
    series.add(0, p, 0, uint64_t(step), int64_t(step) * 1000000);
    series.add(1, p, 1, uint64_t(step), int64_t(step - 4) * 1000000);
  }
  // Truly, rank 0 fails at 10 s and rank 1 a second later; B's stamp says 7 s.
  Event a = hit("t.oom", kb::Role::kRoot, 20, 0, 10000, 0);
  Event b = hit("t.oom", kb::Role::kRoot, 20, 1, 7000, 1);
  std::vector<SourceSummary> src = {SourceSummary{"a.log", "plain", 1, 1, 0, true, "", {0}, {{0, "node-a"}}, {}},
                                    SourceSummary{"b.log", "plain", 1, 1, 0, true, "", {1}, {{1, "node-b"}}, {}}};
  JobNumbers numbers;
  numbers.series = &series;
  numbers.aliases = &aliases;
  Diagnosis d = diagnose({a, b}, src, kb, numbers);
  EXPECT_EQ(d.primary->rank, 0);
  bool noted = false;
  for (const auto& n : d.notes) noted = noted || n.find("node-b is -4.00 s") != std::string::npos;
  EXPECT_TRUE(noted);
  // Without the numbers the raw stamps would have picked rank 1.
  Diagnosis raw = diagnose({a, b}, src, kb);
  EXPECT_EQ(raw.primary->rank, 1);
}

TEST(Diagnose, RankFromLauncherSummaryWhenTheLineHasNone) {
  kb::KnowledgeBase kb = test_kb();
  Event root = hit("t.oom", kb::Role::kRoot, 5, -1);
  root.text = "t.oom marker: tried to allocate 2 GiB";
  Event lf;
  lf.kind = EventKind::kLauncherFailure;
  lf.line = 40;
  lf.rank = 6;
  lf.in_launcher_summary = true;
  lf.text = "t.oom marker: tried to allocate 2 GiB";
  Event lf2 = lf;
  lf2.rank = 1;
  lf2.text = "something else";
  Diagnosis d = diagnose({root, lf, lf2}, one_source(), kb);
  EXPECT_EQ(d.primary->rank, 6);
  EXPECT_EQ(d.primary->rank_source, "launcher summary (same error text)");
}

Event exception(const std::string& type, uint64_t first, uint64_t last, int rank = -1) {
  Event e;
  e.kind = EventKind::kException;
  e.line = last;
  e.rank = rank;
  e.exc_type = type;
  e.text = type + ": boom";
  e.traceback_first = first;
  e.traceback_last = last;
  return e;
}

// incident.teardown-is-collateral: the user's Ctrl-C before a real (weak) crash is not it.
TEST(Rules, ATeardownTracebackIsCollateral) {
  kb::KnowledgeBase kb = test_kb();
  Diagnosis d = diagnose({exception("KeyboardInterrupt", 1, 3), exception("OSError", 5, 8)}, one_source(), kb);
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->id, "unrecognized.OSError");
}

// incident.unrecognised-crash: a traceback whose only hit is a symptom is its exception's crash.
TEST(Rules, ATracebackWithOnlyASymptomHitIsItsCrash) {
  kb::KnowledgeBase kb = test_kb();
  Event sym = hit("t.slow", kb::Role::kSymptom, 10, -1);
  sym.traceback_first = 9;
  sym.traceback_last = 12;
  sym.exception_line = true;
  Diagnosis d = diagnose({exception("OSError", 9, 12), sym}, one_source(), kb);
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->id, "unrecognized.OSError");
  EXPECT_EQ(d.verdict, VerdictKind::kFailed);
}

// rank.all-alike: every rank failing alike at the same time names no rank.
TEST(Rules, EveryRankFailingAlikeNamesNoRank) {
  kb::KnowledgeBase kb = test_kb();
  auto src = one_source();
  src[0].ranks = {0, 1};
  Diagnosis d =
      diagnose({hit("t.nan", kb::Role::kRoot, 4, 0, 1000), hit("t.nan", kb::Role::kRoot, 5, 1, 1200)}, src, kb);
  ASSERT_TRUE(d.primary);
  EXPECT_FALSE(d.primary->rank.has_value());
  EXPECT_EQ(d.primary->rank_how, RankSource::kAllAlike);
}

// rank.pid-map: NCCL's host:pid on the line, mapped to a rank by the log's own lines.
TEST(Rules, TheProcessIdMapsToARank) {
  kb::KnowledgeBase kb = test_kb();
  Event e = hit("t.oom", kb::Role::kRoot, 4, -1);
  e.node = "gpu-03";
  e.pid = 29880;
  auto src = one_source();
  src[0].pid_rank = {{{"gpu-03", 29880}, 5}};
  Diagnosis d = diagnose({e}, src, kb);
  EXPECT_EQ(d.primary->rank, 5);
  EXPECT_EQ(d.primary->rank_how, RankSource::kPidMap);
}

// rank.local-single-node: the local rank is the rank when the job has one node.
TEST(Rules, TheLocalRankOnASingleNodeJob) {
  kb::KnowledgeBase kb = test_kb();
  Event e = hit("t.oom", kb::Role::kRoot, 4, -1);
  e.local_rank = 2;
  Diagnosis d = diagnose({e}, one_source(), kb);
  EXPECT_EQ(d.primary->rank, 2);
  EXPECT_EQ(d.primary->rank_how, RankSource::kLocalRankSingleNode);
}

struct Numbers {
  kb::KnowledgeBase full = kb::load(kb::embedded_files()).kb;
  metrics::Aliases aliases = metrics::Aliases::from_kb(full.metric_specs);
  metrics::SeriesSet series;
  void add(int rank, double step, const char* metric, double value) {
    metrics::ProgressLine p;
    p.has_step = true;
    p.step = step;
    p.samples.push_back({aliases.id(metric), value});
    series.add(rank, p, 0, uint64_t(step), int64_t(step) * 1000000);
  }
  JobNumbers job() {
    JobNumbers n;
    n.series = &series;
    n.aliases = &aliases;
    return n;
  }
};

// series.confirm: a numerical failure line with a non-finite loss in the numbers.
TEST(Rules, ANonFiniteLossConfirmsANumericalFailure) {
  kb::KnowledgeBase kb = test_kb();
  Numbers n;
  for (int s = 1; s <= 5; ++s) n.add(0, s, "loss", s < 5 ? 1.0 : std::nan(""));
  Diagnosis d = diagnose({hit("t.nan", kb::Role::kRoot, 40, 0)}, one_source(), kb, n.job());
  ASSERT_TRUE(d.primary);
  EXPECT_GE(d.primary->confidence, 0.95);
  EXPECT_GT(d.primary->evidence.size(), 1u);
}

// series.loss-scale-terminal: a loss scale halving to its floor, with no error line.
TEST(Rules, ACollapsedLossScaleIsAFailureWithoutAnErrorLine) {
  kb::KnowledgeBase kb = test_kb();
  Numbers n;
  double scale = 65536;
  for (int s = 1; s <= 20; ++s, scale = std::max(1.0, scale / 2)) n.add(0, s, "loss_scale", scale);
  Diagnosis d = diagnose({}, one_source(), kb, n.job());
  ASSERT_TRUE(d.primary);
  EXPECT_EQ(d.primary->id, "series.loss-scale-terminal");
  EXPECT_EQ(d.verdict, VerdictKind::kFailed);
}

// verdict.degraded-symptoms: an error-severity warning while no failure.
TEST(Rules, AnErrorSeverityWarningIsDegraded) {
  kb::KnowledgeBase kb = test_kb();
  Diagnosis d = diagnose({hit("t.slow", kb::Role::kSymptom, 3, 0)}, one_source(), kb);
  EXPECT_EQ(d.verdict, VerdictKind::kDegraded);
  EXPECT_EQ(d.reasons.back().rule, "verdict.degraded-symptoms");
}

// verdict.degraded-series: one rank much slower than the others.
TEST(Rules, AStragglerRankIsDegraded) {
  kb::KnowledgeBase kb = test_kb();
  Numbers n;
  for (int r = 0; r < 4; ++r)
    for (int s = 1; s <= 6; ++s) n.add(r, s, "step_time_ms", r == 3 ? 400 : 100);
  Diagnosis d = diagnose({}, one_source(), kb, n.job());
  EXPECT_EQ(d.verdict, VerdictKind::kDegraded);
  EXPECT_EQ(d.reasons.back().rule, "verdict.degraded-series");
}

// A rule switched off by name is off; an unknown name is reported.
TEST(Rules, SwitchesTakeNamesAndReportUnknownOnes) {
  RuleSwitches s;
  EXPECT_TRUE(s.on(Rule::kRecovered));
  auto unknown = s.disable("order.recovered, no.such-rule");
  EXPECT_FALSE(s.on(Rule::kRecovered));
  EXPECT_EQ(unknown, std::vector<std::string>{"no.such-rule"});
  EXPECT_EQ(rules().size(), static_cast<size_t>(Rule::kCount));
}

}  // namespace
}  // namespace ff::analyze
