#include "site/site.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/escape.h"
#include "base/markdown.h"
#include "base/strings.h"
#include "site/search_index.h"
#include "site/site_internal.h"

namespace ff::site {

namespace detail {
// Generated from src/site/assets/ (cmake/embed_site_assets.cmake).
std::string_view asset_style_css();
std::string_view asset_search_js();
}  // namespace detail

using namespace internal;

namespace {

namespace fs = std::filesystem;

std::string index_page(const Model& m) {
  const std::string root;
  const auto cats = used_categories(m);
  std::string b;
  b += "<section class=\"hero\">\n<h1>Why did my training job die?</h1>\n";
  b += fmt::format(
      "<p class=\"lead\">An encyclopedia of {} failures of ML training and serving jobs: PyTorch, NCCL, DeepSpeed, "
      "Megatron-LM, Hugging Face, vLLM, CUDA, Slurm and Kubernetes. Each page says what the message means, how "
      "to confirm it, the root cause, the fix and how to verify it.</p>\n",
      m.kb.entries.size());
  b += search_box(true);
  b += "<p class=\"hint\">Paste a raw log line as it is, prefixes and all: the entry whose pattern matches it comes "
       "first. <kbd>Enter</kbd> opens the first result.</p>\n";
  b += "</section>\n";

  b += "<section id=\"categories\" class=\"block\">\n<h2>Categories</h2>\n<ul class=\"cat-grid\">\n";
  for (const auto& c : cats)
    b += fmt::format(
        "<li><a class=\"cat-card cat-{}\" href=\"categories/{}.html\"><span>{}</span><span class=\"count\">{}</span></a></li>\n",
        slug(c), slug(c), esc(category_name(c)), m.by_category.at(c).size());
  b += "</ul>\n</section>\n";

  b += "<section id=\"frameworks\" class=\"block\">\n<h2>Frameworks</h2>\n<ul class=\"fw-grid\">\n";
  std::vector<std::pair<std::string, size_t>> fws;
  for (const auto& [s, list] : m.by_framework) fws.emplace_back(s, list.size());
  std::stable_sort(fws.begin(), fws.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [s, n] : fws)
    b += fmt::format(
        "<li><a class=\"fw-card\" href=\"frameworks/{}.html\"><span>{}</span><span class=\"count\">{}</span></a></li>\n",
        s, esc(framework_name(m.framework_label.at(s))), n);
  b += "</ul>\n</section>\n";

  b += "<section id=\"tags\" class=\"block\">\n<h2>Tags</h2>\n<p class=\"tag-cloud\">\n";
  for (const auto& [s, list] : m.by_tag)
    b += fmt::format("<a class=\"tag\" href=\"tags/{}.html\">{} <span class=\"count\">{}</span></a>\n", s,
                     esc(m.tag_label.at(s)), list.size());
  b += "</p>\n</section>\n";
  return render_page(m, {root, "firstfault encyclopedia: failures of ML training jobs",
                         "Failures of ML training and serving jobs: what they mean, root cause, fix.", b, true});
}

// One category's entries on a page of their own (the index links a page per category, so
// no page lists all of them), by title, with links to the categories before and after.
std::string category_page(const Model& m, const std::string& cat, const std::string& prev, const std::string& next) {
  const std::string root = "../";
  const auto& list = m.by_category.at(cat);
  std::vector<size_t> sorted = list;
  std::sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
    return title_plain(m.kb.entries[a]) < title_plain(m.kb.entries[b]);
  });
  std::string b;
  b += "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"../index.html\">Encyclopedia</a> "
       "<span aria-hidden=\"true\">&rsaquo;</span> <a href=\"../index.html#categories\">Categories</a></nav>\n";
  b += fmt::format("<h1><span class=\"dot cat-{}\"></span>{}</h1>\n", slug(cat), esc(category_name(cat)));
  b += fmt::format("<p class=\"lead\">{} {}, by title.</p>\n<ul class=\"entry-list\">\n", list.size(),
                   list.size() == 1 ? "entry" : "entries");
  for (size_t i : sorted) b += entry_item(m, root, i, false);
  b += "</ul>\n<nav class=\"pager\" aria-label=\"Categories\">";
  if (!prev.empty())
    b += fmt::format("<a rel=\"prev\" href=\"{}.html\">&larr; {}</a>", slug(prev), esc(category_name(prev)));
  if (!next.empty())
    b += fmt::format("<a rel=\"next\" href=\"{}.html\">{} &rarr;</a>", slug(next), esc(category_name(next)));
  b += "</nav>\n";
  return render_page(m, {root, category_name(cat) + " failures \xC2\xB7 firstfault encyclopedia", "", b, false});
}

