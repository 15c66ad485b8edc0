#include "site/site.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <fstream>
#include <set>
#include <sstream>

#include "site/search_index.h"

namespace ff::site {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("ff-site-test-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::vector<fs::path> html_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".html") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The values of every href="..." and src="..." attribute.
std::vector<std::string> links(const std::string& html) {
  std::vector<std::string> out;
  for (const char* attr : {" href=\"", " src=\""}) {
    size_t pos = 0;
    while ((pos = html.find(attr, pos)) != std::string::npos) {
      pos += std::strlen(attr);
      size_t end = html.find('"', pos);
      out.push_back(html.substr(pos, end - pos));
      pos = end;
    }
  }
  return out;
}

bool external(const std::string& link) {
  for (const char* scheme : {"http://", "https://", "mailto:", "data:"})
    if (link.rfind(scheme, 0) == 0) return true;
  return false;
}

kb::KnowledgeBase embedded_kb() {
  kb::LoadResult r = kb::load(kb::embedded_files());
  return std::move(r.kb);
}

TEST(Site, EveryEntryHasAPageAndEveryInternalLinkResolves) {
  kb::KnowledgeBase kb = embedded_kb();
  ASSERT_FALSE(kb.entries.empty());
  TempDir dir("links");
  auto stats = generate(kb, dir.path.string(), {"firstfault test"});
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  EXPECT_EQ(stats->entries, kb.entries.size());
  EXPECT_GT(stats->frameworks, 5u);
  EXPECT_GT(stats->tags, 10u);
  for (const auto& e : kb.entries) EXPECT_TRUE(fs::exists(dir.path / "entries" / (e.id + ".html"))) << e.id;
  for (const char* f : {"index.html", "assets/style.css", "assets/search.js", "assets/search-index.js"})
    EXPECT_TRUE(fs::exists(dir.path / f)) << f;

  const fs::path root = fs::weakly_canonical(dir.path);
  size_t checked = 0;
  std::map<fs::path, std::string> cache;
  for (const auto& file : html_files(dir.path)) {
    std::string html = read(file);
    for (const auto& link : links(html)) {
      if (external(link)) continue;
      ASSERT_FALSE(link.empty()) << file;
      std::string path = link.substr(0, link.find('#'));
      std::string frag = link.find('#') == std::string::npos ? "" : link.substr(link.find('#') + 1);
      fs::path target = path.empty() ? file : fs::weakly_canonical(file.parent_path() / path);
      EXPECT_TRUE(fs::is_regular_file(target)) << file.string() << " links to a missing " << link;
      EXPECT_EQ(target.string().rfind(root.string(), 0), 0u) << file.string() << " links outside the site: " << link;
      if (!frag.empty() && fs::is_regular_file(target)) {
        auto [it, fresh] = cache.emplace(target, "");
        if (fresh) it->second = read(target);
        EXPECT_NE(it->second.find("id=\"" + frag + "\""), std::string::npos) << file.string() << ": no anchor " << link;
      }
      ++checked;
    }
    // Nothing is loaded from the network: no external scripts, styles or fonts.
    EXPECT_EQ(html.find("src=\"http"), std::string::npos) << file;
    EXPECT_EQ(html.find("<link rel=\"stylesheet\" href=\"http"), std::string::npos) << file;
  }
  EXPECT_GT(checked, kb.entries.size() * 5);
}

// Issue 33: the index links a page per category instead of listing every entry (it was
// one 52,000 px page); the category pages list each entry exactly once.
TEST(Site, Issue33TheIndexIsPagedByCategory) {
  kb::KnowledgeBase kb = embedded_kb();
  TempDir dir("paged");
  auto stats = generate(kb, dir.path.string(), {"firstfault test"});
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  std::set<std::string> categories;
  for (const auto& e : kb.entries) categories.insert(e.category);
  EXPECT_EQ(stats->categories, categories.size());
  const std::string index = read(dir.path / "index.html");
  EXPECT_EQ(index.find("class=\"entry-item\""), std::string::npos) << "the index lists entries itself";
  std::map<std::string, int> listed;
  for (const auto& c : categories) {
    EXPECT_NE(index.find("href=\"categories/" + c + ".html\""), std::string::npos) << c;
    const std::string page = read(dir.path / "categories" / (c + ".html"));
    for (size_t at = page.find("class=\"entry-link\" href=\"../entries/"); at != std::string::npos;
         at = page.find("class=\"entry-link\" href=\"../entries/", at + 1)) {
      const size_t from = page.find("entries/", at) + 8;
      ++listed[page.substr(from, page.find(".html", from) - from)];
    }
  }
  EXPECT_EQ(listed.size(), kb.entries.size());
  for (const auto& [id, n] : listed) EXPECT_EQ(n, 1) << id;
}

TEST(Site, EveryPatternIsShippedToTheClientSideSearch) {
  kb::KnowledgeBase kb = embedded_kb();
  TempDir dir("patterns");
  auto stats = generate(kb, dir.path.string());
  ASSERT_TRUE(stats.ok());
  size_t patterns = 0;
  for (const auto& e : kb.entries) patterns += e.patterns.size();
  EXPECT_EQ(stats->js_patterns, patterns);
  EXPECT_EQ(stats->js_patterns_skipped, 0u);
  std::string js = read(dir.path / "assets" / "search-index.js");
  EXPECT_EQ(js.rfind("// Generated", 0), 0u);
  EXPECT_NE(js.find("window.FF_INDEX = {"), std::string::npos);
  EXPECT_EQ(js.find("(?P<"), std::string::npos) << "RE2 named groups must be converted";
  for (unsigned char c : js) ASSERT_LT(c, 0x80) << "the index must be pure ASCII";
}

const char* kHostile = R"(id: test.hostile
title: 'Title <script>alert(1)</script> & "quotes"'
category: gpu-memory
severity: fatal
phase: forward
frameworks: ['<b>fw</b>', pytorch]
tags: ['<img src=x onerror=alert(2)>', oom]
summary: 'Summary <script>alert(3)</script> with `code <i>`.'
mechanism: 'm </textarea><script>alert(4)</script>'
affected: ['<i>any</i>']
confirm: ['<script>alert(12)</script>']
transience: terminal
symptoms: [{symptom: '<script>alert(5)</script>', why: '<b>why</b>'}]
root_cause: r
fix: ['<script>alert(6)</script>']
verify: v
related: ['<script>alert(7)</script>']
references:
  - {url: 'javascript:alert(8)', note: n}
  - {url: 'https://example.org/?a=1&b="2"', note: '<script>alert(9)</script>'}
code_examples: {pytorch: 'print("<script>alert(10)</script>")'}
patterns:
  - {id: p1, role: root, literal: 'CUDA error: <script>alert(11)</script>'}
examples: ['RuntimeError: CUDA error: <script>alert(11)</script>']
)";

TEST(Site, KbTextIsHtmlEscaped) {
  kb::LoadResult r = kb::load({{"x/hostile.yaml", kHostile}});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  ASSERT_EQ(r.kb.entries.size(), 1u);
  TempDir dir("escape");
  auto stats = generate(r.kb, dir.path.string(), {"gen <script>"});
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  std::string page = read(dir.path / "entries" / "test.hostile.html");
  EXPECT_NE(page.find("Title &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"), std::string::npos);
  EXPECT_NE(page.find("<code>code &lt;i&gt;</code>"), std::string::npos);
  EXPECT_EQ(page.find("href=\"javascript:"), std::string::npos) << "only http(s) references become links";
  EXPECT_NE(page.find("href=\"https://example.org/?a=1&amp;b=&quot;2&quot;\""), std::string::npos);
  for (const auto& file : html_files(dir.path)) {
    std::string html = read(file);
    EXPECT_EQ(html.find("<script>"), std::string::npos) << file;
    EXPECT_EQ(html.find("<img"), std::string::npos) << file;
    EXPECT_EQ(html.find("<b>"), std::string::npos) << file;
    EXPECT_EQ(html.find("<i>"), std::string::npos) << file;
    EXPECT_EQ(html.find("</textarea><script"), std::string::npos) << file;
    // The only scripts are the site's own two files.
    size_t scripts = 0;
    for (size_t p = html.find("<script"); p != std::string::npos; p = html.find("<script", p + 1)) ++scripts;
    EXPECT_EQ(scripts, 2u) << file;
  }
  // Hostile tag and framework names become safe file names.
  EXPECT_TRUE(fs::exists(dir.path / "tags" / "img-src-x-onerror-alert-2.html"));
  EXPECT_TRUE(fs::exists(dir.path / "frameworks" / "b-fw-b.html"));
}

// A pattern's provenance is on its page: a link to the file and line at the commit read,
// or the note that says it was not checked.
TEST(Site, PatternSourcesAndNotesAreShown) {
  const char* yaml = R"(id: test.sourced
title: Sourced
category: gpu-memory
severity: fatal
phase: forward
frameworks: [nccl]
summary: s
mechanism: m
affected: [any]
confirm: [c]
root_cause: r
fix: [f]
verify: v
references: [{url: 'https://example.org', note: n}]
patterns:
  - id: p1
    role: root
    literal: 'Failed to CUDA malloc'
    source: {repo: NVIDIA/nccl, ref: v2.21.5-1, path: src/include/alloc.h, line: 462, since: '2.12'}
  - id: p2
    role: root
    literal: 'some other text here'
    source_note: not yet checked against upstream
examples: ['NCCL WARN Failed to CUDA malloc 100 bytes']
)";
  kb::LoadResult r = kb::load({{"x/sourced.yaml", yaml}});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  TempDir dir("sources");
  auto stats = generate(r.kb, dir.path.string(), {"gen"});
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  std::string page = read(dir.path / "entries" / "test.sourced.html");
  EXPECT_NE(page.find("href=\"https://github.com/NVIDIA/nccl/blob/v2.21.5-1/src/include/alloc.h#L462\""),
            std::string::npos);
  EXPECT_NE(page.find("NVIDIA/nccl src/include/alloc.h:462 @ v2.21.5-1</a>, since 2.12"), std::string::npos);
  EXPECT_NE(page.find("not yet checked against upstream"), std::string::npos);
}

