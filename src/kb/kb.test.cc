#include "kb/kb.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace ff::kb {
namespace {

const char* kGood = R"(id: test.good
title: Good entry
category: gpu-memory
severity: fatal
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [look]
root_cause: r
fix: [a]
verify: v
references: [{url: 'https://example.org', note: n}]
patterns:
  - {id: p1, role: root, literal: 'CUDA error: out of memory'}
examples: ['RuntimeError: CUDA error: out of memory']
)";

TEST(KbLoad, EmbeddedKnowledgeBaseLoadsWithoutErrors) {
  LoadResult r = load(embedded_files());
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  EXPECT_GE(r.kb.entries.size(), 60u);
  EXPECT_FALSE(r.kb.prefixes.empty());
  EXPECT_FALSE(r.kb.exceptions.empty());
  EXPECT_NE(r.kb.hash, 0u);
}

TEST(KbLoad, EveryCategoryIsCovered) {
  LoadResult r = load(embedded_files());
  for (const auto& c : categories()) {
    bool found = false;
    for (const auto& e : r.kb.entries) found = found || e.category == c;
    EXPECT_TRUE(found) << "no entry for category " << c;
  }
}

TEST(KbLoad, BadEntryIsReportedWithFileLineAndFieldAndOthersStillLoad) {
  std::string bad = kGood;
  bad.replace(bad.find("test.good"), 9, "test.bad");
  bad.replace(bad.find("category: gpu-memory"), 20, "category: gpu-mem");
  std::string bad_regex = kGood;
  bad_regex.replace(bad_regex.find("test.good"), 9, "test.badrx");
  bad_regex.replace(bad_regex.find("literal: 'CUDA error: out of memory'"), 36, "regex: 'abc(def'");
  LoadResult r = load({{"a/good.yaml", kGood}, {"a/bad.yaml", bad}, {"a/badrx.yaml", bad_regex},
                       {"a/broken.yaml", "id: [unclosed\n"}});
  ASSERT_EQ(r.kb.entries.size(), 1u);
  EXPECT_NE(r.kb.find("test.good"), nullptr);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].where.file, "a/bad.yaml");
  EXPECT_EQ(r.errors[0].where.line, 3);
  EXPECT_EQ(r.errors[0].where.field, "category");
  EXPECT_EQ(r.errors[1].where.file, "a/badrx.yaml");
  EXPECT_NE(r.errors[1].message.find("does not compile"), std::string::npos);
  EXPECT_EQ(r.errors[2].where.file, "a/broken.yaml");
  EXPECT_NE(r.errors[2].message.find("YAML syntax error"), std::string::npos);
}

TEST(KbLoad, MissingRequiredFieldIsNamed) {
  std::string s = kGood;
  s.erase(s.find("verify: v\n"), 10);
  LoadResult r = load({{"x.yaml", s}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].where.field, "verify");
  EXPECT_TRUE(r.kb.entries.empty());
}

// Each required field of the schema (kb/README.md), left out in turn: the entry is
// rejected and the error names the field.
TEST(KbLoad, EveryRequiredFieldMissingIsNamed) {
  for (std::string field : {"id", "title", "category", "severity", "phase", "frameworks", "summary", "mechanism",
                            "affected", "confirm", "root_cause", "fix", "verify", "references", "patterns",
                            "examples"}) {
    std::string s = kGood;
    size_t at = s.rfind("\n" + field + ":") + 1;
    if (s.rfind(field + ":", 0) == 0) at = 0;
    size_t end = s.find('\n', at) + 1;
    while (end < s.size() && s[end] == ' ') end = s.find('\n', end) + 1;  // the field's indented lines
    s.erase(at, end - at);
    LoadResult r = load({{"x.yaml", s}});
    ASSERT_FALSE(r.errors.empty()) << "no error without " << field;
    EXPECT_EQ(r.errors[0].where.field, field);
    EXPECT_EQ(r.errors[0].where.file, "x.yaml");
    EXPECT_TRUE(r.kb.entries.empty()) << field;
  }
}

TEST(KbLoad, DuplicateIdInOneSetIsAnErrorButOverrideDirReplaces) {
  LoadResult dup = load({{"a.yaml", kGood}, {"b.yaml", kGood}});
  EXPECT_EQ(dup.kb.entries.size(), 1u);
  ASSERT_EQ(dup.errors.size(), 1u);
  EXPECT_NE(dup.errors[0].message.find("duplicate id"), std::string::npos);

  auto dir = std::filesystem::temp_directory_path() / ("ff-kb-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string over = kGood;
  over.replace(over.find("Good entry"), 10, "Overridden");
  std::ofstream(dir / "over.yaml") << over;
  LoadResult r = load({{"a.yaml", kGood}}, {dir.string()});
  EXPECT_TRUE(r.errors.empty());
  ASSERT_EQ(r.kb.entries.size(), 1u);
  EXPECT_EQ(r.kb.find("test.good")->title, "Overridden");
  std::filesystem::remove_all(dir);
}

TEST(KbLoad, EncyclopediaFieldsAreRequired) {
  for (const char* field : {"mechanism: m\n", "affected: [any]\n", "confirm: [look]\n"}) {
    std::string s = kGood;
    s.erase(s.find(field), std::string(field).size());
    LoadResult r = load({{"x.yaml", s}});
    ASSERT_EQ(r.errors.size(), 1u) << field;
    EXPECT_EQ(r.errors[0].where.field, std::string(field).substr(0, std::string(field).find(':')));
    EXPECT_TRUE(r.kb.entries.empty());
  }
}

TEST(KbLoad, PatternMatchingEverythingIsRejected) {
  std::string s = kGood;
  s.replace(s.find("literal: 'CUDA error: out of memory'"), 36, "regex: '.*'");
  LoadResult r = load({{"x.yaml", s}});
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("empty string"), std::string::npos);
}

}  // namespace
}  // namespace ff::kb
