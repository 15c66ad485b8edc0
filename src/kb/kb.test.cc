#include "kb/kb.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

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
  LoadResult r = load(
      {{"a/good.yaml", kGood}, {"a/bad.yaml", bad}, {"a/badrx.yaml", bad_regex}, {"a/broken.yaml", "id: [unclosed\n"}});
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

// Issue 34: a key the schema does not know is an error with its file and line, the rest
// of the entry still loads; a flow map's value split at a comma ({url: U, note: a, b})
// shows up as such a key, and the message says to quote the value.
TEST(KbLoad, AnUnknownKeyAndACommaSplitNoteAreErrorsAndTheEntryStillLoads) {
  std::string s = kGood;
  s.replace(s.find("references: [{url: 'https://example.org', note: n}]"), 51,
            "references: [{url: 'https://example.org', note: DummyOptim, DummyScheduler and more}]\nfxi: [typo]");
  LoadResult r = load({{"x.yaml", s}});
  ASSERT_EQ(r.errors.size(), 2u) << r.errors[0].message;
  EXPECT_NE(r.kb.find("test.good"), nullptr) << "the entry still loads";
  EXPECT_EQ(r.errors[0].where.field, "fxi");
  EXPECT_EQ(r.errors[0].where.line, 15);
  EXPECT_NE(r.errors[0].message.find("unknown field 'fxi'"), std::string::npos);
  EXPECT_EQ(r.errors[1].where.field, "references[0].DummyScheduler and more");
  EXPECT_NE(r.errors[1].message.find("quote the value"), std::string::npos) << r.errors[1].message;
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
  for (std::string field :
       {"id", "title", "category", "severity", "phase", "frameworks", "summary", "mechanism", "affected", "confirm",
        "root_cause", "fix", "verify", "references", "patterns", "examples"}) {
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

TEST(KbLoad, PatternSourcesAreParsedAndChecked) {
  auto with = [](const std::string& source) {
    std::string s = kGood;
    s.replace(s.find("literal: 'CUDA error: out of memory'}"), 37,
              "literal: 'CUDA error: out of memory', source: " + source + "}");
    return load({{"x.yaml", s}});
  };
  LoadResult ok = with(
      "[{repo: NVIDIA/nccl, ref: v2.18.3-1, path: src/misc/shmutils.cc, line: 71, until: '2.22'}, "
      "{url: 'https://docs.nvidia.com/deploy/xid-errors/'}]");
  EXPECT_TRUE(ok.errors.empty());
  ASSERT_EQ(ok.kb.entries.size(), 1u);
  ASSERT_EQ(ok.kb.entries[0].patterns[0].sources.size(), 2u);
  EXPECT_EQ(ok.kb.entries[0].patterns[0].sources[0].until, "2.22");
  EXPECT_EQ(ok.kb.entries[0].patterns[0].sources[1].url, "https://docs.nvidia.com/deploy/xid-errors/");
  for (const char* bad : {"{repo: NVIDIA/nccl, path: src/init.cc}",    // no ref
                          "{repo: nccl, ref: v1, path: src/init.cc}",  // not owner/name
                          "{repo: NVIDIA/nccl, ref: v1, path: a, line: 0}", "{url: 'http://example.org'}", "{file: x}",
                          "'NVIDIA/nccl'"}) {
    LoadResult r = with(bad);
    EXPECT_FALSE(r.errors.empty()) << bad;
    EXPECT_TRUE(r.kb.entries.empty()) << bad;
  }
}

// ---- the parsed-KB cache

// A fresh directory for one test's cache, removed at the end.
struct CacheDir {
  std::filesystem::path path;
  explicit CacheDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / ("ff-kb-cache-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
  }
  ~CacheDir() { std::filesystem::remove_all(path); }
  // The one KB cache file in it.
  std::filesystem::path file() const {
    std::vector<std::filesystem::path> found;
    for (const auto& f : std::filesystem::directory_iterator(path))
      if (f.path().filename().string().rfind("kb-", 0) == 0) found.push_back(f.path());
    EXPECT_EQ(found.size(), 1u);
    return found.empty() ? path / "none" : found[0];
  }
};

ino_t inode(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::vector<std::string> messages(const std::vector<Error>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.to_string());
  return out;
}

// Every kind of field the cache holds, with an error to keep too.
std::vector<File> small_kb() {
  std::string rich = std::string(kGood) + R"(tags: [t1, t2]
transience: terminal
lookalikes: [{id: other.entry, how_to_tell: look}]
symptoms: [{symptom: s, why: w}]
prevention: [p]
related: [other.entry]
code_examples: {python: 'x = 1'}
negatives: ['CUDA error: out of range']
)";
  rich.replace(
      rich.find("{id: p1, role: root, literal: 'CUDA error: out of memory'}"), 58,
      "{id: p1, role: root, literal: 'CUDA error: out of memory', source: {repo: pytorch/pytorch, ref: v2.5.1, "
      "path: c10/cuda/CUDAException.cpp, line: 30, since: '1.0'}, source_note: n}");
  rich.replace(rich.find("examples: ['RuntimeError: CUDA error: out of memory']"), 53,
               "examples: [{text: 'RuntimeError: CUDA error: out of memory', captures: {a: b}}]");
  std::string bad = kGood;
  bad.replace(bad.find("test.good"), 9, "test.bad");
  bad.replace(bad.find("severity: fatal"), 15, "severity: dire");
  return {{"a/rich.yaml", rich}, {"a/bad.yaml", bad}, {"formats/f.yaml", R"(prefixes:
  - {id: rank, regex: '\[(?P<rank>\d+)\]: ', consume: false, time_format: iso, samples: ['[0]: x']}
sources:
  - {id: rankfile, regex: 'rank(?P<rank>\d+)\.log', samples: [rank3.log]}
exceptions: [{type: OSError, category: storage}]
frames: [{path: torch/utils/data, category: data-pipeline}]
metrics: [{name: loss, keys: [loss], units: [{unit: ms, scale: 0.001}]}]
exception_default_category: hang
)"}};
}

TEST(KbCache, RoundTripsTheEmbeddedKnowledgeBase) {
  CacheDir dir("roundtrip");
  LoadOptions o;
  o.cache_dir = dir.path.string();
  LoadResult parsed = load_embedded({}, o);
  for (const auto& e : parsed.errors) ADD_FAILURE() << e.to_string();
  ino_t written = inode(dir.file());
  LoadResult cached = load_embedded({}, o);
  EXPECT_EQ(inode(dir.file()), written) << "the second load parsed the YAML and wrote the cache again";
  EXPECT_TRUE(cached.errors.empty());
  EXPECT_TRUE(cached.kb == parsed.kb);
  EXPECT_NE(cached.kb.find("pytorch.cuda.out-of-memory"), nullptr);

  // The same model as loading the embedded files' content.
  LoadResult direct = load(embedded_files());
  direct.kb.hash = cached.kb.hash;
  EXPECT_TRUE(direct.kb == cached.kb);
}

TEST(KbCache, RoundTripsEveryFieldAndTheErrors) {
  CacheDir dir("fields");
  LoadOptions o;
  o.cache_dir = dir.path.string();
  LoadResult parsed = load(small_kb(), {}, o);
  ASSERT_EQ(parsed.errors.size(), 1u);
  const Entry* e = parsed.kb.find("test.good");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->examples.size(), 1u);
  EXPECT_EQ(e->examples[0].captures.at("a"), "b");
  EXPECT_EQ(e->code_examples.at("python"), "x = 1");
  ASSERT_EQ(e->patterns[0].sources.size(), 1u);
  EXPECT_EQ(e->patterns[0].sources[0].line, 30);
  EXPECT_EQ(e->patterns[0].sources[0].since, "1.0");
  ASSERT_EQ(parsed.kb.metric_specs.size(), 1u);
  EXPECT_EQ(parsed.kb.metric_specs[0].units[0].scale, 0.001);
  EXPECT_EQ(parsed.kb.exception_default_category, "hang");
  ino_t written = inode(dir.file());

  LoadResult cached = load(small_kb(), {}, o);
  EXPECT_EQ(inode(dir.file()), written);
  EXPECT_TRUE(cached.kb == parsed.kb);
  EXPECT_EQ(messages(cached.errors), messages(parsed.errors));
}

TEST(KbCache, WithoutPageFieldsTheModelIsTheSameFromTheCacheOrTheYaml) {
  CacheDir dir("pages");
  LoadOptions o;
  o.cache_dir = dir.path.string();
  o.page_fields = false;
  LoadResult parsed = load(small_kb(), {}, o);
  LoadResult cached = load(small_kb(), {}, o);
  EXPECT_TRUE(cached.kb == parsed.kb);
  LoadResult full = load(small_kb(), {}, {});
  full.kb.hash = cached.kb.hash;
  const Entry* e = cached.kb.find("test.good");
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->examples.empty());
  EXPECT_TRUE(e->tags.empty());
  EXPECT_TRUE(e->mechanism.empty());
  EXPECT_FALSE(e->patterns.empty());
  EXPECT_FALSE(e->verify.empty());
  EXPECT_FALSE(cached.kb == full.kb);
  // Putting the page fields back gives the full model.
  KnowledgeBase with_pages = cached.kb;
  for (size_t i = 0; i < with_pages.entries.size(); ++i) {
    Entry& w = with_pages.entries[i];
    const Entry& f = full.kb.entries[i];
    w.phase = f.phase, w.frameworks = f.frameworks, w.tags = f.tags, w.mechanism = f.mechanism;
    w.affected = f.affected, w.confirm = f.confirm, w.transience = f.transience, w.lookalikes = f.lookalikes;
    w.prevention = f.prevention, w.related = f.related, w.code_examples = f.code_examples;
    w.examples = f.examples, w.negatives = f.negatives;
  }
  EXPECT_TRUE(with_pages == full.kb);
}

