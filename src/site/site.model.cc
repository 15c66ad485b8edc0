// site/site.model.cc — the site model (what links to what: build_model) and the parts
// every page shares: the page frame with its header and search box, category chips,
// framework links, an entry in a list, a link to an entry.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/markdown.h"
#include "base/strings.h"
#include "site/site.h"
#include "site/site_internal.h"

namespace ff::site::internal {

// ---------------------------------------------------------------------------
// The site model: what links to what.

std::string entry_href(const std::string& root, const kb::Entry& e) { return root + "entries/" + slug(e.id) + ".html"; }

Model build_model(const kb::KnowledgeBase& kb, const SiteOptions& options) {
  Model m{kb, {}, {}, {}, {}, {}, {}, {}, options.generator};
  for (size_t i = 0; i < kb.entries.size(); ++i) m.order.push_back(i);
  std::sort(m.order.begin(), m.order.end(), [&](size_t a, size_t b) {
    const auto &x = kb.entries[a], &y = kb.entries[b];
    std::string tx = to_lower(title_plain(x)), ty = to_lower(title_plain(y));
    return tx != ty ? tx < ty : x.id < y.id;
  });
  for (size_t i : m.order) {
    const kb::Entry& e = kb.entries[i];
    m.by_category[e.category].push_back(i);
    std::set<std::string> fw_seen, tag_seen;
    for (const auto& f : e.frameworks) {
      std::string s = slug(f);
      if (!fw_seen.insert(s).second) continue;
      m.by_framework[s].push_back(i);
      m.framework_label.emplace(s, f);
    }
    for (const auto& t : e.tags) {
      std::string s = slug(t);
      if (!tag_seen.insert(s).second) continue;
      m.by_tag[s].push_back(i);
      m.tag_label.emplace(s, t);
    }
    for (const auto& r : e.related)
      if (r != e.id) m.referenced_by[r].push_back(e.id);
    for (const auto& l : e.lookalikes)
      if (l.id != e.id) m.referenced_by[l.id].push_back(e.id);
  }
  for (auto& [id, list] : m.referenced_by) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return m;
}

// The ordered categories that have entries: the stable list first, then any other.
std::vector<std::string> used_categories(const Model& m) {
  std::vector<std::string> out;
  for (const auto& c : kb::categories())
    if (m.by_category.count(c)) out.push_back(c);
  for (const auto& [c, list] : m.by_category)
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  return out;
}

std::vector<std::string> ordered_phases(const std::vector<std::string>& present) {
  std::vector<std::string> out;
  for (const auto& p : kb::phases())
    if (std::find(present.begin(), present.end(), p) != present.end()) out.push_back(p);
  for (const auto& p : present)
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  return out;
}

// ---------------------------------------------------------------------------
// Page parts

std::string search_box(bool big) {
  return fmt::format(
      "<div class=\"search{}\" role=\"search\">\n"
      "<label class=\"sr-only\" for=\"q\">Search the encyclopedia</label>\n"
      "<textarea id=\"q\" rows=\"{}\" spellcheck=\"false\" autocomplete=\"off\" "
      "placeholder=\"{}\"></textarea>\n"
      "<p id=\"search-status\" class=\"search-status\" aria-live=\"polite\"></p>\n"
      "<ol id=\"results\" class=\"results\" hidden></ol>\n"
      "</div>\n",
      big ? " big" : "", big ? 3 : 1,
      big ? "Paste an error line or a whole traceback, or type keywords (nccl timeout, loss nan)"
          : "Search, or paste an error line  ( / )");
}

std::string render_page(const Model& m, const PageSpec& p) {
  std::string out;
  out += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<meta name=\"color-scheme\" content=\"light dark\">\n";
  out += "<meta name=\"generator\" content=\"" + esc(m.generator) + "\">\n";
  if (!p.description.empty())
    out += "<meta name=\"description\" content=\"" +
           esc(first_sentence(markdown_plain(p.description, PlainCode::kBare), 300)) + "\">\n";
  out += "<title>" + esc(p.title) + "</title>\n";
  out += "<link rel=\"icon\" href=\"data:,\">\n";
  out += "<link rel=\"stylesheet\" href=\"" + p.root + "assets/style.css\">\n";
  out += "<script defer src=\"" + p.root + "assets/search-index.js\"></script>\n";
  out += "<script defer src=\"" + p.root + "assets/search.js\"></script>\n";
  out += "</head>\n<body data-root=\"" + p.root + "\">\n";
  out += "<a class=\"skip\" href=\"#main\">Skip to content</a>\n";
  out += "<header class=\"top\"><div class=\"wrap top-inner\">\n";
  out += "<a class=\"brand\" href=\"" + p.root +
         "index.html\"><span class=\"logo\" aria-hidden=\"true\">&#9670;</span> "
         "firstfault <span class=\"brand-sub\">encyclopedia</span></a>\n";
  // At a phone's width the navigation folds behind a menu button (search.js opens it).
  out += "<button type=\"button\" class=\"menu-btn\" aria-expanded=\"false\" aria-controls=\"top-nav\">"
         "<span aria-hidden=\"true\">&#9776;</span> Menu</button>\n";
  out += "<nav id=\"top-nav\" class=\"top-nav\" aria-label=\"Sections\"><a href=\"" + p.root +
         "index.html#categories\">Categories</a> <a href=\"" + p.root + "index.html#frameworks\">Frameworks</a> <a href=\"" +
         p.root + "index.html#tags\">Tags</a></nav>\n";
  if (!p.big_search) out += search_box(false);
  out += "</div></header>\n";
  out += "<main id=\"main\" class=\"wrap\">\n";
  out += p.body;
  out += "</main>\n";
  out += fmt::format(
      "<footer class=\"wrap foot\"><p>{} failure entries &middot; generated by {} from the knowledge base &middot; "
      "works offline, no network needed</p></footer>\n",
      m.kb.entries.size(), esc(m.generator));
  out += "</body>\n</html>\n";
  return out;
}

std::string chip_category(const std::string& root, const std::string& cat) {
  return fmt::format("<a class=\"chip cat cat-{}\" href=\"{}categories/{}.html\">{}</a>", slug(cat), root, slug(cat),
                     esc(category_name(cat)));
}

std::string framework_links(const Model& m, const std::string& root, const kb::Entry& e) {
  std::string out;
  for (size_t i = 0; i < e.frameworks.size(); ++i) {
    if (i) out += ", ";
    out += fmt::format("<a href=\"{}frameworks/{}.html\">{}</a>", root, slug(e.frameworks[i]),
                       esc(framework_name(e.frameworks[i])));
  }
  return out;
}

// One entry in a list: title link, category chip, frameworks and the quick answer's first sentence.
std::string entry_item(const Model& m, const std::string& root, size_t i, bool show_category) {
  const kb::Entry& e = m.kb.entries[i];
  std::string fws;
  for (size_t k = 0; k < e.frameworks.size(); ++k) fws += (k ? ", " : "") + framework_name(e.frameworks[k]);
  return fmt::format(
      "<li class=\"entry-item\"><a class=\"entry-link\" href=\"{}\">{}</a> {}<span class=\"meta\">{} &middot; {}</span>"
      "<p class=\"gist\">{}</p></li>\n",
      entry_href(root, e), title_html(e), show_category ? chip_category(root, e.category) + " " : "", esc(fws),
      esc(phase_name(e.phase)), excerpt(e.summary));
}

std::string link_to_entry(const Model& m, const std::string& root, const std::string& id) {
  const kb::Entry* t = m.kb.find(id);
  if (!t) return "<span class=\"missing\"><code>" + esc(id) + "</code></span>";
  return fmt::format("<a href=\"{}\">{}</a> <code class=\"id\">{}</code>", entry_href(root, *t), title_html(*t),
                     esc(id));
}

}  // namespace ff::site::internal