TEST(JsRegex, ConvertsRe2Syntax) {
  auto r = to_js_regex(R"(CUDA out of memory\. Tried to allocate (?P<size>[0-9.]+ ?[KMGT]i?B))");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, R"(CUDA out of memory\. Tried to allocate (?<size>[0-9.]+ ?[KMGT]i?B))");
  EXPECT_EQ(r->flags, "");
  r = to_js_regex(R"((?i)\bloss (?:is|became) nan)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, R"(\bloss (?:is|became) nan)");
  EXPECT_EQ(r->flags, "i");
  r = to_js_regex(R"(\Aabc\z)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, "^abc$");
  r = to_js_regex(R"(x\Q1.5+(y)\E[[:digit:]]+[]a][^]b])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, R"(x1\.5\+\(y\)[0-9]+[\]a][^\]b])");
  r = to_js_regex(R"(a(?s:.)b\x{41})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->source, R"(a(?:.)b\u0041)");
  EXPECT_EQ(r->flags, "s");
  EXPECT_FALSE(to_js_regex(R"(\pL+)").ok());
  EXPECT_FALSE(to_js_regex(R"((?U)a+)").ok());
  EXPECT_FALSE(to_js_regex(R"(\x{1F600})").ok());
  EXPECT_EQ(js_escape_literal("a.b*c (d) [e] {f} | g/h \\ ^$?+"), R"(a\.b\*c \(d\) \[e\] \{f\} \| g\/h \\ \^\$\?\+)");
}

TEST(Slug, IsFileNameSafe) {
  EXPECT_EQ(slug("pytorch.cuda.out-of-memory"), "pytorch.cuda.out-of-memory");
  EXPECT_EQ(slug("NVIDIA Driver"), "nvidia-driver");
  EXPECT_EQ(slug("../../etc/passwd"), "etc-passwd");
  EXPECT_EQ(slug("c++"), "c");
  EXPECT_EQ(slug("..."), "x");
  EXPECT_EQ(slug(""), "x");
}

// The fixture entry with every page field (tests/data/site-kb), loaded beside the built-in KB.
kb::KnowledgeBase kb_with_fixture() {
  kb::LoadResult r = kb::load(kb::embedded_files(), {std::string(FF_SOURCE_DIR) + "/tests/data/site-kb"});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  return std::move(r.kb);
}

// The text of a page outside <pre> and <code> elements and outside tags' attributes.
std::string text_outside_code(const std::string& html) {
  std::string out;
  size_t i = 0;
  while (i < html.size()) {
    if (html.compare(i, 4, "<pre") == 0 || html.compare(i, 5, "<code") == 0) {
      const char* close = html.compare(i, 4, "<pre") == 0 ? "</pre>" : "</code>";
      size_t e = html.find(close, i);
      i = e == std::string::npos ? html.size() : e + std::strlen(close);
    } else if (html[i] == '<') {
      size_t e = html.find('>', i);
      i = e == std::string::npos ? html.size() : e + 1;
      out += ' ';
    } else {
      out += html[i++];
    }
  }
  return out;
}

TEST(Site, TheEntryPageShowsEveryPageField) {
  kb::KnowledgeBase kb = kb_with_fixture();
  ASSERT_NE(kb.find("fixture.site.every-page-field"), nullptr);
  TempDir dir("fields");
  auto stats = generate(kb, dir.path.string(), {"gen"});
  ASSERT_TRUE(stats.ok()) << stats.error().to_string();
  std::string page = read(dir.path / "entries" / "fixture.site.every-page-field.html");
  for (
      const char* part :
      {// the title's code span as code, and as text where only text fits
       "<h1>Fixture allocator refused a block (every page field, <code>torch.distributed.elastic.multiprocessing.errors.FixtureRefusedError</code>)</h1>",
       "<title>Fixture allocator refused a block (every page field, torch.distributed.elastic.multiprocessing.errors.FixtureRefusedError) \xC2\xB7",
       // what it is, with its Markdown rendered
       "<section id=\"what\"", "The <strong>fixture</strong> allocator refused a block of <code>N</code> bytes",
       "<em>made up</em>",
       "<a href=\"https://pytorch.org/docs/stable/notes/cuda.html\" rel=\"noopener noreferrer\">the CUDA notes</a>",
       "<section id=\"mechanism\"",
       // the symptoms table
       "<table class=\"symptoms\">", "<th>Symptom</th><th>Why</th>",
       "<td><code>FixtureError: Fixture refused a block of 1048576 bytes</code> on one rank</td>",
       "<em>long tokens</em> must wrap",
       // how to confirm, the transience rule
       "<ul class=\"checklist\">", "<code>nvidia-smi</code> shows the memory as <strong>used</strong>.",
       "<dt>When it goes away by itself</dt><dd>never; the allocator does not retry",
       "<dt>When to stop the run</dt><dd>at once; the other ranks wait on the dead one until the <code>NCCL</code> timeout",
       "Terminal: the run cannot recover by itself",
       // root cause, fix, prevention
       "<section id=\"root-cause\"", "<li>Turn on <strong>activation checkpointing</strong>.</li>",
       "<section id=\"prevention\"", "alert above <em>90%</em>",
       // verify: where, the command as a copyable block, what to expect
       "<p class=\"where\">Add to the training script:</p>",
       "<pre class=\"cmd\" data-lang=\"python\"><code>if step == 3:\n",
       "<button type=\"button\" class=\"copy\" hidden>Copy</button>",
       "<p class=\"expect\"><strong>Expect:</strong> after the third optimizer step, the peak printed stays <strong>below</strong>",
       // the seven questions
       "<dl class=\"faq\">", "<dt>Hardware or software?</dt>", "<dt>How long does the fix take?</dt>",
       "<dt>Does it affect inference?</dt>", "<dt>What is the cheapest way to confirm it?</dt>",
       "<dt>How does it change from 1 GPU to 1,000?</dt>", "<dt>What should be monitored?</dt>",
       "<dt>Official documentation</dt>",
       "<a href=\"https://pytorch.org/docs/stable/notes/cuda.html#memory-management\" rel=\"noopener noreferrer\">PyTorch CUDA memory management</a>",
       // code examples per framework, labelled, and the note for the framework without one
       "<figcaption>DeepSpeed config (JSON)</figcaption>", "<figcaption>Hugging Face TrainingArguments</figcaption>",
       "<figcaption>PyTorch Lightning Trainer</figcaption>", "<figcaption>torchrun flags</figcaption>",
       "<figcaption>Megatron-LM arguments</figcaption>", "<figcaption>PyTorch (Python)</figcaption>",
       "<span class=\"fw\">vLLM:</span> vLLM does not train; its memory error is <strong>at start-up</strong>",
       // related: the explicit one, and the computed ones by shared tags
       "<section id=\"related\"", "entries/pytorch.cuda.oom-memory-held-by-other-process.html",
       "<h3 id=\"related-by-tag\">Sharing tags</h3>"}) {
    EXPECT_NE(page.find(part), std::string::npos) << "missing: " << part;
  }
  // The order of a page: what, mechanism, symptoms, confirm, transience, root cause, fix,
  // verify, prevention, code, FAQ, related.
  size_t last = 0;
  for (const char* id : {"what", "mechanism", "symptoms", "confirm", "transience", "root-cause", "fix", "verify",
                         "prevention", "code", "faq", "related"}) {
    size_t at = page.find(std::string("<section id=\"") + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, last) << id;
    last = at;
  }
  // The computed list leaves out the entries named already, and shows the shared tags.
  size_t by_tag = page.find("related-by-tag");
  std::string rest = page.substr(by_tag, page.find("</section>", by_tag) - by_tag);
  EXPECT_EQ(rest.find("oom-memory-held-by-other-process.html"), std::string::npos);
  EXPECT_EQ(rest.find("entries/pytorch.cuda.out-of-memory.html"), std::string::npos) << "a lookalike is named above";
  EXPECT_NE(rest.find("<a class=\"tag\" href=\"../tags/allocator.html\">allocator</a>"), std::string::npos);
}

TEST(Site, FieldsAnEntryLacksAreNotShown) {
  const char* yaml = R"(id: test.bare
title: Bare
category: gpu-memory
severity: fatal
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [c]
root_cause: r
fix: [f]
verify: v
references: [{url: 'https://example.org', note: n}]
patterns: [{id: p1, role: root, literal: 'bare failure text'}]
examples: ['bare failure text']
)";
  kb::LoadResult r = kb::load({{"x/bare.yaml", yaml}});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  TempDir dir("bare");
  ASSERT_TRUE(generate(r.kb, dir.path.string(), {"gen"}).ok());
  std::string page = read(dir.path / "entries" / "test.bare.html");
  for (const char* absent : {"id=\"symptoms\"", "id=\"transience\"", "id=\"faq\"", "id=\"code\"", "id=\"prevention\"",
                             "id=\"related\"", "class=\"where\"", "class=\"expect\""})
    EXPECT_EQ(page.find(absent), std::string::npos) << absent;
  EXPECT_NE(page.find("<div class=\"verify\"><p>v</p>"), std::string::npos);
}