// A short or damaged cache file is noticed: the YAML is parsed instead, with no error of
// its own, and the cache is written again.
TEST(KbCache, TruncatedOrCorruptCacheFallsBackToTheYaml) {
  CacheDir dir("corrupt");
  LoadOptions o;
  o.cache_dir = dir.path.string();
  LoadResult reference = load(small_kb(), {}, o);
  std::filesystem::path file = dir.file();
  std::string good;
  {
    std::ifstream in(file, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(good.size(), 64u);
  auto load_with = [&](const std::string& bytes, const std::string& what) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    LoadResult r = load(small_kb(), {}, o);
    EXPECT_TRUE(r.kb == reference.kb) << what;
    EXPECT_EQ(messages(r.errors), messages(reference.errors)) << what;
    std::ifstream in(file, std::ios::binary);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), good) << what << ": the cache was not rewritten";
  };
  for (size_t n : {size_t{0}, size_t{1}, size_t{4}, size_t{30}, good.size() / 2, good.size() - 1})
    load_with(good.substr(0, n), "truncated to " + std::to_string(n) + " bytes");
  load_with(good + "x", "a byte too many");
  // Lengths and counts: the magic's length, the entry count after the header (length and
  // "ffkb", length and "kbcache-N", the 8-byte key, the two 8-byte checksums), the first
  // entry's id length.
  size_t header = 4 + 4 + 4 + 9 + 8 + 8 + 8;
  for (size_t at : {size_t{0}, header, header + 4}) {
    std::string bad = good;
    bad.replace(at, 4, "\xff\xff\xff\x7f");
    load_with(bad, "length at " + std::to_string(at));
  }
  std::string other_version = good;
  other_version[8 + 4 + 8] ^= 1;  // the version's last character
  load_with(other_version, "another version");
  load_with(std::string(good.size(), '\xff'), "garbage");

  // A flipped byte anywhere, also inside a string where every length still holds, is
  // caught by the checksums (issue 14: it was taken as it was): the YAML is parsed and
  // the cache written again.
  std::mt19937 rng(7);
  for (int i = 0; i < 64; ++i) {
    std::string bad = good;
    const size_t at = rng() % bad.size();
    bad[at] ^= static_cast<char>(1 << (rng() % 8));
    load_with(bad, "a bit flipped at " + std::to_string(at));
  }
}

}  // namespace
}  // namespace ff::kb
