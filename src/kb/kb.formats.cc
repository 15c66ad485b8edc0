// kb/kb.formats.cc — a formats file (kb/formats/*.yaml) into the KnowledgeBase: line
// prefixes and source-name formats, the exception and frame rules, the metric aliases,
// teardown exceptions, library frames and the data of `kb check`'s page rules.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <utility>

#include "kb/kb.h"
#include "kb/kb_internal.h"

namespace ff::kb {

namespace {

// Puts `item` in `into`, in place of the one with the same key (a later file, from an
// override directory, replaces an earlier one), or at the end.
template <typename T>
void put_replacing(std::vector<T>& into, T item, std::string T::*key) {
  auto same = std::find_if(into.begin(), into.end(), [&](const T& x) { return x.*key == item.*key; });
  if (same != into.end())
    *same = std::move(item);
  else
    into.push_back(std::move(item));
}

// A list of {KEY, category} rules (`exceptions:` by type, `frames:` by path); a rule
// naming an unknown category is refused.
template <typename Rule>
void parse_category_rules(FileChecker& c, const YAML::Node& doc, const char* list, const char* key,
                          std::string Rule::*key_member, std::vector<Rule>& into) {
  YAML::Node rules = doc[list];
  if (!rules || !rules.IsSequence()) return;
  for (size_t i = 0; i < rules.size(); ++i) {
    Rule r{c.str(rules[i], key, true), c.str(rules[i], "category", true)};
    if (!contains(categories(), r.category)) {
      c.fail(rules[i]["category"], std::string(list) + "[" + std::to_string(i) + "].category",
             "unknown category '" + r.category + "'");
      continue;
    }
    put_replacing(into, std::move(r), key_member);
  }
}

// `prefixes:` or `sources:`, formats with an id, a regex and samples.
void parse_prefix_formats(FileChecker& c, const YAML::Node& doc, const char* key, std::vector<PrefixFormat>& into) {
  YAML::Node pre = doc[key];
  if (!pre || !pre.IsSequence()) return;
  for (size_t i = 0; i < pre.size(); ++i) {
    std::string field = std::string(key) + "[" + std::to_string(i) + "]";
    PrefixFormat f;
    f.line = pre[i].Mark().line + 1;
    f.id = c.str(pre[i], "id", true);
    f.regex = c.str(pre[i], "regex", true);
    f.time_format = c.str(pre[i], "time_format", false);
    if (pre[i]["consume"]) f.consume = pre[i]["consume"].as<bool>();
    if (pre[i]["glued"]) f.glued = pre[i]["glued"].as<bool>();
    if (pre[i]["rank_wins"]) f.rank_wins = pre[i]["rank_wins"].as<bool>();
    f.end = c.str(pre[i], "end", false);
    f.samples = c.list(pre[i], "samples", true);
    std::string why = f.regex.empty() ? "" : check_regex(f.regex);
    if (!why.empty()) {
      c.fail(pre[i]["regex"], field + ".regex", why);
      continue;
    }
    put_replacing(into, std::move(f), &PrefixFormat::id);
  }
}

// `metrics:` a metric's name with the keys and units that name it, or what it is the total of.
void parse_metrics(FileChecker& c, const YAML::Node& doc, std::vector<MetricSpec>& into) {
  YAML::Node ms = doc["metrics"];
  if (!ms || !ms.IsSequence()) return;
  for (size_t i = 0; i < ms.size(); ++i) {
    std::string field = "metrics[" + std::to_string(i) + "]";
    MetricSpec m;
    m.name = c.str(ms[i], "name", true);
    m.keys = c.list(ms[i], "keys", false);
    m.event_keys = c.list(ms[i], "event_keys", false);
    if (YAML::Node us = ms[i]["units"]; us && us.IsSequence()) {
      for (size_t j = 0; j < us.size(); ++j) {
        if (us[j].IsScalar()) {
          m.units.push_back({us[j].as<std::string>(), 1.0});
        } else if (us[j].IsMap()) {
          MetricUnit u{c.str(us[j], "unit", true), 1.0};
          if (us[j]["scale"]) u.scale = us[j]["scale"].as<double>();
          m.units.push_back(std::move(u));
        }
      }
    }
    m.total_of = c.str(ms[i], "total_of", false);
    if (m.keys.empty() && m.event_keys.empty() && m.units.empty() && m.total_of.empty())
      c.fail(ms[i], field, "needs keys, event_keys, units or total_of");
    put_replacing(into, std::move(m), &MetricSpec::name);
  }
}

}  // namespace

void parse_formats(const YAML::Node& doc, const std::string& path, KnowledgeBase& kb, std::vector<Error>& errors) {
  FileChecker c{path, errors};
  if (!doc.IsMap()) {
    c.fail(doc, "", "a formats file must be a YAML mapping");
    return;
  }
  parse_prefix_formats(c, doc, "prefixes", kb.prefixes);
  parse_prefix_formats(c, doc, "sources", kb.source_names);
  parse_prefix_formats(c, doc, "glue", kb.glue);
  parse_prefix_formats(c, doc, "identity", kb.identity);
  parse_prefix_formats(c, doc, "rank_headers", kb.rank_headers);
  parse_category_rules(c, doc, "exceptions", "type", &ExceptionRule::type, kb.exceptions);
  parse_category_rules(c, doc, "frames", "path", &FrameRule::path, kb.frames);
  parse_metrics(c, doc, kb.metric_specs);
  // Lists of words, each word once however many files give it.
  for (auto [key, into] : {std::pair{"teardown", &kb.teardown_exceptions},
                           {"library_frames", &kb.library_frames},
                           {"commands", &kb.lint.commands},
                           {"per_process_state", &kb.lint.per_process_state},
                           {"configurable_frameworks", &kb.lint.configurable_frameworks},
                           {"code_example_kinds", &kb.lint.code_example_kinds}}) {
    if (YAML::Node n = doc[key]; n && n.IsSequence())
      for (const auto& t : c.list(doc, key, false))
        if (!contains(*into, t)) into->push_back(t);
  }
  for (auto [key, into] :
       {std::pair{"default_branches", &kb.lint.default_branches}, {"singletons", &kb.lint.tag_singletons}}) {
    if (YAML::Node n = doc[key]; n && n.IsMap()) {
      for (const auto& kv : n) (*into)[kv.first.as<std::string>()] = kv.second.as<std::string>();
    } else if (n) {
      c.fail(n, key, "must be a mapping");
    }
  }
  if (doc["exception_default_category"])
    kb.exception_default_category = doc["exception_default_category"].as<std::string>();
}

}  // namespace ff::kb