// Inline Markdown renders everywhere: no page of the built-in KB (and the fixture) shows a
// raw backtick or *emphasis* outside <code> and <pre>.
TEST(Site, NoRawMarkdownOnAnyPage) {
  kb::KnowledgeBase kb = kb_with_fixture();
  TempDir dir("markdown");
  ASSERT_TRUE(generate(kb, dir.path.string(), {"gen"}).ok());
  size_t pages = 0;
  for (const auto& file : html_files(dir.path)) {
    std::string text = text_outside_code(read(file));
    ++pages;
    size_t tick = text.find('`');
    // A backtick without its partner in the KB text shows as itself: kb check's rule
    // page.markdown names the field; put such quotes inside a code span or drop them.
    EXPECT_EQ(tick, std::string::npos) << file << ": a raw backtick (an unpaired one in the KB text?) in \""
                                       << text.substr(tick == std::string::npos ? 0 : (tick < 60 ? 0 : tick - 60), 120)
                                       << "\"";
    for (size_t i = 0; i + 2 < text.size(); ++i) {
      if (text[i] != '*' || text[i + 1] == ' ' || text[i + 1] == '*') continue;
      size_t close = text.find('*', i + 1);
      if (close == std::string::npos || close - i > 80) continue;
      if (text.find('\n', i) < close || text[close - 1] == ' ') continue;
      ADD_FAILURE() << file << ": raw emphasis \"" << text.substr(i, close - i + 1) << "\"";
      break;
    }
  }
  EXPECT_GT(pages, kb.entries.size());
}

