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

namespace ff::site {

namespace detail {
// Generated from src/site/assets/ (cmake/embed_site_assets.cmake).
std::string_view asset_style_css();
std::string_view asset_search_js();
}  // namespace detail

namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------
// Text helpers

std::string esc(std::string_view s) { return html_escape(s); }

// KB text with its inline Markdown (`code`, **strong**, *em*, [text](https://...)) as
// HTML: base/markdown.h escapes first, then adds the markup.
std::string inline_text(std::string_view s) { return markdown_html(trim(s)); }

// Paragraphs split on blank lines; single line breaks kept. Markdown is rendered over a
// whole paragraph, so a code span may run across a line break.
std::string paras(std::string_view s) {
  std::string out;
  std::string text(trim(s));
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find("\n\n", pos);
    std::string_view p = std::string_view(text).substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (!trim(p).empty()) {
      std::string body;
      for (char c : inline_text(p)) {
        if (c == '\n') body += "<br>\n";
        else body += c;
      }
      out += "<p>" + body + "</p>\n";
    }
    if (end == std::string::npos) break;
    pos = end + 2;
  }
  return out;
}

// A code block's text: blank lines at either end and trailing spaces removed, the first
// line's indentation kept (Python).
std::string trim_newlines(std::string_view s) {
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n') start = i + 1;
    else if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') break;
  }
  size_t end = s.size();
  while (end > start && (s[end - 1] == '\n' || s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r')) --end;
  return std::string(s.substr(start, end - start));
}

// At most `max` bytes, cut at a character boundary, with an ellipsis when cut.
std::string truncate_utf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return std::string(trim(s.substr(0, n))) + "\xE2\x80\xA6";
}

// The first sentence (a ". " at least 20 bytes in, never inside a code span), at most
// `max` bytes.
std::string first_sentence(std::string_view s, size_t max = 220) {
  std::string t(trim(s));
  for (char& c : t)
    if (c == '\n') c = ' ';
  bool code = false;
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i] == '`') code = !code;
    if (!code && i >= 20 && t[i] == '.' && t[i + 1] == ' ') return truncate_utf8(std::string_view(t).substr(0, i + 1), max);
  }
  return truncate_utf8(t, max);
}

// A cut text (an excerpt, a table cell) as HTML: its Markdown rendered; a cut inside a
// code span closes the span; any other delimiter the cut left without its partner is
// dropped (no raw backtick or star on a page).
std::string clipped_html(const std::string& t) {
  if (markdown_balanced(t)) return markdown_html(t);
  // Cut inside a code span: close it before the ellipsis.
  const std::string_view kEllipsis = "\xE2\x80\xA6";
  if (t.size() >= kEllipsis.size() && t.compare(t.size() - kEllipsis.size(), kEllipsis.size(), kEllipsis) == 0) {
    std::string closed = t.substr(0, t.size() - kEllipsis.size()) + "`" + std::string(kEllipsis);
    if (markdown_balanced(closed)) return markdown_html(closed);
  }
  // Otherwise the text without its markers (a delimiter left alone would show raw).
  std::string plain;
  for (char c : markdown_plain(t, PlainCode::kBare))
    if (c != '`' && c != '*') plain += c;
  return esc(plain);
}
// The first sentence of a text field, as HTML.
std::string excerpt(std::string_view s, size_t max = 220) { return clipped_html(first_sentence(s, max)); }
// At most `max` bytes of a text field, as HTML.
std::string clipped(std::string_view s, size_t max) { return clipped_html(truncate_utf8(trim(s), max)); }

// An entry's title: its backtick spans as code in a page, without markers where only text
// fits (<title>, the search index, sorting). A title is not checked for Markdown by kb
// check: a lone `*` (a glob such as CUBLAS_STATUS_*) shows as itself.
std::string title_html(const kb::Entry& e) { return inline_text(e.title); }
std::string title_plain(const kb::Entry& e) { return markdown_plain(e.title, PlainCode::kBare); }

std::string title_case_words(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c == '-' || c == '_') c = ' ';
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

