#include "match/match.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace ff::match {
namespace {

std::vector<PatternSpec> specs() {
  return {
      {10, R"(CUDA out of memory\. Tried to allocate (?P<size>[0-9.]+ [KMG]iB))"},
      {11, R"(NCCL WARN)"},
      {12, R"(Timed out waiting (?P<ms>\d+)ms for (?P<op>\w+) operation)"},
  };
}

void check_backend(const CompileOptions& opts) {
  auto db = Database::compile(specs(), opts);
  ASSERT_TRUE(db.ok()) << db.error().to_string();
  Scanner s(*db.value());
  std::vector<uint32_t> hits;
  s.scan("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)", hits);
  ASSERT_EQ(hits, std::vector<uint32_t>{10});
  std::map<std::string, std::string> caps;
  std::pair<size_t, size_t> span;
  ASSERT_TRUE(db.value()->captures(10, "x CUDA out of memory. Tried to allocate 2.00 GiB", &caps, &span));
  EXPECT_EQ(caps["size"], "2.00 GiB");
  EXPECT_EQ(span.first, 2u);
  hits.clear();
  s.scan("host:1:2 [0] NCCL WARN Timed out waiting 20000ms for recv operation", hits);
  EXPECT_EQ(hits, (std::vector<uint32_t>{11, 12}));
  hits.clear();
  s.scan("nothing to see here", hits);
  EXPECT_TRUE(hits.empty());
  // Invalid UTF-8 in a line must not prevent a match.
  hits.clear();
  s.scan(std::string("\xff\xfe NCCL WARN \xc0"), hits);
  EXPECT_EQ(hits, std::vector<uint32_t>{11});
}

TEST(Match, Re2Backend) {
  CompileOptions o;
  o.use_vectorscan = false;
  check_backend(o);
}

TEST(Match, VectorscanBackendAndCache) {
  auto dir = std::filesystem::temp_directory_path() / ("ff-match-test-" + std::to_string(::getpid()));
  CompileOptions o;
  o.cache_dir = dir.string();
  o.cache_key = 42;
  check_backend(o);  // compiles and stores
  auto again = Database::compile(specs(), o);
  ASSERT_TRUE(again.ok());
#ifdef FF_HAVE_VECTORSCAN
  EXPECT_EQ(again.value()->backend(), "vectorscan (cached)");
#endif
  check_backend(o);  // served from the cache
  std::filesystem::remove_all(dir);
}

TEST(Match, RejectedPatternFallsBackToRe2) {
  // Vectorscan refuses a pattern that can match the empty string; it must still be
  // served (by RE2) and listed as rejected, never silently dropped.
  std::vector<PatternSpec> s = {{1, "abc"}, {2, "q*"}};
  auto db = Database::compile(s, {});
  ASSERT_TRUE(db.ok());
  Scanner sc(*db.value());
  std::vector<uint32_t> hits;
  sc.scan("zz abc", hits);
  EXPECT_EQ(hits, (std::vector<uint32_t>{1, 2}));
#ifdef FF_HAVE_VECTORSCAN
  ASSERT_EQ(db.value()->rejected().size(), 1u);
  EXPECT_EQ(db.value()->rejected()[0].id, 2u);
#endif
}

// Vectorscan 5.4.9 misses `[^,]+,` when the class spans more than about 70 bytes; the
// relaxed form and the RE2 confirmation find it, and still refuse what RE2 refuses.
TEST(Match, LongNegatedClassSpansMatchAndAreConfirmed) {
  std::vector<PatternSpec> s = {{1, R"(version `GLIBCXX_(?P<v>[0-9.]+)' not found \(required by (?P<lib>[^)]+)\))"},
                                {2, R"(X [^,]+,)"}};
  for (bool vs : {true, false}) {
    CompileOptions o;
    o.use_vectorscan = vs;
    auto db = Database::compile(s, o);
    ASSERT_TRUE(db.ok());
    Scanner sc(*db.value());
    std::vector<uint32_t> hits;
    sc.scan("ImportError: /usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.32' not found (required by "
            "/home/user/miniconda3/envs/train/lib/python3.10/site-packages/torch/lib/libtorch_python.so)",
            hits);
    EXPECT_EQ(hits, std::vector<uint32_t>{1}) << (vs ? "vectorscan" : "re2");
    hits.clear();
    sc.scan("X " + std::string(200, 'a') + ",", hits);
    EXPECT_EQ(hits, std::vector<uint32_t>{2});
    hits.clear();
    // The relaxed form (`X .+,`) would take this line; the pattern itself does not.
    sc.scan("X ,a,", hits);
    EXPECT_TRUE(hits.empty());
    hits.clear();
    sc.scan("X a,", hits);
    EXPECT_EQ(hits, std::vector<uint32_t>{2});
  }
  std::string rx = R"(a [^)]+\) b [^\]x]* c [^y] d [xy]+ e \[^z]+)";
  EXPECT_TRUE(relax_negated_repeats(rx));
  EXPECT_EQ(rx, R"(a .+\) b .* c [^y] d [xy]+ e \[^z]+)");
  std::string same = "no [classes] here";
  EXPECT_FALSE(relax_negated_repeats(same));
}

// A progress line's shape (pieces with numbers between them): whether some pattern could
// match a line of it. False only when none can; a number can spell nan, inf and digits.
TEST(Match, AShapeThatNoPatternCanMatchIsSaidSo) {
  const std::vector<PatternSpec> pats = {
      {1, R"(CUDA out of memory\. Tried to allocate (?P<size>[0-9.]+ [KMG]iB))"},
      {2, R"((?i)loss is (?:nan|inf))"},
      {3, R"(exit code (?P<code>[0-9]+))"},
  };
  for (bool vs : {false, true}) {
    CompileOptions o;
    o.use_vectorscan = vs;
    auto db = Database::compile(pats, o);
    ASSERT_TRUE(db.ok());
    const Database& d = *db.value();
    EXPECT_FALSE(d.may_match_between_numbers({"step ", " | loss ", " | lr ", ""}));
    EXPECT_FALSE(d.may_match_between_numbers({"train: step ", "/", ""}));
    // "Loss is " + a number that reads "nan": pattern 2 (any case).
    EXPECT_TRUE(d.may_match_between_numbers({"step ", " | Loss is ", ""}));
    EXPECT_TRUE(d.may_match_between_numbers({"worker exit code ", ""}));
    // "exit code" spelt across a number would need a 'c' in it: a number holds none.
    EXPECT_FALSE(d.may_match_between_numbers({"exit ", "ode ", ""}));
  }
  // A pattern that requires no literal (FilteredRE2 cannot filter it): any line may match.
  auto any = Database::compile({{1, R"([a-z]+ [0-9]+)"}, {2, R"(NCCL WARN)"}}, {});
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any.value()->may_match_between_numbers({"step ", ""}));
}

TEST(Match, VectorscanSyntax) { EXPECT_EQ(to_vectorscan_syntax(R"(a (?P<x>\d+) \(?P<)"), R"(a (\d+) \(?P<)"); }

}  // namespace
}  // namespace ff::match