TEST(Search, SynonymsAndSeverityWeightsComeFromTheData) {
  auto data =
      parse_search_data("synonyms: {oom: [out of memory, OutOfMemoryError]}\nseverity_weight: {warning: 0.5}\n");
  ASSERT_TRUE(data.ok()) << data.error().to_string();
  ASSERT_EQ(data->synonyms.size(), 1u);
  EXPECT_EQ(data->synonyms[0].term, "oom");
  EXPECT_EQ(data->synonyms[0].phrases,
            (std::vector<std::vector<std::string>>{{"out", "memory"}, {"outofmemoryerror"}}));
  EXPECT_FALSE(parse_search_data("synonyms: {two words: [x]}").ok());
  EXPECT_FALSE(parse_search_data("synonyms: {oom: [OOM]}").ok());
  EXPECT_FALSE(parse_search_data("synonyms: [oom]").ok());
  EXPECT_FALSE(parse_search_data("severity_weight: {fatal: -1}").ok());
  EXPECT_FALSE(parse_search_data("synonyms: {oom: [").ok());
  // The built-in file parses and is what the index uses by default.
  EXPECT_FALSE(builtin_search_data().synonyms.empty());

  const char* warn = R"(id: t.warn
title: Out of memory warning
category: gpu-memory
severity: warning
phase: forward
frameworks: [pytorch]
summary: s
mechanism: m
affected: [any]
confirm: [c]
root_cause: r
fix: [f]
verify: v
references: [{url: 'https://example.org', note: n}]
patterns: [{id: p1, role: root, literal: 'warn text here'}]
examples: ['warn text here']
)";
  std::string fatal = std::string(warn);
  fatal.replace(fatal.find("t.warn"), 6, "t.fatl");
  fatal.replace(fatal.find("severity: warning"), 17, "severity: fatal");
  kb::LoadResult r = kb::load({{"x/warn.yaml", warn}, {"x/fatal.yaml", fatal}});
  for (const auto& e : r.errors) ADD_FAILURE() << e.to_string();
  KeywordIndex plain(r.kb, SearchData{});
  EXPECT_TRUE(plain.search("oom").empty());
  KeywordIndex with(r.kb, *data);
  auto hits = with.search("oom");
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(r.kb.entries[hits[0].entry].id, "t.fatl");
  EXPECT_NEAR(hits[1].score, hits[0].score * 0.5, 1e-5);
  auto j = with.to_json();
  EXPECT_EQ(j["boost"].size(), 2u);
  EXPECT_TRUE(j["post"].contains("oom"));
}