std::string category_name(std::string_view c) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"gpu-memory", "GPU memory"},      {"host-memory", "Host memory"},   {"numerical", "Numerical"},
      {"communication", "Communication"}, {"hardware", "Hardware"},         {"cuda-runtime", "CUDA runtime"},
      {"checkpoint", "Checkpoint"},      {"configuration", "Configuration"}, {"data-pipeline", "Data pipeline"},
      {"launcher", "Launcher"},          {"storage", "Storage"},           {"compilation", "Compilation"},
      {"model-code", "Model code"},      {"hang", "Hang"},
  };
  auto it = kNames.find(c);
  return it != kNames.end() ? it->second : title_case_words(c);
}

std::string phase_name(std::string_view p) {
  if (p == "any") return "Any phase";
  return title_case_words(p);
}

std::string framework_name(std::string_view f) {
  static const std::map<std::string, std::string, std::less<>> kNames = {
      {"pytorch", "PyTorch"},
      {"deepspeed", "DeepSpeed"},
      {"nccl", "NCCL"},
      {"nvidia-driver", "NVIDIA driver"},
      {"cuda", "CUDA"},
      {"slurm", "Slurm"},
      {"python", "Python"},
      {"megatron", "Megatron-LM"},
      {"vllm", "vLLM"},
      {"transformers", "Hugging Face Transformers"},
      {"accelerate", "Hugging Face Accelerate"},
      {"lightning", "PyTorch Lightning"},
      {"kubernetes", "Kubernetes"},
      {"gloo", "Gloo"},
      {"numpy", "NumPy"},
      {"horovod", "Horovod"},
      {"linux", "Linux"},
      {"generic", "Any framework"},
      {"jax", "JAX"},
      {"ray", "Ray"},
      {"nvidia", "NVIDIA"},
      {"fsdp", "FSDP"},
      {"triton", "Triton"},
      {"xla", "XLA"},
      {"tensorflow", "TensorFlow"},
  };
  auto it = kNames.find(f);
  return it != kNames.end() ? it->second : std::string(f);
}

std::string transience_text(std::string_view t) {
  if (t == "terminal") return "Terminal: the run cannot recover by itself; fix the cause and restart.";
  if (t == "transient") return "Transient: the software recovers by itself; act only when it keeps recurring.";
  if (t == "depends") return "Depends on the situation: see What happens.";
  return std::string(t);
}

bool is_web_url(std::string_view u) { return starts_with(u, "https://") || starts_with(u, "http://"); }

// ---------------------------------------------------------------------------
// The site model: what links to what.

struct Model {
  const kb::KnowledgeBase& kb;
  std::vector<size_t> order;                                    // entries by title
  std::map<std::string, std::vector<size_t>> by_category;       // in categories() order below
  std::map<std::string, std::vector<size_t>> by_framework;      // slug -> entries
  std::map<std::string, std::string> framework_label;           // slug -> raw name
  std::map<std::string, std::vector<size_t>> by_tag;            // slug -> entries
  std::map<std::string, std::string> tag_label;                 // slug -> raw tag
  std::map<std::string, std::vector<std::string>> referenced_by;  // id -> ids that relate to it
  std::string generator;
};

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

