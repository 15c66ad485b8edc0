#include "pipeline/redaction.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

namespace ff::app {

namespace {

std::vector<std::string> strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (n && n.IsSequence())
    for (const auto& x : n) out.push_back(x.as<std::string>());
  return out;
}

}  // namespace

Result<redact::Rules> redaction_rules(const std::vector<kb::File>& files) {
  for (const kb::File& f : files) {
    if (f.path.size() < 20 || f.path.compare(f.path.size() - 20, 20, "formats/secrets.yaml") != 0) continue;
    redact::Rules rules;
    try {
      YAML::Node doc = YAML::Load(f.content);
      YAML::Node root = doc["redaction"];
      if (!root || !root.IsMap()) return make_error(ErrorCode::kInvalidKb, "no 'redaction' mapping", {f.path, 0, ""});
      YAML::Node rs = root["rules"];
      for (size_t i = 0; rs && i < rs.size(); ++i) {
        const YAML::Node& n = rs[i];
        redact::Rule r;
        r.kind = n["kind"].as<std::string>("");
        r.regex = n["regex"].as<std::string>("");
        if (r.kind.empty() || r.regex.empty())
          return make_error(ErrorCode::kInvalidKb, "a rule needs a kind and a regex",
                            {f.path, n.Mark().line + 1, "rules[" + std::to_string(i) + "]"});
        std::string replace = n["replace"].as<std::string>("placeholder");
        if (replace != "placeholder" && replace != "pseudonym")
          return make_error(ErrorCode::kInvalidKb, "replace must be placeholder or pseudonym",
                            {f.path, n.Mark().line + 1, "rules[" + std::to_string(i) + "].replace"});
        r.replace = replace == "pseudonym" ? redact::Replace::kPseudonym : redact::Replace::kPlaceholder;
        r.pseudonym = n["pseudonym"].as<std::string>("");
        r.not_after = n["not_after"].as<std::string>("");
        r.not_before = n["not_before"].as<std::string>("");
        r.check = n["check"].as<std::string>("");
        r.min_length = n["min_length"].as<size_t>(0);
        r.needs_digit = n["needs_digit"].as<bool>(false);
        r.examples = strings(n["examples"]);
        rules.rules.push_back(std::move(r));
      }
      rules.keep = strings(root["keep"]);
      rules.keep_users = strings(root["keep_users"]);
      rules.private_suffixes = strings(root["private_suffixes"]);
      rules.public_suffixes = strings(root["public_suffixes"]);
      rules.public_domains = strings(root["public_domains"]);
    } catch (const YAML::Exception& ex) {
      return make_error(ErrorCode::kInvalidKb, ex.what(), {f.path, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""});
    }
    return rules;
  }
  return make_error(ErrorCode::kInvalidKb, "no formats/secrets.yaml in the knowledge base");
}

Result<redact::Redactor> make_redactor() {
  FF_TRY(redact::Rules rules, redaction_rules());
  return redact::Redactor::create(rules);
}

namespace {

struct Walk {
  redact::Redactor& r;
  bool hosts = false;  // first pass: only collect the nodes