TEST(Search, TokenizerMatchesTheDocumentedRules) {
  EXPECT_EQ(tokenize("[rank3]:[E1120 10:11:12.345678 140 ProcessGroupNCCL.cpp:616] Watchdog timeouts of the NCCL"),
            (std::vector<std::string>{"rank3", "e1120", "10", "11", "12", "140", "processgroupnccl", "cpp", "616",
                                      "watchdog", "timeout", "nccl"}));
  EXPECT_EQ(tokenize("loss is NaN; bytes status process"),
            (std::vector<std::string>{"loss", "nan", "byte", "status", "process"}));
  EXPECT_EQ(tokenize("caf\xC3\xA9 x 123456"), (std::vector<std::string>{"caf"}));
}

TEST(Search, RegexLiteralsAreTheFixedText) {
  EXPECT_EQ(regex_literals(R"(CUDA out of memory\. Tried to allocate (?P<size>[0-9.]+ ?[KMGT]i?B))"),
            (std::vector<std::string>{"CUDA out of memory. Tried to allocate "}));
  EXPECT_EQ(regex_literals(R"(NET/IB(?:/GIN)? ?: Got completion from peer (?P<peer>\S+) with status=)"),
            (std::vector<std::string>{"NET/IB", "/GIN", ": Got completion from peer ", " with status="}));
}

