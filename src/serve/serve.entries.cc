// serve/serve.entries.cc — the encyclopedia's answers: the list of entries
// (/api/entries) and one entry in full (/api/entries/<id>).
#include "serve/serve.h"
#include "serve/serve_internal.h"

#include "base/markdown.h"
#include "base/strings.h"

namespace ff::serve {

namespace {

json entry_brief(const kb::Entry& e) {
  return {{"id", e.id},       {"title", e.title},           {"category", e.category}, {"severity", e.severity},
          {"phase", e.phase}, {"frameworks", e.frameworks}, {"tags", e.tags},         {"summary", e.summary}};
}

}  // namespace

std::string entries_json(const kb::KnowledgeBase& kb) {
  json arr = json::array();
  for (const auto& e : kb.entries) arr.push_back(entry_brief(e));
  return dump(json{{"total", kb.entries.size()}, {"entries", std::move(arr)}});
}

std::string entry_json(const kb::Entry& e) {
  json j = entry_brief(e);
  j["mechanism"] = e.mechanism;
  j["affected"] = e.affected;
  j["confirm"] = e.confirm;
  if (!e.transience.empty()) j["transience"] = e.transience;
  j["root_cause"] = e.root_cause;
  j["fix"] = e.fix;
  j["verify"] = e.verify;
  j["prevention"] = e.prevention;
  j["related"] = e.related;
  json looks = json::array();
  for (const auto& l : e.lookalikes) looks.push_back({{"id", l.id}, {"how_to_tell", l.how_to_tell}});
  j["lookalikes"] = std::move(looks);
  json symptoms = json::array();
  for (const auto& s : e.symptoms) symptoms.push_back({{"symptom", s.symptom}, {"why", s.why}});
  j["symptoms"] = std::move(symptoms);
  json patterns = json::array();
  for (const auto& p : e.patterns)
    patterns.push_back({{"id", p.id}, {"role", kb::role_name(p.role)}, {"regex", p.regex}});
  j["patterns"] = std::move(patterns);
  json examples = json::array();
  for (const auto& x : e.examples) examples.push_back(x.text);
  j["examples"] = std::move(examples);
  json refs = json::array();
  for (const auto& r : e.references) refs.push_back({{"url", r.url}, {"note", r.note}});
  j["references"] = std::move(refs);
  // The text fields' inline Markdown (kb/README.md) as HTML, escaped first
  // (base/markdown.h), for the page; the fields above keep the text as written.
  auto md = [](const std::string& t) { return markdown_html(trim(t)); };
  auto md_list = [&](const std::vector<std::string>& v) {
    json a = json::array();
    for (const auto& t : v) a.push_back(md(t));
    return a;
  };
  j["html"] = {{"summary", md(e.summary)}, {"mechanism", md(e.mechanism)}, {"root_cause", md(e.root_cause)},
               {"fix", md_list(e.fix)},    {"confirm", md_list(e.confirm)}, {"prevention", md_list(e.prevention)}};
  return dump(j);
}

}  // namespace ff::serve
