// `firstfault search`, `kb list` filters and `site`, run as the user runs them (issue 5).
#include <gtest/gtest.h>

#include "harness.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

using ff::test::quote;

struct CmdResult {
  int rc = -1;
  std::string out;
};

CmdResult run(const std::string& args) {
  ff::test::Outcome r = ff::test::run_firstfault(
      args, std::filesystem::temp_directory_path() / ("ff-search-test-" + std::to_string(::getpid())));
  return {r.rc, r.out};
}

nlohmann::json search_json(const std::string& query, int limit = 5) {
  CmdResult r = run("search --format json --limit " + std::to_string(limit) + " " + quote(query));
  EXPECT_EQ(r.rc, 0) << query;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// Issue 33: the JSON counts the good matches ("relevant"): every pattern match and the
// keyword hits scoring at least 0.4 of the best keyword hit (site::KeywordIndex::kRelevant,
// the cut-off search.js applies), a prefix of the ranking.
TEST(Search, Issue33RelevantCountsTheGoodMatches) {
  auto j = search_json("nccl timeout", 0);
  ASSERT_FALSE(j.is_discarded());
  const size_t relevant = j["relevant"].get<size_t>(), total = j["total"].get<size_t>();
  EXPECT_GT(relevant, 0u);
  EXPECT_LT(relevant, total);
  double best = -1;
  for (size_t i = 0; i < j["results"].size(); ++i) {
    const auto& r = j["results"][i];
    if (r["match"] != "keywords") continue;
    const double score = r["score"].get<double>();
    if (best < 0) best = score;
    EXPECT_EQ(i < relevant, score >= best * 0.4 - 1e-6) << i << " " << r.dump();
  }
}

TEST(Search, PastedRawNcclLineRanksItsPatternEntryFirst) {
  auto j = search_json(
      "[rank3]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600123 "
      "milliseconds before timing out.");
  ASSERT_FALSE(j.is_discarded());
  ASSERT_FALSE(j["results"].empty());
  const auto& first = j["results"][0];
  EXPECT_EQ(first["match"], "pattern");
  EXPECT_EQ(first["line"], 1);
  EXPECT_NE(first["id"].get<std::string>().find("watchdog"), std::string::npos) << first.dump();
  EXPECT_LE(j["results"].size(), 5u);
  EXPECT_GT(j["total"].get<size_t>(), j["results"].size());
}

TEST(Search, CudaOomLineAndCapturesAndKeywordFallback) {
  auto j = search_json(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB");
  ASSERT_FALSE(j["results"].empty());
  EXPECT_EQ(j["results"][0]["id"], "pytorch.cuda.out-of-memory");
  EXPECT_EQ(j["results"][0]["captures"]["size"], "2.00 GiB");
  // Then the entries that also match the line (the bare exception line's), then keywords.
  size_t kw = 1;
  while (kw < j["results"].size() && j["results"][kw]["match"] == "pattern") ++kw;
  ASSERT_LT(kw, j["results"].size());
  EXPECT_EQ(j["results"][kw]["match"], "keywords");
  EXPECT_LE(kw, 2u);

  auto k = search_json("cuda out of memory", 3);
  ASSERT_FALSE(k["results"].empty());
  EXPECT_EQ(k["results"][0]["id"], "pytorch.cuda.out-of-memory");
  EXPECT_EQ(k["results"][0]["match"], "keywords");
}

// The words people type (tests/data/search-queries.tsv) rank the entry they mean first.
// tests/site/check.mjs runs the same list through the site's JavaScript search.
TEST(Search, CommonQueriesRankTheEntryPeopleMeanFirst) {
  std::ifstream f(std::string(FF_SOURCE_DIR) + "/tests/data/search-queries.tsv");
  ASSERT_TRUE(f) << "tests/data/search-queries.tsv";
  std::string line;
  size_t queries = 0;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    std::string query = line.substr(0, tab), want = line.substr(tab + 1);
    auto j = search_json(query, 3);
    ASSERT_FALSE(j.is_discarded()) << query;
    ASSERT_FALSE(j["results"].empty()) << query;
    std::string got = j["results"][0]["id"];
    std::string next;
    for (size_t i = 1; i < j["results"].size(); ++i) next += " " + j["results"][i]["id"].get<std::string>();
    EXPECT_EQ(got, want) << "query \"" << query << "\" (then:" << next << ")";
    ++queries;
  }
  EXPECT_GE(queries, 15u);
}

TEST(Search, TextTableAndExitCodes) {
  CmdResult r = run("search nccl timeout --limit 3");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("#   ID", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("keywords: "), std::string::npos);
  EXPECT_EQ(run("search zzqqxxyy").rc, 1);
  CmdResult stdin_run = run("search - < /dev/null");
  EXPECT_EQ(stdin_run.rc, 1);
}

// Issue 33, item 8: the text stops at the relevance cut-off the JSON counts, and says
// how many weaker matches it left out; --limit 0 shows them all.
TEST(Search, Issue33TheTextStopsAtTheRelevanceCutOff) {
  auto rows = [](const std::string& out) {
    size_t n = 0;
    for (size_t at = out.find('\n'); at != std::string::npos && at + 1 < out.size(); at = out.find('\n', at + 1))
      if (std::isdigit(static_cast<unsigned char>(out[at + 1]))) ++n;
    return n;
  };
  bool cut_by_limit = false, cut_by_relevance = false;
  for (const char* q : {"nccl timeout", "gpu fallen off the bus"}) {
    auto j = search_json(q, 0);
    const size_t relevant = j["relevant"].get<size_t>(), total = j["total"].get<size_t>();
    ASSERT_GT(relevant, 0u) << q;
    ASSERT_LT(relevant, total) << q;
    CmdResult r = run(std::string("search ") + quote(q));
    EXPECT_EQ(r.rc, 0);
    const size_t shown = std::min<size_t>(10, relevant);  // the default --limit is 10
    EXPECT_EQ(rows(r.out), shown) << r.out;
    const size_t weaker = total - relevant;
    if (relevant > shown) {
      cut_by_limit = true;
      EXPECT_NE(r.out.find("(" + std::to_string(relevant - shown) + " more good match" +
                           (relevant - shown == 1 ? "" : "es") + ", " + std::to_string(weaker) +
                           " weaker; --limit 0 shows all)"),
                std::string::npos)
          << r.out;
    } else {
      cut_by_relevance = true;
      EXPECT_NE(r.out.find("(" + std::to_string(weaker) + " weaker match" + (weaker == 1 ? "" : "es") +
                           " not shown; --limit 0 shows all)"),
                std::string::npos)
          << r.out;
    }
    EXPECT_EQ(rows(run(std::string("search --limit 0 ") + quote(q)).out), total) << q;
  }
  EXPECT_TRUE(cut_by_limit && cut_by_relevance) << "the queries no longer reach both cases: pick others";
}

TEST(KbList, PhaseAndTagFilters) {
  CmdResult r = run("kb list --phase checkpoint --format json");
  ASSERT_EQ(r.rc, 0);
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.empty());
  for (const auto& e : j) EXPECT_EQ(e["phase"], "checkpoint") << e.dump();
  r = run("kb list --tag oom --format json");
  ASSERT_EQ(r.rc, 0);
  j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j.empty());
  for (const auto& e : j) {
    auto tags = e["tags"].get<std::vector<std::string>>();
    EXPECT_NE(std::find(tags.begin(), tags.end(), "oom"), tags.end()) << e.dump();
  }
  // A value no entry has is a mistake (2, the values named); values that exist but match
  // no entry together are an empty answer (1).
  EXPECT_EQ(run("kb list --tag no-such-tag-anywhere").rc, 2);
  EXPECT_EQ(run("kb list --phase checkpoint --category hang").rc, 1);
  EXPECT_EQ(run("kb list --phase no-such-phase").rc, 2);
}

TEST(Site, WritesTheEncyclopedia) {
  auto dir = std::filesystem::temp_directory_path() / ("ff-site-cli-" + std::to_string(::getpid()));
  CmdResult r = run("site " + quote(dir.string()));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(std::filesystem::exists(dir / "index.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "entries" / "pytorch.cuda.out-of-memory.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "frameworks" / "pytorch.html"));
  EXPECT_TRUE(std::filesystem::exists(dir / "assets" / "search-index.js"));
  std::filesystem::remove_all(dir);
}

}  // namespace