TEST(Search, Bm25RanksTheObviousEntryFirst) {
  kb::KnowledgeBase kb = embedded_kb();
  KeywordIndex index(kb);
  auto top = [&](std::string_view q) {
    auto hits = index.search(q);
    return hits.empty() ? std::string() : kb.entries[hits[0].entry].id;
  };
  EXPECT_EQ(top("cuda out of memory"), "pytorch.cuda.out-of-memory");
  auto hits = index.search("nccl watchdog collective timeout");
  ASSERT_FALSE(hits.empty());
  EXPECT_NE(kb.entries[hits[0].entry].id.find("watchdog"), std::string::npos) << kb.entries[hits[0].entry].id;
  EXPECT_TRUE(index.search("zzzzqqq").empty());
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].score, hits[i].score);
  auto j = index.to_json();
  EXPECT_EQ(j["n"].get<size_t>(), kb.entries.size());
  EXPECT_EQ(j["len"].size(), kb.entries.size());
}

// Malformed or truncated regex syntax must never read out of bounds (run under ASan in
// make test-asan): every prefix of many strings built from regex metacharacters.
TEST(Robustness, TruncatedAndMalformedRegexSyntax) {
  const std::string alphabet = "\\[]()?:P<>{}*+|^$.-QEpxz0aA:i";
  uint32_t seed = 12345;
  auto next = [&] {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) & 0x7fff;
  };
  for (int n = 0; n < 3000; ++n) {
    std::string s;
    size_t len = next() % 24;
    for (size_t i = 0; i < len; ++i) s.push_back(alphabet[next() % alphabet.size()]);
    for (size_t cut = 0; cut <= s.size(); ++cut) {
      std::string_view v(s.data(), cut);
      (void)to_js_regex(v);
      (void)regex_literals(v);
      (void)tokenize(v);
      (void)slug(v);
      (void)html_escape(v);
    }
  }
  for (const char* edge :
       {"\\", "[", "[]", "[^]", "[[:", "[[:alpha", "(?", "(?P", "(?P<", "\\Q", "\\x{", "\\p{", "x{2", "(?i"}) {
    (void)to_js_regex(edge);
    (void)regex_literals(edge);
  }
}

