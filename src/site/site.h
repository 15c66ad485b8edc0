// site/site.h — the static encyclopedia: the knowledge base rendered as HTML pages that
// work from file:// with no server and no network.
//
// generate() writes into a folder:
//   index.html                 every entry grouped by category, frameworks, tags, search box
//   entries/<id>.html          one page per entry: every field an entry has, in reading
//                              order (what it is, mechanism, symptoms table, how to confirm,
//                              transience rule, root cause, fix, verify with where it runs and
//                              what to expect, prevention, code examples per framework, FAQ,
//                              lookalikes, related and related by shared tags, references,
//                              patterns, examples); a field an entry lacks is left out
//   frameworks/<name>.html     a hub per framework: entries by lifecycle phase and a
//                              side-by-side table (symptom, cause, fix)
//   tags/<tag>.html            entries per tag
//   assets/style.css           one stylesheet, light and dark (prefers-color-scheme)
//   assets/search.js           client-side search (no dependencies)
//   assets/search-index.js     the search data as a JS literal (fetch() of a local file
//                              fails under file://): entries, the prefix formats and every
//                              pattern converted to JS regex syntax, the BM25 index
//
// The search ranks as `firstfault search` does: lines are cleaned, prefixes peeled and
// matched against every pattern (the most specific entry per line first), then the other
// entries by keyword relevance (search_index.h).
//
//   auto stats = site::generate(kb, "out/", {});
//   if (!stats.ok()) report(stats.error());
//
// Every KB text is HTML-escaped, then its inline Markdown rendered (base/markdown.h: code,
// strong, emphasis, https links only); links to other pages are relative, so the folder can be
// moved or opened from disk. Failure: an Error (kIo) when a file cannot be written;
// earlier files stay written.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "kb/kb.h"

namespace ff::site {

struct SiteOptions {
  std::string generator = "firstfault";  // shown in the footer ("firstfault 0.1.0")
};

struct SiteStats {
  size_t files = 0;
  size_t entries = 0;
  size_t frameworks = 0;
  size_t categories = 0;  // a page per category (categories/<slug>.html)
  size_t tags = 0;
  size_t js_patterns = 0;          // patterns shipped to the client-side search
  size_t js_patterns_skipped = 0;  // patterns with RE2 syntax JavaScript cannot express
};

Result<SiteStats> generate(const kb::KnowledgeBase& kb, const std::string& out_dir, const SiteOptions& options = {});

// An RE2 regex as a JavaScript RegExp source and flags: (?P<name> becomes (?<name>, leading
// inline flags (?i) (?s) (?m) become RegExp flags (a flag set mid-pattern applies to the
// whole pattern: a superset), \A and \z become ^ and $, \Q..\E is escaped, POSIX classes
// [[:alpha:]] are expanded, []a] becomes [\]a]. Fails (kFormat) on what JavaScript cannot
// express without the u flag: \p{..}, \C, (?U), \x{..} above U+FFFF.
struct JsRegex {
  std::string source;
  std::string flags;
};
Result<JsRegex> to_js_regex(std::string_view re2);

// A plain literal as a JavaScript RegExp source.
std::string js_escape_literal(std::string_view literal);

// Text for HTML element content or a quoted attribute value: & < > " ' escaped, invalid
// UTF-8 replaced.
std::string html_escape(std::string_view text);

// A file-name-safe form of an id, framework or tag: lower case, [a-z0-9._-], other runs
// become '-', no leading or trailing '.' or '-'; never empty.
std::string slug(std::string_view name);

// A pattern's source as a reader sees it: "NVIDIA/nccl src/os/linux.cc:806 @ v2.23.4-1"
// (or the page's URL), with ", since X" / ", until Y"; and where it links to (the file and
// line on GitHub at the commit or tag that was read, or the page).
std::string source_label(const kb::Source& source);
std::string source_versions(const kb::Source& source);
std::string source_href(const kb::Source& source);

}  // namespace ff::site