std::string framework_page(const Model& m, const std::string& fw_slug) {
  const std::string root = "../";
  const auto& list = m.by_framework.at(fw_slug);
  const std::string name = framework_name(m.framework_label.at(fw_slug));
  std::map<std::string, std::vector<size_t>> by_phase;
  std::vector<std::string> present;
  for (size_t i : list) {
    const auto& p = m.kb.entries[i].phase;
    if (!by_phase.count(p)) present.push_back(p);
    by_phase[p].push_back(i);
  }
  const auto phases = ordered_phases(present);
  std::string b;
  b += "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"../index.html\">Encyclopedia</a> "
       "<span aria-hidden=\"true\">&rsaquo;</span> <a href=\"../index.html#frameworks\">Frameworks</a></nav>\n";
  b += "<h1>" + esc(name) + "</h1>\n";
  b += fmt::format(
      "<p class=\"lead\">{} {} that {} can print, by the lifecycle phase where they appear; a side-by-side "
      "comparison follows.</p>\n",
      list.size(), list.size() == 1 ? "failure" : "failures", esc(name));
  b += "<nav class=\"toc\" aria-label=\"Phases\"><span>Phases:</span> ";
  for (const auto& p : phases)
    b += fmt::format("<a href=\"#phase-{}\">{} <span class=\"count\">{}</span></a> ", slug(p), esc(phase_name(p)),
                     by_phase[p].size());
  b += "<a href=\"#compare\">Side by side</a></nav>\n";
  for (const auto& p : phases) {
    b += fmt::format(
        "<section id=\"phase-{}\" class=\"block\">\n<h2>{} <span class=\"count\">{}</span></h2>\n"
        "<ul class=\"entry-list\">\n",
        slug(p), esc(phase_name(p)), by_phase[p].size());
    for (size_t i : by_phase[p]) b += entry_item(m, root, i);
    b += "</ul>\n</section>\n";
  }
  b += "<section id=\"compare\" class=\"block\">\n<h2>Side by side</h2>\n";
  b += "<div class=\"table-wrap\"><table class=\"compare\">\n<thead><tr><th>Failure</th><th>Symptom</th><th>Cause</th>"
       "<th>Fix</th></tr></thead>\n<tbody>\n";
  for (const auto& p : phases) {
    for (size_t i : by_phase[p]) {
      const kb::Entry& e = m.kb.entries[i];
      std::string symptom =
          !e.symptoms.empty() ? clipped(e.symptoms[0].symptom, 200)
          : !e.examples.empty()
              ? "<code>" + esc(truncate_utf8(trim(split(trim(e.examples[0].text), '\n')[0]), 160)) + "</code>"
              : "";
      b += fmt::format(
          "<tr><td><a href=\"{}\">{}</a><span class=\"meta\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          entry_href(root, e), title_html(e), esc(phase_name(e.phase)), symptom, excerpt(e.root_cause),
          e.fix.empty() ? "" : clipped(e.fix[0], 260));
    }
  }
  b += "</tbody>\n</table></div>\n</section>\n";
  return render_page(m, {root, name + " failures \xC2\xB7 firstfault encyclopedia", "", b, false});
}

std::string tag_page(const Model& m, const std::string& tag_slug) {
  const std::string root = "../";
  const auto& list = m.by_tag.at(tag_slug);
  const std::string& tag = m.tag_label.at(tag_slug);
  std::string b;
  b += "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"../index.html\">Encyclopedia</a> "
       "<span aria-hidden=\"true\">&rsaquo;</span> <a href=\"../index.html#tags\">Tags</a></nav>\n";
  b += "<h1>Tag: <span class=\"tag big\">" + esc(tag) + "</span></h1>\n";
  b += fmt::format("<p class=\"lead\">{} {}.</p>\n<ul class=\"entry-list\">\n", list.size(),
                   list.size() == 1 ? "entry" : "entries");
  for (size_t i : list) b += entry_item(m, root, i);
  b += "</ul>\n";
  return render_page(m, {root, "Tag " + tag + " \xC2\xB7 firstfault encyclopedia", "", b, false});
}

