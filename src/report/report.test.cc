#include "report/report.h"

#include <gtest/gtest.h>

#include <limits>

namespace ff::report {
namespace {

using analyze::Diagnosis;

Diagnosis failed_with(const std::string& decisive) {
  Diagnosis d;
  d.verdict = analyze::VerdictKind::kFailed;
  analyze::Finding p;
  p.id = "pytorch.cuda.out-of-memory";
  p.title = "CUDA out of memory";
  p.category = "gpu-memory";
  p.rank = 517;
  p.evidence.push_back({"job.log", 12, 517, "", "", "", decisive});
  p.fix = {"Lower the batch size"};
  p.verify = "$ firstfault verify --before job.log --after NEW_LOGS";
  d.primary = p;
  return d;
}

// Issue 22: every report says where the verify command runs and what it shows when the
// fix worked, from the entry's verify {where, command, expect}.
TEST(AllFormats, VerifySaysWhereItRunsAndWhatToExpect) {
  Diagnosis d = failed_with("torch.OutOfMemoryError: CUDA out of memory.");
  d.primary->verify = "print(torch.cuda.max_memory_allocated() / 2**30)";
  d.primary->verify_where = "in-process";
  d.primary->verify_expect = "after the first step, below the card's memory minus **2 GiB**";
  TextOptions to;
  to.color = false;
  const std::string text = render_text(d, to);
  EXPECT_NE(text.find("Verify\n  add these lines to the training script:\n  print(torch.cuda.max_memory_allocated()"),
            std::string::npos) << text;
  EXPECT_NE(text.find("  Expect: after the first step"), std::string::npos) << text;
  const std::string json = render_json(d);
  EXPECT_NE(json.find("\"verify_where\": \"in-process\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"verify_expect\": \"after the first step"), std::string::npos) << json;
  const std::string md = render_markdown(d);
  EXPECT_NE(md.find("**Verify** add these lines to the training script:"), std::string::npos) << md;
  // Text is escaped for Markdown as the fix steps are (a --kb entry is someone else's text).
  EXPECT_NE(md.find("Expect: after the first step, below the card's memory minus \\*\\*2 GiB\\*\\*"), std::string::npos) << md;
  const std::string html = render_html(d);
  EXPECT_NE(html.find("<p class=\"muted\">add these lines to the training script:</p>"), std::string::npos);
  EXPECT_NE(html.find("<p>Expect: after the first step"), std::string::npos);
  // An entry that does not say where prints the command alone, as before.
  d.primary->verify_where.clear();
  d.primary->verify_expect.clear();
  EXPECT_EQ(render_text(d, to).find("Expect:"), std::string::npos);
  EXPECT_EQ(render_json(d).find("verify_where"), std::string::npos);
}

TEST(Html, TextFromALogIsEscapedAndNoScriptIsWritten) {
  Diagnosis d = failed_with("RuntimeError: <script>alert(1)</script> & \x1b[31mred\" onload=\"x");
  const std::string html = render_html(d);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; \xE2\x90\x9B[31mred&quot; onload=&quot;x"),
            std::string::npos)
      << "escaped, and ESC shown as its Control Picture";
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos) << "the page forbids any request";
}

TEST(Html, ThousandsOfRanksShareALaneAndTheOutliersKeepTheirs) {
  Diagnosis d = failed_with("torch.OutOfMemoryError: CUDA out of memory.");
  analyze::TimelineEntry root;
  root.id = "pytorch.cuda.out-of-memory";
  root.role = "root";
  root.ranks = {517};
  root.count = 1;
  analyze::TimelineEntry timeouts;
  timeouts.id = "nccl.watchdog-timeout";
  timeouts.role = "collateral";
  for (int r = 0; r < 4096; ++r)
    if (r != 517) timeouts.ranks.push_back(r);
  timeouts.count = 4095;
  d.timeline = {root, timeouts};
  const std::string html = render_html(d);
  EXPECT_NE(html.find(">rank 517<"), std::string::npos) << "the failing rank has its lane";
  EXPECT_NE(html.find(" other ranks<"), std::string::npos) << "the rest share one";
  size_t lanes = 0;
  for (size_t at = html.find("class=\"lane\""); at != std::string::npos; at = html.find("class=\"lane\"", at + 1))
    ++lanes;
  EXPECT_LE(lanes, 17u);
  EXPECT_LT(html.size(), 200000u) << "a mark per lane, not per rank";
}

// Issue 33: a spike spanning decades is drawn on a log axis, a series with no rank is
// never "rank -1", a constant series is named instead of drawn, every point says its step
// and value, and the first non-finite value is marked.
TEST(Html, Issue33ChartsUseALogAxisForASpikeAndNeverSayRankMinusOne) {
  Diagnosis d = failed_with("Loss is nan at step 45, stopping training");
  analyze::MetricSummary loss;
  loss.name = "loss";
  loss.points_rank = -1;
  for (int s = 1; s <= 40; ++s) loss.points.emplace_back(s, 1.0 + 0.01 * s);
  loss.points.emplace_back(41, 5.4e28);
  loss.points.emplace_back(42, std::numeric_limits<double>::quiet_NaN());
  loss.count = loss.points.size();
  loss.ranks = 1;
  analyze::MetricSummary lr;
  lr.name = "lr";
  lr.points_rank = -1;
  for (int s = 1; s <= 40; ++s) lr.points.emplace_back(s, 3e-4);
  d.series = {loss, lr};
  const std::string html = render_html(d);
  EXPECT_NE(html.find("data-metric=\"loss\" data-lines=\"1\" data-axis=\"log10\""), std::string::npos);
  EXPECT_EQ(html.find("rank -1"), std::string::npos);
  EXPECT_NE(html.find("no rank"), std::string::npos);
  EXPECT_EQ(html.find("data-metric=\"lr\""), std::string::npos) << "a constant series is not drawn";
  EXPECT_NE(html.find("the same value throughout: lr 0.0003"), std::string::npos);
  EXPECT_NE(html.find("<title>no rank · step 41: 5.4e+28</title>"), std::string::npos);
  EXPECT_NE(html.find("the first non-finite loss: nan at step 42"), std::string::npos);
  EXPECT_NE(html.find("class=\"legend\""), std::string::npos);
}

TEST(Text, WhenEveryRankFailedAlikeThatIsWhereNotRankUnknown) {
  Diagnosis d = failed_with("RuntimeError: Error(s) in loading state_dict for MLP:");
  d.primary->rank.reset();
  d.primary->rank_how = analyze::RankSource::kAllAlike;
  d.primary->rank_source = "all 4 ranks failed alike at the same time";
  for (const std::string& out : {render_text(d), render_html(d), render_markdown(d)}) {
    EXPECT_NE(out.find("all 4 ranks failed alike"), std::string::npos) << out;
    EXPECT_EQ(out.find("rank unknown"), std::string::npos) << out;
    EXPECT_EQ(out.find("rank from all"), std::string::npos) << "said once\n" << out;
  }
  d.primary->rank_how = analyze::RankSource::kNone;
  d.primary->rank_source.clear();
  EXPECT_NE(render_text(d).find("rank unknown (the log does not say)"), std::string::npos);
}

TEST(Markdown, ALineWithBackticksGetsALongerFence) {
  Diagnosis d = failed_with("ValueError: got ``` and ` in a name");
  const std::string md = render_markdown(d);
  EXPECT_NE(md.find("````\nValueError: got ``` and ` in a name\n````\n"), std::string::npos) << md;
  EXPECT_EQ(md.find('<'), std::string::npos) << "no HTML\n" << md;
}

}  // namespace
}  // namespace ff::report
