// fleet's unit tests: the textfile read back and added to, its escaping and its cap, the
// atomic write, a diagnosis JSON as an outcome, and the aggregator's periods and counts.
#include "fleet/fleet.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <atomic>
#include <vector>

namespace ff::fleet {
namespace {

namespace fs = std::filesystem;

JobOutcome failed(const std::string& entry, const std::string& category, const std::string& node, int64_t t,
                  double gpu_hours = 8) {
  JobOutcome o;
  o.verdict = "failed";
  o.entry = entry;
  o.category = category;
  o.title = entry + " title";
  o.fingerprint = entry + "|fp";
  o.node = node;
  o.partition = "gpu";
  o.account = "vision";
  o.user = "alice";
  o.gpu_hours = gpu_hours;
  o.ended_unix = t;
  return o;
}

TEST(Textfile, CountsReadBackAndAddedToAcrossRuns) {
  Textfile t;
  t.add(failed("nvidia.xid.79-fallen-off-bus", "hardware", "gpu-0042", 1000), {"partition"}, "batch-host");
  const std::string first = t.render();
  Textfile again = Textfile::parse(first);
  EXPECT_EQ(again.render(), first);
  again.add(failed("nvidia.xid.79-fallen-off-bus", "hardware", "gpu-0042", 2000, 4), {"partition"}, "batch-host");
  JobOutcome none;  // no failure found: counted by verdict only
  none.verdict = "incomplete";
  none.partition = "gpu";
  again.add(none, {"partition"}, "batch-host");
  const std::string text = again.render();
  const std::string labels =
      "{entry=\"nvidia.xid.79-fallen-off-bus\",category=\"hardware\",class=\"hardware\",node=\"gpu-0042\","
      "partition=\"gpu\"}";
  EXPECT_NE(text.find("firstfault_job_failures_total" + labels + " 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("firstfault_gpu_seconds_lost_total" + labels + " 43200\n"), std::string::npos) << text;
  EXPECT_NE(text.find("firstfault_last_failure_timestamp_seconds" + labels + " 2000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("firstfault_jobs_diagnosed_total{verdict=\"failed\",partition=\"gpu\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("firstfault_jobs_diagnosed_total{verdict=\"incomplete\",partition=\"gpu\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE firstfault_job_failures_total counter\n"), std::string::npos);
  // Without a node in the diagnosis, the epilog's node.
  Textfile t2;
  t2.add(failed("python.memory.memory-error", "host-memory", "", 5), {}, "batch-host");
  EXPECT_NE(t2.render().find("node=\"batch-host\"}"), std::string::npos) << t2.render();
}

TEST(Textfile, LabelValuesAreEscapedAndReadBackAsWritten) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_label_value("x\xff"), "x\xef\xbf\xbd");  // invalid UTF-8: U+FFFD
  Textfile t;
  JobOutcome o = failed("unrecognized.Weird\"Error}", "model-code", "n{1}", 7);
  o.partition = "p\\\"} 9\n";
  t.add(o, {"partition"}, "h");
  const std::string text = t.render();
  Textfile back = Textfile::parse(text);
  EXPECT_EQ(back.render(), text);
  EXPECT_EQ(back.series(), t.series());
  // Each sample on one line.
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_TRUE(line[0] == '#' || line.rfind("firstfault_", 0) == 0) << line;
}

TEST(Textfile, FailureSeriesAreCapped) {
  Textfile t;
  for (size_t i = 0; i < Textfile::kMaxFailureSeries + 10; ++i)
    t.add(failed("unrecognized.E" + std::to_string(i), "model-code", "n", 1), {}, "h");
  const std::string text = t.render();
  EXPECT_NE(text.find("entry=\"other\""), std::string::npos);
  EXPECT_EQ(text.find("unrecognized.E" + std::to_string(Textfile::kMaxFailureSeries + 5) + "\""), std::string::npos);
}

TEST(Textfile, WrittenAtomicallyWithMode0644WhateverTheUmask) {
  const fs::path dir = fs::temp_directory_path() / ("ff-textfile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const mode_t old = ::umask(077);
  JobOutcome o = failed("nvidia.xid.48-double-bit-ecc", "hardware", "gpu-7", 100);
  ASSERT_TRUE(update_textfile(dir.string(), "firstfault.prom", {"partition"}, o, "h").ok());
  ASSERT_TRUE(update_textfile(dir.string(), "firstfault.prom", {"partition"}, o, "h").ok());
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat((dir / "firstfault.prom").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  std::ifstream f(dir / "firstfault.prom");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("firstfault_job_failures_total{entry=\"nvidia.xid.48-double-bit-ecc\""), std::string::npos);
  EXPECT_NE(ss.str().find("} 2\n"), std::string::npos) << ss.str();
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file is left";
  EXPECT_FALSE(update_textfile((dir / "nosuch").string(), "firstfault.prom", {}, o, "h").ok());
  fs::remove_all(dir);
}

// Epilogs of jobs that end together on one node: each update waits for the folder's lock,
// so every job is counted.
TEST(Textfile, ConcurrentWritersAreAllCounted) {
  const fs::path dir = fs::temp_directory_path() / ("ff-textfile-c-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::thread> writers;
  std::atomic<int> errors{0};
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        if (!update_textfile(dir.string(), "firstfault.prom", {},
                             failed("nvidia.xid.79-fallen-off-bus", "hardware", "g", 1), "h")
                 .ok())
          ++errors;
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(errors.load(), 0);
  std::ifstream f(dir / "firstfault.prom");
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("firstfault_job_failures_total{entry=\"nvidia.xid.79-fallen-off-bus\",category=\"hardware\","
                          "class=\"hardware\",node=\"g\"} 80\n"),
            std::string::npos)
      << ss.str();
  fs::remove_all(dir);
}

TEST(Outcome, FromTheEpilogsJsonAndFromAPlainDiagnosis) {
  const std::string epilog = R"({"schema":"firstfault.diagnosis/1","verdict":"failed",
    "primary":{"id":"nvidia.xid.79-fallen-off-bus","title":"GPU fell off the bus","category":"hardware","node":"gpu-3",
      "fingerprint":"nvidia.xid.79-fallen-off-bus|Xid 79","evidence":[{"text":"x"}]},
    "timeline":[1,2,3],
    "job":{"id":"42","user":"bob","partition":"gpu","node_list":"gpu-[3-4]","gpu_hours":16.5,"ended":"2026-11-30T04:10:28Z"}})";
  auto o = outcome_from_json(epilog, "a.json", 5);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o.value().entry, "nvidia.xid.79-fallen-off-bus");
  EXPECT_EQ(o.value().category, "hardware");
  EXPECT_EQ(o.value().node, "gpu-3");
  EXPECT_EQ(o.value().job_id, "42");
  EXPECT_DOUBLE_EQ(o.value().gpu_hours, 16.5);
  EXPECT_EQ(day_text(o.value().ended_unix), "2026-11-30");
  EXPECT_EQ(o.value().ended_unix % 86400, 4 * 3600 + 10 * 60 + 28);
  auto plain = outcome_from_json(R"({"schema":"firstfault.diagnosis/1","verdict":"healthy","primary":null})", "b", 77);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain.value().entry, "");
  EXPECT_EQ(plain.value().ended_unix, 77);
  EXPECT_FALSE(outcome_from_json("{\"a\":1}", "c", 0).ok());
  EXPECT_FALSE(outcome_from_json("not json", "d", 0).ok());
}

TEST(Aggregator, PeriodsHardwareNodesAndRecurrence) {
  const int64_t day = 86400, d0 = *parse_day("2026-11-01");
  Aggregator agg(Period{d0 + 7 * day, d0 + 14 * day}, Period{d0, d0 + 7 * day});
  // The week before: one hardware failure.
  agg.add(failed("nvidia.xid.79-fallen-off-bus", "hardware", "gpu-1", d0 + 2 * day));
  // This week: gpu-1 twice more (hardware), an OOM three times on several nodes.
  agg.add(failed("nvidia.xid.79-fallen-off-bus", "hardware", "gpu-1", d0 + 8 * day));
  agg.add(failed("nvidia.xid.48-double-bit-ecc", "hardware", "gpu-1", d0 + 9 * day));
  for (int i = 0; i < 3; ++i)
    agg.add(failed("pytorch.cuda.out-of-memory", "gpu-memory", "gpu-" + std::to_string(5 + i), d0 + (8 + i) * day, 2));
  JobOutcome healthy;
  healthy.verdict = "incomplete";
  healthy.ended_unix = d0 + 10 * day;
  agg.add(healthy);
  agg.add(failed("x", "hang", "n", d0 + 40 * day));  // outside both
  agg.skipped("junk.json", "not JSON");
  const Report r = agg.report();
  EXPECT_EQ(r.read, 8);
  EXPECT_EQ(r.outside, 1);
  EXPECT_EQ(r.skipped, 1);
  EXPECT_EQ(r.current.jobs, 6);
  EXPECT_EQ(r.current.failures, 5);
  EXPECT_EQ(r.current.hardware, 2);
  EXPECT_EQ(r.current.software, 3);
  EXPECT_DOUBLE_EQ(r.current.gpu_hours_lost, 8 + 8 + 3 * 2);
  EXPECT_EQ(r.previous.failures, 1);
  EXPECT_EQ(r.current.by_category.at("gpu-memory"), 3);
  ASSERT_TRUE(r.nodes.count("gpu-1"));
  EXPECT_EQ(r.nodes.at("gpu-1").hardware, 2);
  ASSERT_FALSE(r.fingerprints.empty());
  EXPECT_EQ(r.fingerprints[0].entry, "pytorch.cuda.out-of-memory");
  EXPECT_EQ(r.fingerprints[0].count, 3);
  EXPECT_EQ(day_text(r.fingerprints[0].first_seen), "2026-11-09");
  EXPECT_EQ(day_text(r.fingerprints[0].last_seen), "2026-11-11");
  EXPECT_EQ(r.per_day.size(), 3u);

  const std::string html = render_html(r, {});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("gpu-1"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  const std::string markdown = render_markdown(r, {});
  EXPECT_NE(markdown.find("| gpu-memory | software | 3 |"), std::string::npos) << markdown;
  EXPECT_NE(markdown.find("| hardware | 2 | 1 | +1 (x2.0) |"), std::string::npos) << markdown;
  const std::string json = render_json(r, {});
  EXPECT_NE(json.find("\"schema\": \"firstfault.fleet/1\""), std::string::npos);
  EXPECT_NE(json.find("\"repeat_hardware_nodes\""), std::string::npos);
}

TEST(Aggregator, HostileTextIsEscapedInEveryFormat) {
  Aggregator agg(Period{}, std::nullopt);
  agg.add(failed("unrecognized.<script>alert(1)</script>", "model-code", "n|<b>", 100));
  agg.add(failed("unrecognized.<script>alert(1)</script>", "model-code", "n|<b>", 200));
  const Report r = agg.report();
  const std::string html = render_html(r, {});
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("n|<b>"), std::string::npos);
  EXPECT_NE(html.find("n|&lt;b&gt;"), std::string::npos);
  const std::string md = render_markdown(r, {});
  EXPECT_EQ(md.find("<script>"), std::string::npos);
}

TEST(Days, BothWays) {
  EXPECT_EQ(day_text(0), "1970-01-01");
  EXPECT_EQ(day_text(*parse_day("2026-02-28") + 86400), "2026-03-01");
  EXPECT_FALSE(parse_day("2026-13-01"));
  EXPECT_FALSE(parse_day("yesterday"));
}

}  // namespace
}  // namespace ff::fleet