// The client-side search data, as one JS statement.
std::string search_index_js(const Model& m, SiteStats& stats) {
  nlohmann::ordered_json j;
  j["v"] = 1;
  auto& entries = j["entries"] = nlohmann::ordered_json::array();
  for (const auto& e : m.kb.entries) {
    // The quick answer as plain text: what a keyword hit's snippet is cut from.
    entries.push_back({e.id, title_plain(e), e.category, "entries/" + slug(e.id) + ".html",
                       truncate_utf8(markdown_plain(e.summary, PlainCode::kBare), 400)});
  }
  auto& prefixes = j["prefixes"] = nlohmann::ordered_json::array();
  for (const auto& f : m.kb.prefixes) {
    auto js = to_js_regex(f.regex);
    // A prefix JS cannot express is left out: lines with it are still matched unpeeled.
    if (js.ok()) prefixes.push_back({js->source, js->flags, f.consume});
  }
  auto& patterns = j["patterns"] = nlohmann::ordered_json::array();
  for (size_t d = 0; d < m.kb.entries.size(); ++d) {
    for (const auto& p : m.kb.entries[d].patterns) {
      JsRegex js;
      if (!p.literal.empty()) {
        js.source = js_escape_literal(p.literal);
      } else {
        auto r = to_js_regex(p.regex);
        if (!r.ok()) {
          ++stats.js_patterns_skipped;
          continue;
        }
        js = std::move(r.value());
      }
      patterns.push_back({d, p.id, js.source, js.flags, p.priority});
      ++stats.js_patterns;
    }
  }
  j["bm25"] = KeywordIndex(m.kb).to_json();
  // ensure_ascii: the file is pure ASCII, so no U+2028 or encoding questions.
  return "// Generated by firstfault site. The search index as a JS literal (fetch() of a local\n"
         "// file fails under file://).\nwindow.FF_INDEX = " +
         j.dump(-1, ' ', true, nlohmann::ordered_json::error_handler_t::replace) + ";\n";
}

Status write_file(const fs::path& path, std::string_view content, SiteStats& stats) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec)
    return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot write {}", path.string()));
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  f.close();
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot write {}", path.string()));
  ++stats.files;
  return {};
}

#define FF_SITE_WRITE(path, content)                   \
  do {                                                 \
    Status st_ = write_file((path), (content), stats); \
    if (!st_.ok()) return st_.error();                 \
  } while (0)

}  // namespace

Result<SiteStats> generate(const kb::KnowledgeBase& kb, const std::string& out_dir, const SiteOptions& options) {
  SiteStats stats;
  const fs::path out(out_dir);
  Model m = build_model(kb, options);
  try {
    FF_SITE_WRITE(out / "assets" / "style.css", detail::asset_style_css());
    FF_SITE_WRITE(out / "assets" / "search.js", detail::asset_search_js());
    FF_SITE_WRITE(out / "assets" / "search-index.js", search_index_js(m, stats));
    FF_SITE_WRITE(out / "index.html", index_page(m));
    for (const auto& e : kb.entries) {
      FF_SITE_WRITE(out / "entries" / (slug(e.id) + ".html"), entry_page(m, e));
      ++stats.entries;
    }
    for (const auto& [s, list] : m.by_framework) {
      FF_SITE_WRITE(out / "frameworks" / (s + ".html"), framework_page(m, s));
      ++stats.frameworks;
    }
    const auto cats = used_categories(m);
    for (size_t i = 0; i < cats.size(); ++i) {
      FF_SITE_WRITE(out / "categories" / (slug(cats[i]) + ".html"),
                    category_page(m, cats[i], i ? cats[i - 1] : "", i + 1 < cats.size() ? cats[i + 1] : ""));
      ++stats.categories;
    }
    for (const auto& [s, list] : m.by_tag) {
      FF_SITE_WRITE(out / "tags" / (s + ".html"), tag_page(m, s));
      ++stats.tags;
    }
  } catch (const std::exception& ex) {  // fmt or filesystem; never crosses the module boundary
    return make_error(ErrorCode::kInternal, std::string("site generation failed: ") + ex.what());
  }
  return stats;
}

}  // namespace ff::site
