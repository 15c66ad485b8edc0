// site/site_internal.h — what the files of site share and nobody else needs.
//
//   site.text.cc   text helpers: escaping, inline Markdown, excerpts, titles, display names;
//                  slug and the sources' labels (site.h)
//   site.model.cc  the site model (build_model) and the page frame and links every page uses
//   site.entry.cc  the entry page and its blocks (verify, code examples, FAQ, related)
//   site.cc        the index, framework and tag pages, the search index JS, generate()
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "kb/kb.h"
#include "site/site.h"

namespace ff::site::internal {

// ---------------------------------------------------------------------------
// Text helpers (site.text.cc)

std::string esc(std::string_view s);
// KB text with its inline Markdown (`code`, **strong**, *em*, [text](https://...)) as
// HTML: base/markdown.h escapes first, then adds the markup.
std::string inline_text(std::string_view s);
// Paragraphs split on blank lines; single line breaks kept.
std::string paras(std::string_view s);
// A code block's text: blank lines at either end and trailing spaces removed, the first
// line's indentation kept (Python).
std::string trim_newlines(std::string_view s);
// At most `max` bytes, cut at a character boundary, with an ellipsis when cut.
std::string truncate_utf8(std::string_view s, size_t max);
// The first sentence (a ". " at least 20 bytes in, never inside a code span), at most
// `max` bytes.
std::string first_sentence(std::string_view s, size_t max = 220);
// The first sentence of a text field, as HTML.
std::string excerpt(std::string_view s, size_t max = 220);
// At most `max` bytes of a text field, as HTML.
std::string clipped(std::string_view s, size_t max);
// An entry's title: its backtick spans as code in a page, without markers where only text
// fits (<title>, the search index, sorting).
std::string title_html(const kb::Entry& e);
std::string title_plain(const kb::Entry& e);
std::string title_case_words(std::string_view s);
std::string category_name(std::string_view c);
std::string phase_name(std::string_view p);
std::string framework_name(std::string_view f);
std::string transience_text(std::string_view t);
bool is_web_url(std::string_view u);

// ---------------------------------------------------------------------------
// The site model: what links to what (site.model.cc).

struct Model {
  const kb::KnowledgeBase& kb;
  std::vector<size_t> order;                                      // entries by title
  std::map<std::string, std::vector<size_t>> by_category;         // in categories() order below
  std::map<std::string, std::vector<size_t>> by_framework;        // slug -> entries
  std::map<std::string, std::string> framework_label;             // slug -> raw name
  std::map<std::string, std::vector<size_t>> by_tag;              // slug -> entries
  std::map<std::string, std::string> tag_label;                   // slug -> raw tag
  std::map<std::string, std::vector<std::string>> referenced_by;  // id -> ids that relate to it
  std::string generator;
};

std::string entry_href(const std::string& root, const kb::Entry& e);
Model build_model(const kb::KnowledgeBase& kb, const SiteOptions& options);
// The ordered categories that have entries: the stable list first, then any other.
std::vector<std::string> used_categories(const Model& m);
std::vector<std::string> ordered_phases(const std::vector<std::string>& present);

// ---------------------------------------------------------------------------
// Page parts (site.model.cc)

struct PageSpec {
  std::string root;  // "" for index.html, "../" one level down
  std::string title;
  std::string description;
  std::string body;
  bool big_search = false;  // the index page shows the search box in the page, not the header
};

std::string search_box(bool big);
std::string render_page(const Model& m, const PageSpec& p);
std::string chip_category(const std::string& root, const std::string& cat);
std::string framework_links(const Model& m, const std::string& root, const kb::Entry& e);
// One entry in a list: title link, category chip, frameworks and the quick answer's first sentence.
std::string entry_item(const Model& m, const std::string& root, size_t i, bool show_category = true);
std::string link_to_entry(const Model& m, const std::string& root, const std::string& id);

// ---------------------------------------------------------------------------
// The entry page (site.entry.cc)

std::string entry_page(const Model& m, const kb::Entry& e);

}  // namespace ff::site::internal
