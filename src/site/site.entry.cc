// site/site.entry.cc — the entry page (entry_page) and its blocks: the verify block, the
// code examples per framework, the FAQ, the entries related by shared tags.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "base/markdown.h"
#include "base/strings.h"
#include "site/site.h"
#include "site/site_internal.h"

namespace ff::site::internal {

namespace {

// Where a verify command runs (kb/README.md, "verify"), said as an instruction.
std::string verify_where_text(std::string_view where) {
  if (where == "shell") return "Run in a shell on the node (or the login host), after the fix";
  if (where == "rerun") return "Rerun the job with the fix, for a few steps";
  if (where == "in-process") return "Add to the training script";
  return std::string(where);
}

// A code block with a copy button (assets/search.js adds the button's behaviour).
std::string code_block(std::string_view code, std::string_view lang, std::string_view cls = "code") {
  return fmt::format(
      "<div class=\"codebox\"><pre class=\"{}\" data-lang=\"{}\"><code>{}</code></pre>"
      "<button type=\"button\" class=\"copy\" hidden>Copy</button></div>\n",
      cls, esc(lang), esc(trim_newlines(code)));
}

std::string verify_block(const kb::Entry& e) {
  if (trim(e.verify).empty()) return "";
  // A plain-string verify (an entry from before the page fields): prose, or a command when
  // it spans several lines.
  if (e.verify_where.empty() && e.verify_expect.empty()) {
    return trim(e.verify).find('\n') != std::string_view::npos
               ? code_block(e.verify, "text", "cmd")
               : "<div class=\"verify\">" + paras(e.verify) + "</div>\n";
  }
  std::string c = "<div class=\"verify where-" + slug(e.verify_where.empty() ? "any" : e.verify_where) + "\">\n";
  if (!e.verify_where.empty()) c += "<p class=\"where\">" + esc(verify_where_text(e.verify_where)) + ":</p>\n";
  c += code_block(e.verify, e.verify_where == "in-process" ? "python" : "bash", "cmd");
  if (!trim(e.verify_expect).empty())
    c += "<p class=\"expect\"><strong>Expect:</strong> " + inline_text(e.verify_expect) + "</p>\n";
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
      std::string link = is_web_url(r.url) ? fmt::format("<a href=\"{}\" rel=\"noopener noreferrer\">{}</a>",
                                                         esc(r.url), r.note.empty() ? esc(r.url) : inline_text(r.note))
                                           : "<span>" + esc(r.url) +
                                                 (r.note.empty() ? "" : " (" + inline_text(r.note) + ")") + "</span>";
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
    return static_cast<double>(x.second.size()) /
           static_cast<double>(std::max<size_t>(1, m.kb.entries[x.first].tags.size()));
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

}  // namespace

// ---------------------------------------------------------------------------
// Pages

// Over 80 lines: the entry page's sections in the order they show (kb/README.md, "The
// page"); each is a few lines over the same entry, and the order is the page.
std::string entry_page(const Model& m, const kb::Entry& e) {
  const std::string root = "../";
  std::string b;
  b += fmt::format(
      "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"../index.html\">Encyclopedia</a> "
      "<span aria-hidden=\"true\">&rsaquo;</span> <a href=\"../categories/{}.html\">{}</a></nav>\n",
      slug(e.category), esc(category_name(e.category)));
  b += "<article class=\"entry\">\n<header class=\"entry-head\">\n";
  b += "<h1>" + title_html(e) + "</h1>\n";
  b += "<p class=\"entry-id\"><code>" + esc(e.id) + "</code></p>\n";
  b += "<dl class=\"facts\">\n";
  b += "<div><dt>Category</dt><dd>" + chip_category(root, e.category) + "</dd></div>\n";
  b += "<div><dt>Phase</dt><dd>" + esc(phase_name(e.phase)) + "</dd></div>\n";
  b += "<div><dt>Severity</dt><dd><span class=\"sev sev-" + slug(e.severity) + "\">" + esc(e.severity) +
       "</span></dd></div>\n";
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
    s += fmt::format("<section id=\"{}\"{}>\n<h2>{}</h2>\n{}</section>\n", id,
                     cls.empty() ? "" : " class=\"" + cls + "\"", esc(heading), content);
  };
  section("what", "What this failure is", paras(e.summary), "answer");
  section("mechanism", "What happens inside", paras(e.mechanism));
  if (!e.symptoms.empty()) {
    std::string c =
        "<div class=\"table-wrap\"><table class=\"symptoms\">\n<thead><tr><th>Symptom</th><th>Why</th></tr></thead>\n"
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
        bool is_lookalike =
            std::any_of(e.lookalikes.begin(), e.lookalikes.end(), [&](const auto& l) { return l.id == r; });
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
      c += "<li>" + link + (r.note.empty() ? "" : " <span class=\"note\">&mdash; " + inline_text(r.note) + "</span>") +
           "</li>\n";
    }
    section("references", "References", c + "</ul>\n");
  }
  if (!e.patterns.empty()) {
    std::string c =
        "<div class=\"table-wrap\"><table class=\"patterns\">\n<thead><tr><th>Pattern</th><th>Role</th>"
        "<th>Matches</th></tr></thead>\n<tbody>\n";
    for (const auto& p : e.patterns) {
      std::string what =
          p.literal.empty() ? "<code class=\"rx\">" + esc(p.regex) + "</code>"
                            : "<code class=\"lit\">" + esc(p.literal) + "</code> <span class=\"note\">(literal)</span>";
      std::string prio = p.priority ? fmt::format(" <span class=\"note\">priority {}</span>", p.priority) : "";
      // Provenance: where upstream prints the text (a link to the file and line at the
      // commit or tag that was read), or the note saying it was not checked.
      for (const auto& src : p.sources)
        what += "<div class=\"note source\">printed by <a href=\"" + esc(source_href(src)) + "\">" +
                esc(source_label(src)) + "</a>" + esc(source_versions(src)) + "</div>";
      if (p.sources.empty() && !p.source_note.empty())
        what += "<div class=\"note source\">" + inline_text(p.source_note) + "</div>";
      c +=
          fmt::format("<tr><td><code>{}</code></td><td><span class=\"role role-{}\">{}</span>{}</td><td>{}</td></tr>\n",
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

}  // namespace ff::site::internal