  void node(std::string& s) {
    if (hosts)
      r.add_host(s);
    else
      s = r.apply(s);
  }
  void text(std::string& s) {
    if (!hosts && !s.empty()) s = r.apply(s);
  }
  void texts(std::vector<std::string>& v) {
    for (auto& s : v) text(s);
  }
  void nodes(std::vector<std::string>& v) {
    for (auto& s : v) node(s);
  }
  void evidence(analyze::Evidence& e) {
    text(e.source);
    node(e.node);
    text(e.text);
  }
  void evidence(std::vector<analyze::Evidence>& v) {
    for (auto& e : v) evidence(e);
  }
  void frame(analyze::Frame& f) {
    text(f.file);
    text(f.function);
  }
  void finding(analyze::Finding& f) {
    text(f.title);
    node(f.node);
    evidence(f.evidence);
    text(f.summary);
    text(f.root_cause);
    texts(f.fix);
    text(f.verify);
    text(f.exception_type);
    text(f.node_source);
    text(f.rank_source);
    if (f.hang) {
      text(f.hang->started);
      text(f.hang->reasoning);
    }
    for (auto& fr : f.traceback) frame(fr);
    if (f.user_frame) frame(*f.user_frame);
    for (auto& c : f.context_before) text(c.text);
  }
  void diagnosis(analyze::Diagnosis& d) {
    for (auto& x : d.reasons) {
      text(x.text);
      if (x.evidence) evidence(*x.evidence);
    }
    if (d.primary) finding(*d.primary);
    for (auto& c : d.collateral) {
      text(c.title);
      nodes(c.nodes);
      evidence(c.first);
    }
    for (auto& h : d.hypotheses) {
      text(h.title);
      text(h.why);
      evidence(h.evidence);
      text(h.separate_by);
    }
    for (auto& t : d.timeline) {
      nodes(t.nodes);
      text(t.source);
      text(t.text);
    }
    for (auto& s : d.symptoms) finding(s);
    for (auto& v : d.verdicts) {
      text(v.summary);
      evidence(v.evidence);
    }
    for (auto& s : d.sources) {
      text(s.name);
      text(s.error);
      for (auto& [rank, n] : s.rank_node) node(n);
      std::map<std::pair<std::string, int>, int> pid_rank;
      for (const auto& [key, rank] : s.pid_rank) {
        std::string host = key.first;
        node(host);
        pid_rank.emplace(std::make_pair(std::move(host), key.second), rank);
      }
      s.pid_rank = std::move(pid_rank);
    }
    for (auto& x : d.recovered) evidence(x.evidence);
    evidence(d.progress.completion);
    texts(d.errors);
    texts(d.notes);
  }
};

}  // namespace

void redact_diagnosis(analyze::Diagnosis& d, redact::Redactor& r) {
  Walk{r, true}.diagnosis(d);
  Walk{r, false}.diagnosis(d);
}

void add_event_hosts(const std::vector<record::Event>& events, redact::Redactor& r) {
  for (const auto& e : events) r.add_host(e.node);
}

void redact_events(std::vector<record::Event>& events, redact::Redactor& r) {
  add_event_hosts(events, r);
  for (auto& e : events) {
    e.node = r.apply(e.node);
    e.text = r.apply(e.text);
    e.exc_type = r.apply(e.exc_type);
    e.exc_frame = r.apply(e.exc_frame);
    for (auto& c : e.exc_chain) c = r.apply(c);
    for (auto& [k, v] : e.captures) v = r.apply(v);
    for (auto& [line, t] : e.context_before) t = r.apply(t);
  }
}

void redact_errors(std::vector<Error>& errors, redact::Redactor& r) {
  for (auto& e : errors) {
    e.message = r.apply(e.message);
    e.where.file = r.apply(e.where.file);
  }
}

bool start_redactor(std::optional<redact::Redactor>& out, const std::vector<record::Event>& events,
                    std::vector<Error>& errors) {
  auto r = make_redactor();
  if (!r.ok()) {
    fmt::print(stderr, "firstfault: --redact: {}\n", r.error().to_string());
    return false;
  }
  out.emplace(std::move(*r));
  add_event_hosts(events, *out);
  redact_errors(errors, *out);
  return true;
}

void redact_json(nlohmann::ordered_json& j, redact::Redactor& r) {
  if (j.is_string()) {
    j = r.apply(j.get_ref<const std::string&>());
  } else if (j.is_structured()) {
    for (auto& v : j) redact_json(v, r);
  }
}

nlohmann::ordered_json redaction_object(const redact::Redactor& r) {
  nlohmann::ordered_json kinds = nlohmann::ordered_json::array();
  for (const auto& k : r.summary()) kinds.push_back({{"kind", k.kind}, {"count", k.count}, {"distinct", k.distinct}});
  return {{"total", r.total()}, {"kinds", std::move(kinds)}};
}

std::string add_redaction_json(const std::string& json, const redact::Redactor& r) {
  using ordered_json = nlohmann::ordered_json;
  ordered_json j = ordered_json::parse(json);
  j["redaction"] = redaction_object(r);
  return j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string redaction_line(const redact::Redactor& r) {
  std::vector<std::string> parts;
  for (const auto& k : r.summary()) {
    std::string p = fmt::format("{} {}", k.count, k.kind);
    if (k.distinct != k.count) p += fmt::format(" ({} distinct)", k.distinct);
    parts.push_back(std::move(p));
  }
  if (parts.empty()) return "Redacted (--redact): nothing to redact was found\n";
  return fmt::format("Redacted (--redact): {}; the same value has the same pseudonym throughout\n",
                     fmt::join(parts, ", "));
}

}  // namespace ff::app