// Issue 33: a keyword hit's snippet is the quick answer's sentence with most of the
// matched words (the first when none), cut around them when long, never inside a
// character; serve's page and `search --format json` show it.
TEST(Search, Issue33TheSnippetIsTheSentenceWithMostOfTheWords) {
  const std::string summary =
      "A process stopped answering. The NCCL watchdog aborted the communicator after the timeout. Restart it.";
  EXPECT_EQ(keyword_snippet(summary, {"watchdog", "timeout"}),
            "The NCCL watchdog aborted the communicator after the timeout.");
  EXPECT_EQ(keyword_snippet(summary, {"nothing"}), "A process stopped answering.");
  EXPECT_EQ(keyword_snippet("", {"x"}), "");
  // A long sentence: cut around the first word it holds, with ellipses, whole characters.
  std::string lng;
  for (int i = 0; i < 30; ++i) lng += "d\u00e9j\u00e0 vu ";
  lng += "watchdog fired";
  for (int i = 0; i < 30; ++i) lng += " encore";
  lng += ".";
  const std::string cut = keyword_snippet(lng, {"watchdog"});
  EXPECT_LT(cut.size(), 190u);
  EXPECT_NE(cut.find("watchdog fired"), std::string::npos) << cut;
  EXPECT_EQ(cut.rfind("\u2026", 0), 0u) << cut;
  for (size_t k = 0; k < cut.size();) {  // valid UTF-8 throughout
    const auto c = static_cast<unsigned char>(cut[k]);
    const size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    ASSERT_NE(c & 0xC0, 0x80) << "a cut inside a character at " << k << ": " << cut;
    k += n;
  }
}

}  // namespace
}  // namespace ff::site