struct PageSpec {
  std::string root;       // "" for index.html, "../" one level down
  std::string title;
  std::string description;
  std::string body;
  bool big_search = false;  // the index page shows the search box in the page, not the header
};

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
  if (!p.description.empty()) out += "<meta name=\"description\" content=\"" + esc(first_sentence(markdown_plain(p.description, PlainCode::kBare), 300)) + "\">\n";
  out += "<title>" + esc(p.title) + "</title>\n";
  out += "<link rel=\"icon\" href=\"data:,\">\n";
  out += "<link rel=\"stylesheet\" href=\"" + p.root + "assets/style.css\">\n";
  out += "<script defer src=\"" + p.root + "assets/search-index.js\"></script>\n";
  out += "<script defer src=\"" + p.root + "assets/search.js\"></script>\n";
  out += "</head>\n<body data-root=\"" + p.root + "\">\n";
  out += "<a class=\"skip\" href=\"#main\">Skip to content</a>\n";
  out += "<header class=\"top\"><div class=\"wrap top-inner\">\n";
  out += "<a class=\"brand\" href=\"" + p.root + "index.html\"><span class=\"logo\" aria-hidden=\"true\">&#9670;</span> "
         "firstfault <span class=\"brand-sub\">encyclopedia</span></a>\n";
  out += "<nav class=\"top-nav\"><a href=\"" + p.root + "index.html#categories\">Categories</a> <a href=\"" + p.root +
         "index.html#frameworks\">Frameworks</a> <a href=\"" + p.root + "index.html#tags\">Tags</a></nav>\n";
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
  return fmt::format("<a class=\"chip cat cat-{}\" href=\"{}index.html#cat-{}\">{}</a>", slug(cat), root, slug(cat),
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
std::string entry_item(const Model& m, const std::string& root, size_t i, bool show_category = true) {
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
  return fmt::format("<a href=\"{}\">{}</a> <code class=\"id\">{}</code>", entry_href(root, *t), title_html(*t), esc(id));
}

// Where a verify command runs (kb/README.md, "verify"), said as an instruction.
std::string verify_where_text(std::string_view where) {
  if (where == "shell") return "Run in a shell on the node (or the login host), after the fix";
  if (where == "rerun") return "Rerun the job with the fix, for a few steps";
  if (where == "in-process") return "Add to the training script";
  return std::string(where);
}

// A code block with a copy button (assets/search.js adds the button's behaviour).
std::string code_block(std::string_view code, std::string_view lang, std::string_view cls = "code") {
  return fmt::format("<div class=\"codebox\"><pre class=\"{}\" data-lang=\"{}\"><code>{}</code></pre>"
                     "<button type=\"button\" class=\"copy\" hidden>Copy</button></div>\n",
                     cls, esc(lang), esc(trim_newlines(code)));
}

std::string verify_block(const kb::Entry& e) {
  if (trim(e.verify).empty()) return "";
  // A plain-string verify (an entry from before the page fields): prose, or a command when
  // it spans several lines.
  if (e.verify_where.empty() && e.verify_expect.empty()) {
    return trim(e.verify).find('\n') != std::string_view::npos ? code_block(e.verify, "text", "cmd")
                                                                : "<div class=\"verify\">" + paras(e.verify) + "</div>\n";
  }
  std::string c = "<div class=\"verify where-" + slug(e.verify_where.empty() ? "any" : e.verify_where) + "\">\n";
  if (!e.verify_where.empty()) c += "<p class=\"where\">" + esc(verify_where_text(e.verify_where)) + ":</p>\n";
  c += code_block(e.verify, e.verify_where == "in-process" ? "python" : "bash", "cmd");
  if (!trim(e.verify_expect).empty()) c += "<p class=\"expect\"><strong>Expect:</strong> " + inline_text(e.verify_expect) + "</p>\n";
  return c + "</div>\n";
}

// A code example's kind (kb/README.md, "code_examples") as a caption, and its language.
struct ExampleKind {
  const char* kind;
  const char* caption;
  const char* lang;
};
constexpr ExampleKind kExampleKinds[] = {
    {"pytorch", "PyTorch (Python)", "python"},
    {"torchrun", "torchrun flags", "bash"},
    {"deepspeed", "DeepSpeed config (JSON)", "json"},
    {"transformers", "Hugging Face TrainingArguments", "python"},
    {"accelerate", "Hugging Face Accelerate", "python"},
    {"lightning", "PyTorch Lightning Trainer", "python"},
    {"megatron", "Megatron-LM arguments", "bash"},
    {"vllm", "vLLM engine arguments", "python"},
    {"slurm", "Slurm batch script", "bash"},
    {"kubernetes", "Kubernetes manifest", "yaml"},
    {"ray", "Ray", "python"},
    {"docker", "Docker", "bash"},
    {"bash", "Shell", "bash"},
};

std::string code_examples(const kb::Entry& e) {
  std::string c;
  std::set<std::string> shown;
  auto figure = [&](const std::string& kind, const std::string& code) {
    const ExampleKind* k = nullptr;
    for (const auto& x : kExampleKinds)
      if (kind == x.kind) k = &x;
    c += fmt::format("<figure class=\"code example-{}\"><figcaption>{}</figcaption>\n{}</figure>\n", slug(kind),
                     esc(k ? std::string(k->caption) : framework_name(kind)), code_block(code, k ? k->lang : "text"));
    shown.insert(kind);
  };
  // The kinds in the order of the table above, then any other kind.
  for (const auto& k : kExampleKinds)
    if (auto it = e.code_examples.find(k.kind); it != e.code_examples.end()) figure(it->first, it->second);
  for (const auto& [kind, code] : e.code_examples)
    if (!shown.count(kind)) figure(kind, code);
  if (!e.code_examples_note.empty()) {
    c += "<ul class=\"code-notes\">\n";
    for (const auto& [fw, note] : e.code_examples_note)
      c += "<li><span class=\"fw\">" + esc(framework_name(fw)) + ":</span> " + inline_text(note) + "</li>\n";
    c += "</ul>\n";
  }
  return c;
}

std::string faq_block(const kb::Faq& q) {
  std::string c;
  auto row = [&](const char* id, const char* question, const std::string& answer) {
    if (!trim(answer).empty())
      c += fmt::format("<div id=\"faq-{}\"><dt>{}</dt><dd>{}</dd></div>\n", id, question, answer);
  };
  auto text = [](const std::string& s) { return trim(s).empty() ? std::string() : inline_text(s); };
  row("hardware", "Hardware or software?", text(q.hardware_or_software));
  row("fix-time", "How long does the fix take?", text(q.fix_time));
  row("inference", "Does it affect inference?", text(q.inference));
  row("confirm", "What is the cheapest way to confirm it?", text(q.cheapest_confirm));
  row("scale", "How does it change from 1 GPU to 1,000?", text(q.scale));
  row("monitor", "What should be monitored?", text(q.monitor));
  if (!q.docs.empty()) {
    std::string d = "<ul class=\"docs\">\n";
    for (const auto& r : q.docs) {
      std::string link = is_web_url(r.url)
                             ? fmt::format("<a href=\"{}\" rel=\"noopener noreferrer\">{}</a>", esc(r.url),
                                           r.note.empty() ? esc(r.url) : inline_text(r.note))
                             : "<span>" + esc(r.url) + (r.note.empty() ? "" : " (" + inline_text(r.note) + ")") + "</span>";
      d += "<li>" + link + "</li>\n";
    }
    row("docs", "Official documentation", d + "</ul>\n");
  }
  return c.empty() ? c : "<dl class=\"faq\">\n" + c + "</dl>\n";
}

// The entries that share the most tags with `e` (at least one), best first: more shared
// tags, then the larger share of the other entry's tags, then the title. At most `limit`,
// leaving out `e` and the ids in `skip`.
std::vector<std::pair<size_t, std::vector<std::string>>> related_by_tags(const Model& m, const kb::Entry& e,
                                                                         const std::vector<std::string>& skip,
                                                                         size_t limit = 8) {
  std::map<size_t, std::vector<std::string>> shared;
  std::set<std::string> seen;
  for (const auto& t : e.tags) {
    std::string s = slug(t);
    if (!seen.insert(s).second) continue;
    auto it = m.by_tag.find(s);
    if (it == m.by_tag.end()) continue;
    for (size_t i : it->second) {
      const kb::Entry& o = m.kb.entries[i];
      if (o.id == e.id || std::find(skip.begin(), skip.end(), o.id) != skip.end()) continue;
      shared[i].push_back(t);
    }
  }
  std::vector<std::pair<size_t, std::vector<std::string>>> out(shared.begin(), shared.end());
  auto share = [&](const auto& x) {
    return static_cast<double>(x.second.size()) / static_cast<double>(std::max<size_t>(1, m.kb.entries[x.first].tags.size()));
  };
  std::sort(out.begin(), out.end(), [&](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
    if (share(a) != share(b)) return share(a) > share(b);
    const kb::Entry &x = m.kb.entries[a.first], &y = m.kb.entries[b.first];
    return x.title != y.title ? title_plain(x) < title_plain(y) : x.id < y.id;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

// ---------------------------------------------------------------------------
// Pages

std::string entry_page(const Model& m, const kb::Entry& e) {
  const std::string root = "../";
  std::string b;
  b += fmt::format("<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"../index.html\">Encyclopedia</a> "
                   "<span aria-hidden=\"true\">&rsaquo;</span> <a href=\"../index.html#cat-{}\">{}</a></nav>\n",
                   slug(e.category), esc(category_name(e.category)));
  b += "<article class=\"entry\">\n<header class=\"entry-head\">\n";
  b += "<h1>" + title_html(e) + "</h1>\n";
  b += "<p class=\"entry-id\"><code>" + esc(e.id) + "</code></p>\n";
  b += "<dl class=\"facts\">\n";
  b += "<div><dt>Category</dt><dd>" + chip_category(root, e.category) + "</dd></div>\n";
  b += "<div><dt>Phase</dt><dd>" + esc(phase_name(e.phase)) + "</dd></div>\n";
  b += "<div><dt>Severity</dt><dd><span class=\"sev sev-" + slug(e.severity) + "\">" + esc(e.severity) + "</span></dd></div>\n";
  b += "<div><dt>Frameworks</dt><dd>" + framework_links(m, root, e) + "</dd></div>\n";
  if (!e.transience.empty())
    b += "<div><dt>Transient or terminal</dt><dd>" + esc(title_case_words(e.transience)) + "</dd></div>\n";
  if (!e.tags.empty()) {
    b += "<div class=\"wide\"><dt>Tags</dt><dd class=\"tags\">";
    for (const auto& t : e.tags) b += fmt::format("<a class=\"tag\" href=\"../tags/{}.html\">{}</a> ", slug(t), esc(t));
    b += "</dd></div>\n";
  }
  b += "</dl>\n</header>\n";

  // Table of contents over the sections this entry has.
  std::vector<std::pair<std::string, std::string>> toc;
  std::string s;
  auto section = [&](const std::string& id, const std::string& heading, const std::string& content,
                     const std::string& cls = "") {
    if (content.empty()) return;
    toc.emplace_back(id, heading);
    s += fmt::format("<section id=\"{}\"{}>\n<h2>{}</h2>\n{}</section>\n", id, cls.empty() ? "" : " class=\"" + cls + "\"",
                     esc(heading), content);
  };
  section("what", "What this failure is", paras(e.summary), "answer");
  section("mechanism", "What happens inside", paras(e.mechanism));
  if (!e.symptoms.empty()) {
    std::string c = "<div class=\"table-wrap\"><table class=\"symptoms\">\n<thead><tr><th>Symptom</th><th>Why</th></tr></thead>\n"
                    "<tbody>\n";
    for (const auto& sy : e.symptoms)
      c += "<tr><td>" + inline_text(sy.symptom) + "</td><td>" + inline_text(sy.why) + "</td></tr>\n";
    section("symptoms", "Symptoms and why", c + "</tbody>\n</table></div>\n");
  }
  if (!e.confirm.empty()) {
    std::string c = "<ul class=\"checklist\">\n";
    for (const auto& a : e.confirm) c += "<li>" + inline_text(a) + "</li>\n";
    section("confirm", "How to confirm", c + "</ul>\n");
  }
  if (!e.transience.empty() || !trim(e.transience_recovers).empty() || !trim(e.transience_stop).empty()) {
    std::string c = "<dl class=\"rule\">\n";
    if (!e.transience.empty())
      c += "<div class=\"rule-kind rule-" + slug(e.transience) + "\"><dt>Does the run recover by itself?</dt><dd>" +
           esc(transience_text(e.transience)) + "</dd></div>\n";
    if (!trim(e.transience_recovers).empty())
      c += "<div><dt>When it goes away by itself</dt><dd>" + inline_text(e.transience_recovers) + "</dd></div>\n";
    if (!trim(e.transience_stop).empty())
      c += "<div><dt>When to stop the run</dt><dd>" + inline_text(e.transience_stop) + "</dd></div>\n";
    section("transience", "Transient or terminal", c + "</dl>\n");
  }
  section("root-cause", "Root cause", paras(e.root_cause));
  if (!e.fix.empty()) {
    std::string c = "<ol class=\"steps\">\n";
    for (const auto& f : e.fix) c += "<li>" + inline_text(f) + "</li>\n";
    section("fix", "Fix", c + "</ol>\n");
  }
  section("verify", "Verify the fix", verify_block(e));
  if (!e.prevention.empty()) {
    std::string c = "<ul>\n";
    for (const auto& p : e.prevention) c += "<li>" + inline_text(p) + "</li>\n";
    section("prevention", "Prevention", c + "</ul>\n");
  }
  section("code", "Code examples", code_examples(e));
  section("faq", "Questions people ask", faq_block(e.faq));
  if (!e.lookalikes.empty()) {
    std::string c = "<dl class=\"lookalikes\">\n";
    for (const auto& l : e.lookalikes)
      c += "<dt>" + link_to_entry(m, root, l.id) + "</dt><dd>" + inline_text(l.how_to_tell) + "</dd>\n";
    section("lookalikes", "Lookalikes and how to tell them apart", c + "</dl>\n");
  }
  {
    std::vector<std::string> rel;
    for (const auto& r : e.related)
      if (r != e.id && std::find(rel.begin(), rel.end(), r) == rel.end()) rel.push_back(r);
    if (auto it = m.referenced_by.find(e.id); it != m.referenced_by.end()) {
      for (const auto& r : it->second) {
        bool is_lookalike = std::any_of(e.lookalikes.begin(), e.lookalikes.end(), [&](const auto& l) { return l.id == r; });
        if (!is_lookalike && std::find(rel.begin(), rel.end(), r) == rel.end()) rel.push_back(r);
      }
    }
    std::string c;
    if (!rel.empty()) {
      c += "<ul class=\"related\">\n";
      for (const auto& r : rel) c += "<li>" + link_to_entry(m, root, r) + "</li>\n";
      c += "</ul>\n";
    }
    // Computed: the entries sharing the most tags with this one (not already named above).
    std::vector<std::string> named = rel;
    for (const auto& l : e.lookalikes) named.push_back(l.id);
    auto by_tag = related_by_tags(m, e, named);
    if (!by_tag.empty()) {
      c += "<h3 id=\"related-by-tag\">Sharing tags</h3>\n<ul class=\"related by-tag\">\n";
      for (const auto& [i, shared] : by_tag) {
        std::string tags;
        for (const auto& t : shared)
          tags += fmt::format(" <a class=\"tag\" href=\"{}tags/{}.html\">{}</a>", root, slug(t), esc(t));
        c += "<li>" + link_to_entry(m, root, m.kb.entries[i].id) + "<span class=\"shared\">" + tags + "</span></li>\n";
      }
      c += "</ul>\n";
    }
    section("related", "Related entries", c);
  }
  if (!e.affected.empty()) {
    std::string c = "<ul>\n";
    for (const auto& a : e.affected) c += "<li>" + inline_text(a) + "</li>\n";
    section("affected", "Affected systems and versions", c + "</ul>\n");
  }
  if (!e.references.empty()) {
    std::string c = "<ul class=\"refs\">\n";
    for (const auto& r : e.references) {
      std::string link = is_web_url(r.url)
                             ? fmt::format("<a href=\"{}\" rel=\"noopener noreferrer\">{}</a>", esc(r.url), esc(r.url))
                             : "<span>" + esc(r.url) + "</span>";
      c += "<li>" + link + (r.note.empty() ? "" : " <span class=\"note\">&mdash; " + inline_text(r.note) + "</span>") + "</li>\n";
    }
    section("references", "References", c + "</ul>\n");
  }
  if (!e.patterns.empty()) {
    std::string c = "<div class=\"table-wrap\"><table class=\"patterns\">\n<thead><tr><th>Pattern</th><th>Role</th>"
                    "<th>Matches</th></tr></thead>\n<tbody>\n";
    for (const auto& p : e.patterns) {
      std::string what = p.literal.empty() ? "<code class=\"rx\">" + esc(p.regex) + "</code>"
                                           : "<code class=\"lit\">" + esc(p.literal) + "</code> <span class=\"note\">(literal)</span>";
      std::string prio = p.priority ? fmt::format(" <span class=\"note\">priority {}</span>", p.priority) : "";
      // Provenance: where upstream prints the text (a link to the file and line at the
      // commit or tag that was read), or the note saying it was not checked.
      for (const auto& src : p.sources)
        what += "<div class=\"note source\">printed by <a href=\"" + esc(source_href(src)) + "\">" + esc(source_label(src)) +
                "</a>" + esc(source_versions(src)) + "</div>";
      if (p.sources.empty() && !p.source_note.empty()) what += "<div class=\"note source\">" + inline_text(p.source_note) + "</div>";
      c += fmt::format("<tr><td><code>{}</code></td><td><span class=\"role role-{}\">{}</span>{}</td><td>{}</td></tr>\n",
                       esc(p.id), kb::role_name(p.role), kb::role_name(p.role), prio, what);
    }
    section("patterns", "Patterns", c + "</tbody>\n</table></div>\n");
  }
  if (!e.examples.empty()) {
    std::string c;
    for (const auto& ex : e.examples) c += "<pre class=\"log\"><code>" + esc(trim(ex.text)) + "</code></pre>\n";
    section("examples", "Example log lines", c);
  }

  b += "<nav class=\"toc\" aria-label=\"On this page\"><span>On this page:</span> ";
  for (size_t i = 0; i < toc.size(); ++i) b += fmt::format("<a href=\"#{}\">{}</a> ", toc[i].first, esc(toc[i].second));
  b += "</nav>\n";
  b += s;
  b += "</article>\n";
  return render_page(m, {root, title_plain(e) + " \xC2\xB7 firstfault encyclopedia", e.summary, b, false});
}

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
    b += fmt::format("<li><a class=\"cat-card cat-{}\" href=\"#cat-{}\"><span>{}</span><span class=\"count\">{}</span></a></li>\n",
                     slug(c), slug(c), esc(category_name(c)), m.by_category.at(c).size());
  b += "</ul>\n</section>\n";

  b += "<section id=\"frameworks\" class=\"block\">\n<h2>Frameworks</h2>\n<ul class=\"fw-grid\">\n";
  std::vector<std::pair<std::string, size_t>> fws;
  for (const auto& [s, list] : m.by_framework) fws.emplace_back(s, list.size());
  std::stable_sort(fws.begin(), fws.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [s, n] : fws)
    b += fmt::format("<li><a class=\"fw-card\" href=\"frameworks/{}.html\"><span>{}</span><span class=\"count\">{}</span></a></li>\n",
                     s, esc(framework_name(m.framework_label.at(s))), n);
  b += "</ul>\n</section>\n";

  b += "<section id=\"all\" class=\"block\">\n<h2>All entries by category</h2>\n";
  for (const auto& c : cats) {
    const auto& list = m.by_category.at(c);
    b += fmt::format("<section id=\"cat-{}\" class=\"cat-section\">\n<h3><span class=\"dot cat-{}\"></span>{} "
                     "<span class=\"count\">{}</span></h3>\n<ul class=\"entry-list\">\n",
                     slug(c), slug(c), esc(category_name(c)), list.size());
    for (size_t i : list) b += entry_item(m, root, i, false);
    b += "</ul>\n</section>\n";
  }
  b += "</section>\n";

  b += "<section id=\"tags\" class=\"block\">\n<h2>Tags</h2>\n<p class=\"tag-cloud\">\n";
  for (const auto& [s, list] : m.by_tag)
    b += fmt::format("<a class=\"tag\" href=\"tags/{}.html\">{} <span class=\"count\">{}</span></a>\n", s,
                     esc(m.tag_label.at(s)), list.size());
  b += "</p>\n</section>\n";
  return render_page(m, {root, "firstfault encyclopedia: failures of ML training jobs",
                         "Failures of ML training and serving jobs: what they mean, root cause, fix.", b, true});
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
  b += fmt::format("<p class=\"lead\">{} {} that {} can print, by the lifecycle phase where they appear; a side-by-side "
                   "comparison follows.</p>\n",
                   list.size(), list.size() == 1 ? "failure" : "failures", esc(name));
  b += "<nav class=\"toc\" aria-label=\"Phases\"><span>Phases:</span> ";
  for (const auto& p : phases)
    b += fmt::format("<a href=\"#phase-{}\">{} <span class=\"count\">{}</span></a> ", slug(p), esc(phase_name(p)),
                     by_phase[p].size());
  b += "<a href=\"#compare\">Side by side</a></nav>\n";
  for (const auto& p : phases) {
    b += fmt::format("<section id=\"phase-{}\" class=\"block\">\n<h2>{} <span class=\"count\">{}</span></h2>\n"
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
      std::string symptom = !e.symptoms.empty() ? clipped(e.symptoms[0].symptom, 200)
                            : !e.examples.empty()
                                ? "<code>" + esc(truncate_utf8(trim(split(trim(e.examples[0].text), '\n')[0]), 160)) + "</code>"
                                : "";
      b += fmt::format("<tr><td><a href=\"{}\">{}</a><span class=\"meta\">{}</span></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                       entry_href(root, e), title_html(e), esc(phase_name(e.phase)), symptom,
                       excerpt(e.root_cause),
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
  b += fmt::format("<p class=\"lead\">{} {}.</p>\n<ul class=\"entry-list\">\n", list.size(), list.size() == 1 ? "entry" : "entries");
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
    entries.push_back({e.id, title_plain(e), e.category, "entries/" + slug(e.id) + ".html"});
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
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot create {}: {}", path.parent_path().string(), ec.message()));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot write {}", path.string()));
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  f.close();
  if (!f) return make_error(ErrorCode::kIo, fmt::format("cannot write {}", path.string()));
  ++stats.files;
  return {};
}

#define FF_SITE_WRITE(path, content)                        \
  do {                                                      \
    Status st_ = write_file((path), (content), stats);      \
    if (!st_.ok()) return st_.error();                      \
  } while (0)

}  // namespace

std::string html_escape(std::string_view text) { return escape_html(text); }

std::string source_label(const kb::Source& src) {
  if (!src.url.empty()) return src.url;
  return src.repo + " " + src.path + (src.line > 0 ? ":" + std::to_string(src.line) : "") + " @ " + src.ref;
}

std::string source_versions(const kb::Source& src) {
  return (src.since.empty() ? "" : ", since " + src.since) + (src.until.empty() ? "" : ", until " + src.until);
}

std::string source_href(const kb::Source& src) {
  if (!src.url.empty()) return src.url;
  return "https://github.com/" + src.repo + "/blob/" + src.ref + "/" + src.path +
         (src.line > 0 ? "#L" + std::to_string(src.line) : "");
}

std::string slug(std::string_view name) {
  std::string out;
  bool dash = false;
  for (unsigned char c : name) {
    char l = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '.' || l == '_' || l == '-';
    if (ok && l != '-') {
      if (dash && !out.empty()) out.push_back('-');
      dash = false;
      out.push_back(l);
    } else {
      dash = true;
    }
  }
  while (!out.empty() && (out.back() == '.' || out.back() == '-')) out.pop_back();
  size_t lead = 0;
  while (lead < out.size() && (out[lead] == '.' || out[lead] == '-')) ++lead;
  out.erase(0, lead);
  return out.empty() ? "x" : out;
}

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
