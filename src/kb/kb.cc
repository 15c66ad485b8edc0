#include "kb/kb.h"

#include <fcntl.h>
#include <re2/re2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <type_traits>

#include "base/cache.h"
#include "base/strings.h"

namespace ff::kb {

const char* role_name(Role role) {
  switch (role) {
    case Role::kRoot: return "root";
    case Role::kCollateral: return "collateral";
    case Role::kSymptom: return "symptom";
    case Role::kContext: return "context";
    case Role::kCompletion: return "completion";
  }
  return "root";
}

const char* precedence_name(Precedence p) {
  switch (p) {
    case Precedence::kHardware: return "hardware";
    case Precedence::kRoot: return "root";
    case Precedence::kWeak: return "weak";
    case Precedence::kCollateral: return "collateral";
    case Precedence::kNone: return "none";
  }
  return "none";
}

const std::vector<std::string>& categories() {
  static const std::vector<std::string> kCats = {
      "gpu-memory", "host-memory", "numerical", "communication", "hardware",
      "cuda-runtime", "checkpoint", "configuration", "data-pipeline", "launcher",
      "storage", "compilation", "model-code", "hang"};
  return kCats;
}

const std::vector<std::string>& phases() {
  static const std::vector<std::string> kPhases = {
      "startup", "data-loading", "forward", "backward", "optimizer-step", "checkpoint",
      "communication", "evaluation", "shutdown", "serving", "any"};
  return kPhases;
}

const Entry* KnowledgeBase::find(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : &entries[it->second];
}

namespace {

// The encyclopedia fields (mechanism, affected, confirm) are required of every entry.
constexpr bool kDepthRequired = true;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Collects the errors of one file; every check adds a located message and carries on.
struct FileChecker {
  const std::string& path;
  std::vector<Error>& errors;
  bool failed = false;

  void fail(const YAML::Node& at, const std::string& field, const std::string& message) {
    int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    errors.push_back(make_error(ErrorCode::kInvalidKb, message, {path, line > 0 ? line : 0, field}));
    failed = true;
  }

  std::string str(const YAML::Node& map, const char* key, bool required) {
    YAML::Node n = map[key];
    if (!n || n.IsNull()) {
      if (required) fail(map, key, "missing required field");
      return {};
    }
    if (!n.IsScalar()) {
      fail(n, key, "must be a string");
      return {};
    }
    std::string v = n.as<std::string>();
    if (required && trim(v).empty()) fail(n, key, "must not be empty");
    return v;
  }

  std::vector<std::string> list(const YAML::Node& map, const char* key, bool required) {
    std::vector<std::string> out;
    YAML::Node n = map[key];
    if (!n || n.IsNull()) {
      if (required) fail(map, key, "missing required field");
      return out;
    }
    if (!n.IsSequence()) {
      fail(n, key, "must be a list");
      return out;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) {
        fail(n[i], std::string(key) + "[" + std::to_string(i) + "]", "must be a string");
        continue;
      }
      out.push_back(n[i].as<std::string>());
    }
    if (required && out.empty()) fail(n, key, "must not be empty");
    return out;
  }
};

std::string escape_literal(std::string_view lit) { return RE2::QuoteMeta(std::string(lit)); }

// Checks that a regex is in the subset both RE2 and Vectorscan accept.
std::string check_regex(const std::string& rx) {
  RE2::Options opts;
  opts.set_log_errors(false);
  RE2 re(rx, opts);
  if (!re.ok()) return "regex does not compile: " + re.error();
  static const char* kUnsupported[] = {"(?=", "(?!", "(?<=", "(?<!", "(?>", "\\K", "\\Z", "\\z"};
  for (const char* bad : kUnsupported) {
    if (rx.find(bad) != std::string::npos) return std::string("regex uses unsupported construct ") + bad;
  }
  RE2 empty_probe(rx, opts);
  if (RE2::PartialMatch("", empty_probe)) return "regex matches the empty string, so it would match every line";
  return {};
}

// A pattern's `source:` (one mapping or a list of them) and `source_note:`. A source names
// a repository (owner/name) with the tag or commit that was read and the path there, or a
// documentation `url`; `line` is a positive number.
void parse_sources(FileChecker& c, const YAML::Node& p, const std::string& field, Pattern& pat) {
  pat.source_note = c.str(p, "source_note", false);
  YAML::Node src = p["source"];
  if (!src || src.IsNull()) return;
  std::vector<YAML::Node> items;
  if (src.IsMap()) items.push_back(src);
  else if (src.IsSequence())
    for (size_t i = 0; i < src.size(); ++i) items.push_back(src[i]);
  else {
    c.fail(src, field + ".source", "must be a mapping {repo, ref, path, line} or {url}, or a list of them");
    return;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const YAML::Node& n = items[i];
    std::string at = field + ".source" + (src.IsSequence() ? "[" + std::to_string(i) + "]" : "");
    if (!n.IsMap()) {
      c.fail(n, at, "must be a mapping {repo, ref, path, line} or {url}");
      continue;
    }
    Source s;
    s.repo = c.str(n, "repo", false);
    s.ref = c.str(n, "ref", false);
    s.path = c.str(n, "path", false);
    s.url = c.str(n, "url", false);
    s.since = c.str(n, "since", false);
    s.until = c.str(n, "until", false);
    if (n["line"]) {
      try {
        s.line = n["line"].as<int>();
      } catch (const YAML::Exception&) {
        s.line = -1;
      }
      if (s.line <= 0) c.fail(n["line"], at + ".line", "must be a positive line number");
    }
    if (s.url.empty() && (s.repo.empty() || s.path.empty() || s.ref.empty()))
      c.fail(n, at, "needs repo, ref (the tag or commit read) and path, or a url");
    if (!s.repo.empty() && std::count(s.repo.begin(), s.repo.end(), '/') != 1)
      c.fail(n["repo"], at + ".repo", "must be owner/name");
    if (!s.url.empty() && s.url.rfind("https://", 0) != 0) c.fail(n["url"], at + ".url", "must be an https:// URL");
    for (const auto& kv : n) {
      static const char* kKeys[] = {"repo", "ref", "path", "line", "url", "since", "until"};
      std::string k = kv.first.as<std::string>();
      if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys))
        c.fail(kv.second, at + "." + k, "unknown field (repo, ref, path, line, url, since, until)");
    }
    pat.sources.push_back(std::move(s));
  }
}

Entry parse_entry(const YAML::Node& doc, const std::string& path, std::vector<Error>& errors, bool& ok,
                  bool trusted) {
  FileChecker c{path, errors};
  Entry e;
  e.file = path;
  if (!doc.IsMap()) {
    c.fail(doc, "", "an entry must be a YAML mapping");
    ok = false;
    return e;
  }
  e.id = c.str(doc, "id", true);
  if (!e.id.empty()) {
    bool good = std::all_of(e.id.begin(), e.id.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
    });
    if (!good) c.fail(doc["id"], "id", "must use only a-z, 0-9, '.', '-', '_'");
  }
  e.title = c.str(doc, "title", true);
  e.category = c.str(doc, "category", true);
  // "healthy" names the entries whose lines show a run that ended well (role completion).
  if (!e.category.empty() && !contains(categories(), e.category) && e.category != "healthy")
    c.fail(doc["category"], "category", "unknown category '" + e.category + "'");
  e.severity = c.str(doc, "severity", true);
  if (!e.severity.empty() && !contains({"fatal", "error", "warning", "info"}, e.severity))
    c.fail(doc["severity"], "severity", "must be fatal, error, warning or info");
  e.phase = c.str(doc, "phase", true);
  if (!e.phase.empty() && !contains(phases(), e.phase))
    c.fail(doc["phase"], "phase", "unknown lifecycle phase '" + e.phase + "'");
  e.frameworks = c.list(doc, "frameworks", true);
  e.tags = c.list(doc, "tags", false);
  e.summary = c.str(doc, "summary", true);
  e.mechanism = c.str(doc, "mechanism", kDepthRequired);
  e.affected = c.list(doc, "affected", kDepthRequired);
  e.confirm = c.list(doc, "confirm", kDepthRequired);
  e.transience = c.str(doc, "transience", false);
  if (!e.transience.empty() && !contains({"terminal", "transient", "depends"}, e.transience))
    c.fail(doc["transience"], "transience", "must be terminal, transient or depends");
  if (YAML::Node la = doc["lookalikes"]; la && la.IsSequence()) {
    for (size_t i = 0; i < la.size(); ++i) {
      if (!la[i].IsMap()) {
        c.fail(la[i], "lookalikes[" + std::to_string(i) + "]", "must be a mapping {id, how_to_tell}");
        continue;
      }
      e.lookalikes.push_back({c.str(la[i], "id", true), c.str(la[i], "how_to_tell", true)});
    }
  }
  e.root_cause = c.str(doc, "root_cause", true);
  e.fix = c.list(doc, "fix", true);
  if (YAML::Node v = doc["verify"]; v && v.IsMap()) {
    e.verify = c.str(v, "command", true);
    e.verify_where = c.str(v, "where", true);
    e.verify_expect = c.str(v, "expect", true);
    if (!e.verify_where.empty() && !contains({"shell", "rerun", "in-process"}, e.verify_where))
      c.fail(v["where"], "verify.where", "must be shell, rerun or in-process");
    for (const auto& kv : v) {
      std::string k = kv.first.as<std::string>();
      if (!contains({"command", "where", "expect"}, k)) c.fail(kv.second, "verify." + k, "unknown field (where, command, expect)");
    }
  } else {
    e.verify = c.str(doc, "verify", true);
  }
  if (YAML::Node t = doc["transience_rule"]; t) {
    if (!t.IsMap()) {
      c.fail(t, "transience_rule", "must be a mapping {recovers, stop}");
    } else {
      e.transience_recovers = c.str(t, "recovers", true);
      e.transience_stop = c.str(t, "stop", true);
    }
  }
  if (YAML::Node f = doc["faq"]; f) {
    if (!f.IsMap()) {
      c.fail(f, "faq", "must be a mapping (hardware_or_software, fix_time, inference, cheapest_confirm, scale, monitor, docs)");
    } else {
      e.faq.hardware_or_software = c.str(f, "hardware_or_software", false);
      e.faq.fix_time = c.str(f, "fix_time", false);
      e.faq.inference = c.str(f, "inference", false);
      e.faq.cheapest_confirm = c.str(f, "cheapest_confirm", false);
      e.faq.scale = c.str(f, "scale", false);
      e.faq.monitor = c.str(f, "monitor", false);
      if (YAML::Node d = f["docs"]; d && d.IsSequence()) {
        for (size_t i = 0; i < d.size(); ++i) {
          if (d[i].IsScalar()) e.faq.docs.push_back({d[i].as<std::string>(), ""});
          else if (d[i].IsMap()) e.faq.docs.push_back({c.str(d[i], "url", true), c.str(d[i], "note", false)});
          else c.fail(d[i], "faq.docs[" + std::to_string(i) + "]", "must be a URL or {url, note}");
        }
      } else if (d) {
        c.fail(d, "faq.docs", "must be a list of {url, note}");
      }
      for (const auto& kv : f) {
        std::string k = kv.first.as<std::string>();
        if (!contains({"hardware_or_software", "fix_time", "inference", "cheapest_confirm", "scale", "monitor", "docs"}, k))
          c.fail(kv.second, "faq." + k, "unknown question");
      }
    }
  }
  e.prevention = c.list(doc, "prevention", false);
  e.related = c.list(doc, "related", false);
  e.negatives = c.list(doc, "negatives", false);

  YAML::Node pats = doc["patterns"];
  if (!pats || !pats.IsSequence() || pats.size() == 0) {
    c.fail(pats ? pats : doc, "patterns", "needs a list of at least one pattern");
  } else {
    std::set<std::string> seen;
    for (size_t i = 0; i < pats.size(); ++i) {
      const YAML::Node& p = pats[i];
      std::string field = "patterns[" + std::to_string(i) + "]";
      if (!p.IsMap()) {
        c.fail(p, field, "must be a mapping");
        continue;
      }
      Pattern pat;
      pat.line = p.Mark().line + 1;
      pat.id = c.str(p, "id", true);
      if (!pat.id.empty() && !seen.insert(pat.id).second) c.fail(p["id"], field + ".id", "duplicate pattern id '" + pat.id + "'");
      std::string role = c.str(p, "role", true);
      if (role == "root") pat.role = Role::kRoot;
      else if (role == "collateral") pat.role = Role::kCollateral;
      else if (role == "symptom") pat.role = Role::kSymptom;
      else if (role == "context") pat.role = Role::kContext;
      else if (role == "completion") pat.role = Role::kCompletion;
      else if (!role.empty())
        c.fail(p["role"], field + ".role", "must be root, collateral, symptom, context or completion");
      pat.precedence = pat.role == Role::kRoot         ? Precedence::kRoot
                       : pat.role == Role::kCollateral ? Precedence::kCollateral
                                                       : Precedence::kNone;
      if (p["precedence"]) {
        std::string prec = c.str(p, "precedence", true);
        static const std::pair<const char*, Precedence> kPrec[] = {{"hardware", Precedence::kHardware},
                                                                   {"root", Precedence::kRoot},
                                                                   {"weak", Precedence::kWeak},
                                                                   {"collateral", Precedence::kCollateral},
                                                                   {"none", Precedence::kNone}};
        auto it = std::find_if(std::begin(kPrec), std::end(kPrec), [&](const auto& x) { return prec == x.first; });
        if (it == std::end(kPrec)) c.fail(p["precedence"], field + ".precedence", "must be hardware, root, weak, collateral or none");
        else if (pat.role != Role::kRoot && pat.role != Role::kCollateral && it->second != Precedence::kNone)
          c.fail(p["precedence"], field + ".precedence", "only a root or collateral pattern can be a failure");
        else pat.precedence = it->second;
      }
      bool has_rx = p["regex"].IsDefined(), has_lit = p["literal"].IsDefined();
      if (has_rx == has_lit) {
        c.fail(p, field, "needs exactly one of 'regex' or 'literal'");
        continue;
      }
      if (has_lit) {
        pat.literal = c.str(p, "literal", true);
        pat.regex = escape_literal(pat.literal);
      } else {
        pat.regex = c.str(p, "regex", true);
      }
      if (p["priority"]) {
        try {
          pat.priority = p["priority"].as<int>();
        } catch (const YAML::Exception&) {
          c.fail(p["priority"], field + ".priority", "must be an integer");
        }
      }
      parse_sources(c, p, field, pat);
      if (!pat.regex.empty() && !trusted) {
        std::string why = check_regex(pat.regex);
        if (!why.empty()) c.fail(p[has_rx ? "regex" : "literal"], field + (has_rx ? ".regex" : ".literal"), why);
      }
      e.patterns.push_back(std::move(pat));
    }
  }
  {
    // A completion entry (category healthy) holds only completion patterns, and a
    // completion pattern belongs to such an entry: the two meanings never mix.
    bool healthy = e.category == "healthy";
    for (size_t i = 0; i < e.patterns.size(); ++i) {
      if ((e.patterns[i].role == Role::kCompletion) != healthy)
        c.fail(doc["patterns"][i], "patterns[" + std::to_string(i) + "].role",
               healthy ? "an entry of category healthy holds only completion patterns"
                       : "a completion pattern belongs in an entry of category healthy");
    }
  }

  YAML::Node syms = doc["symptoms"];
  if (syms && syms.IsSequence()) {
    for (size_t i = 0; i < syms.size(); ++i) {
      if (!syms[i].IsMap()) {
        c.fail(syms[i], "symptoms[" + std::to_string(i) + "]", "must be a mapping {symptom, why}");
        continue;
      }
      e.symptoms.push_back({c.str(syms[i], "symptom", true), c.str(syms[i], "why", false)});
    }
  }
  YAML::Node refs = doc["references"];
  if (!refs || !refs.IsSequence() || refs.size() == 0) {
    c.fail(refs ? refs : doc, "references", "needs at least one reference {url, note}");
  } else {
    for (size_t i = 0; i < refs.size(); ++i) {
      if (refs[i].IsScalar()) {
        e.references.push_back({refs[i].as<std::string>(), ""});
      } else if (refs[i].IsMap()) {
        e.references.push_back({c.str(refs[i], "url", true), c.str(refs[i], "note", false)});
      } else {
        c.fail(refs[i], "references[" + std::to_string(i) + "]", "must be a URL or {url, note}");
      }
    }
  }
  YAML::Node code = doc["code_examples"];
  if (code && code.IsMap()) {
    for (const auto& kv : code) e.code_examples[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  YAML::Node code_note = doc["code_examples_note"];
  if (code_note && code_note.IsMap()) {
    for (const auto& kv : code_note) e.code_examples_note[kv.first.as<std::string>()] = kv.second.as<std::string>();
  } else if (code_note) {
    c.fail(code_note, "code_examples_note", "must be a mapping framework: why no example applies");
  }
  YAML::Node exs = doc["examples"];
  if (!exs || !exs.IsSequence() || exs.size() == 0) {
    c.fail(exs ? exs : doc, "examples", "needs at least one example log snippet");
  } else {
    for (size_t i = 0; i < exs.size(); ++i) {
      Example ex;
      ex.line = exs[i].Mark().line + 1;
      if (exs[i].IsScalar()) {
        ex.text = exs[i].as<std::string>();
      } else if (exs[i].IsMap()) {
        ex.text = c.str(exs[i], "text", true);
        if (exs[i]["captures"] && exs[i]["captures"].IsMap()) {
          for (const auto& kv : exs[i]["captures"]) ex.captures[kv.first.as<std::string>()] = kv.second.as<std::string>();
        }
      } else {
        c.fail(exs[i], "examples[" + std::to_string(i) + "]", "must be a string or {text, captures}");
        continue;
      }
      e.examples.push_back(std::move(ex));
    }
  }
  ok = !c.failed;
  return e;
}

void parse_formats(const YAML::Node& doc, const std::string& path, KnowledgeBase& kb, std::vector<Error>& errors) {
  FileChecker c{path, errors};
  if (!doc.IsMap()) {
    c.fail(doc, "", "a formats file must be a YAML mapping");
    return;
  }
  for (const char* key : {"prefixes", "sources"}) {
    YAML::Node pre = doc[key];
    if (!pre || !pre.IsSequence()) continue;
    std::vector<PrefixFormat>& into = std::string(key) == "prefixes" ? kb.prefixes : kb.source_names;
    for (size_t i = 0; i < pre.size(); ++i) {
      std::string field = std::string(key) + "[" + std::to_string(i) + "]";
      PrefixFormat f;
      f.line = pre[i].Mark().line + 1;
      f.id = c.str(pre[i], "id", true);
      f.regex = c.str(pre[i], "regex", true);
      f.time_format = c.str(pre[i], "time_format", false);
      if (pre[i]["consume"]) f.consume = pre[i]["consume"].as<bool>();
      f.samples = c.list(pre[i], "samples", true);
      std::string why = f.regex.empty() ? "" : check_regex(f.regex);
      if (!why.empty()) {
        c.fail(pre[i]["regex"], field + ".regex", why);
        continue;
      }
      // A format with the same id (from an override directory) replaces the earlier one.
      auto same = std::find_if(into.begin(), into.end(), [&](const PrefixFormat& p) { return p.id == f.id; });
      if (same != into.end()) *same = std::move(f);
      else into.push_back(std::move(f));
    }
  }
  if (YAML::Node ex = doc["exceptions"]; ex && ex.IsSequence()) {
    for (size_t i = 0; i < ex.size(); ++i) {
      ExceptionRule r{c.str(ex[i], "type", true), c.str(ex[i], "category", true)};
      if (!contains(categories(), r.category)) {
        c.fail(ex[i]["category"], "exceptions[" + std::to_string(i) + "].category", "unknown category '" + r.category + "'");
        continue;
      }
      auto same = std::find_if(kb.exceptions.begin(), kb.exceptions.end(), [&](const ExceptionRule& x) { return x.type == r.type; });
      if (same != kb.exceptions.end()) *same = std::move(r);
      else kb.exceptions.push_back(std::move(r));
    }
  }
  if (YAML::Node fr = doc["frames"]; fr && fr.IsSequence()) {
    for (size_t i = 0; i < fr.size(); ++i) {
      FrameRule r{c.str(fr[i], "path", true), c.str(fr[i], "category", true)};
      if (!contains(categories(), r.category)) {
        c.fail(fr[i]["category"], "frames[" + std::to_string(i) + "].category", "unknown category '" + r.category + "'");
        continue;
      }
      auto same = std::find_if(kb.frames.begin(), kb.frames.end(), [&](const FrameRule& x) { return x.path == r.path; });
      if (same != kb.frames.end()) *same = std::move(r);
      else kb.frames.push_back(std::move(r));
    }
  }
  if (YAML::Node ms = doc["metrics"]; ms && ms.IsSequence()) {
    for (size_t i = 0; i < ms.size(); ++i) {
      std::string field = "metrics[" + std::to_string(i) + "]";
      MetricSpec m;
      m.name = c.str(ms[i], "name", true);
      m.keys = c.list(ms[i], "keys", false);
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
      if (m.keys.empty() && m.units.empty() && m.total_of.empty()) c.fail(ms[i], field, "needs keys, units or total_of");
      auto same = std::find_if(kb.metric_specs.begin(), kb.metric_specs.end(), [&](const MetricSpec& x) { return x.name == m.name; });
      if (same != kb.metric_specs.end()) *same = std::move(m);
      else kb.metric_specs.push_back(std::move(m));
    }
  }
  if (YAML::Node td = doc["teardown"]; td && td.IsSequence()) {
    for (const auto& t : c.list(doc, "teardown", false))
      if (!contains(kb.teardown_exceptions, t)) kb.teardown_exceptions.push_back(t);
  }
  if (YAML::Node lf = doc["library_frames"]; lf && lf.IsSequence()) {
    for (const auto& t : c.list(doc, "library_frames", false))
      if (!contains(kb.library_frames, t)) kb.library_frames.push_back(t);
  }
  for (auto [key, into] : {std::pair{"commands", &kb.lint.commands}, {"per_process_state", &kb.lint.per_process_state},
                           {"configurable_frameworks", &kb.lint.configurable_frameworks},
                           {"code_example_kinds", &kb.lint.code_example_kinds}}) {
    if (YAML::Node n = doc[key]; n && n.IsSequence())
      for (const auto& t : c.list(doc, key, false))
        if (!contains(*into, t)) into->push_back(t);
  }
  for (auto [key, into] : {std::pair{"default_branches", &kb.lint.default_branches}, {"singletons", &kb.lint.tag_singletons}}) {
    if (YAML::Node n = doc[key]; n && n.IsMap()) {
      for (const auto& kv : n) (*into)[kv.first.as<std::string>()] = kv.second.as<std::string>();
    } else if (n) {
      c.fail(n, key, "must be a mapping");
    }
  }
  if (doc["exception_default_category"]) kb.exception_default_category = doc["exception_default_category"].as<std::string>();
}

bool is_format_path(const std::string& path) {
  return path.find("formats/") != std::string::npos;
}

}  // namespace

struct Loader {
  static void index(KnowledgeBase& kb) {
    kb.by_id_.clear();
    for (size_t i = 0; i < kb.entries.size(); ++i) kb.by_id_[kb.entries[i].id] = i;
  }
  static void add(KnowledgeBase& kb, Entry e) {
    auto it = kb.by_id_.find(e.id);
    if (it != kb.by_id_.end()) {
      kb.entries[it->second] = std::move(e);  // an override replaces the entry with the same id
    } else {
      kb.by_id_[e.id] = kb.entries.size();
      kb.entries.push_back(std::move(e));
    }
  }
};

namespace {

// 1-based line of the first byte of `s` that is not valid UTF-8, or 0 when it is all valid.
int first_invalid_utf8_line(std::string_view s) {
  const std::string clean = sanitize_utf8(s);
  if (clean == s) return 0;
  // sanitize_utf8 keeps valid bytes and puts U+FFFD (3 bytes) for each bad one: the first
  // difference is where the first bad byte was.
  size_t i = 0;
  while (i < s.size() && i < clean.size() && s[i] == clean[i]) ++i;
  return 1 + static_cast<int>(std::count(s.begin(), s.begin() + static_cast<long>(i), '\n'));
}

// `override_files`: the id -> file of the entries the override directories gave so far:
// an id an override gives twice is an error (which one is meant cannot be told), while
// an override of an embedded entry is the feature (kb/README.md).
void load_file(const File& f, KnowledgeBase& kb, std::vector<Error>& errors,
               std::map<std::string, std::string>& id_files, bool is_override,
               std::map<std::string, std::string>& override_files) {
  // Every text of the KB is shown and written as UTF-8 (JSON output cannot hold anything
  // else: nlohmann throws on it); a file that is not is refused, saying where.
  if (int line = first_invalid_utf8_line(f.content); line > 0) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "not valid UTF-8; the file is skipped", {f.path, line, ""}));
    return;
  }
  YAML::Node doc;
  try {
    doc = YAML::Load(f.content);
  } catch (const YAML::Exception& ex) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "YAML syntax error: " + ex.msg,
                                {f.path, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}));
    return;
  }
  try {
    if (is_format_path(f.path)) {
      parse_formats(doc, f.path, kb, errors);
      return;
    }
    bool ok = false;
    Entry e = parse_entry(doc, f.path, errors, ok, f.trusted);
    if (!ok) return;
    auto seen = id_files.find(e.id);
    if (seen != id_files.end() && !is_override) {
      errors.push_back(make_error(ErrorCode::kInvalidKb, "duplicate id '" + e.id + "' (also in " + seen->second + ")",
                                  {f.path, doc["id"].Mark().line + 1, "id"}));
      return;
    }
    if (is_override) {
      auto twice = override_files.find(e.id);
      if (twice != override_files.end()) {
        errors.push_back(make_error(ErrorCode::kInvalidKb,
                                    "duplicate id '" + e.id + "' (also in " + twice->second + ", which is used)",
                                    {f.path, doc["id"].Mark().line + 1, "id"}));
        return;
      }
      override_files[e.id] = f.path;
    }
    id_files[e.id] = f.path;
    Loader::add(kb, std::move(e));
  } catch (const YAML::Exception& ex) {
    errors.push_back(make_error(ErrorCode::kInvalidKb, "unexpected YAML shape: " + ex.msg,
                                {f.path, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, ""}));
  }
}

}  // namespace

namespace {

// ---- the parsed-KB cache: YAML parsing dominates start-up, so the loaded model is kept
// keyed by the hash of every file's path and content, in a binary layout read straight
// into the structs: u32 counts, length-prefixed strings, numbers as their bytes (the file
// never leaves the machine that wrote it). The reader checks every length against the
// bytes left, so a short or damaged file is noticed and the YAML parsed instead.

constexpr const char* kCacheMagic = "ffkb";
// 6: checksums of the two sections after the key; 7: precedence, teardown exceptions,
// total_of and the completion role; 8: library_frames; 9: a pattern's sources and source_note;
// 10: the page (verify's where and expect, transience_rule, faq, code_examples_note) and lint data.
constexpr const char* kCacheVersion = "kbcache-10";

// One field list per type serves both directions, so the writer and the reader cannot
// disagree on the layout.
template <typename T, typename U>
concept Is = std::is_same_v<std::remove_const_t<T>, U>;

void fields(auto& io, Is<Source> auto& s) { io(s.repo, s.ref, s.path, s.line, s.url, s.since, s.until); }
void fields(auto& io, Is<Pattern> auto& p) {
  io(p.id, p.role, p.regex, p.literal, p.priority, p.precedence, p.line, p.sources, p.source_note);
}
void fields(auto& io, Is<Example> auto& x) { io(x.text, x.captures, x.line); }
void fields(auto& io, Is<Symptom> auto& s) { io(s.symptom, s.why); }
void fields(auto& io, Is<Reference> auto& r) { io(r.url, r.note); }
void fields(auto& io, Is<Lookalike> auto& l) { io(l.id, l.how_to_tell); }
void fields(auto& io, Is<Faq> auto& f) {
  io(f.hardware_or_software, f.fix_time, f.inference, f.cheapest_confirm, f.scale, f.monitor, f.docs);
}
void fields(auto& io, Is<LintData> auto& l) {
  io(l.commands, l.per_process_state, l.configurable_frameworks, l.code_example_kinds, l.default_branches,
     l.tag_singletons);
}
// An entry is the fields a diagnosis reads, then the page fields (LoadOptions::page_fields),
// which the cache keeps in a section of their own so that a load without them skips it.
void fields(auto& io, Is<Entry> auto& e) {
  io(e.id, e.title, e.category, e.severity, e.summary, e.patterns, e.symptoms, e.root_cause, e.fix, e.verify,
     e.references, e.file);
}
void page_fields(auto& io, Is<Entry> auto& e) {
  io(e.phase, e.frameworks, e.tags, e.mechanism, e.affected, e.confirm, e.transience, e.lookalikes, e.prevention,
     e.related, e.code_examples, e.examples, e.negatives, e.verify_where, e.verify_expect, e.transience_recovers,
     e.transience_stop, e.faq, e.code_examples_note);
}
void fields(auto& io, Is<PrefixFormat> auto& f) { io(f.id, f.regex, f.consume, f.time_format, f.samples, f.line); }
void fields(auto& io, Is<ExceptionRule> auto& r) { io(r.type, r.category); }
void fields(auto& io, Is<FrameRule> auto& r) { io(r.path, r.category); }
void fields(auto& io, Is<MetricUnit> auto& u) { io(u.unit, u.scale); }
void fields(auto& io, Is<MetricSpec> auto& m) { io(m.name, m.keys, m.units, m.total_of); }
void fields(auto& io, Is<KnowledgeBase> auto& kb) {
  io(kb.entries, kb.prefixes, kb.source_names, kb.exceptions, kb.frames, kb.metric_specs,
     kb.exception_default_category, kb.teardown_exceptions, kb.library_frames, kb.lint);
}
void fields(auto& io, Is<Location> auto& l) { io(l.file, l.line, l.field); }
void fields(auto& io, Is<Error> auto& e) { io(e.code, e.message, e.where); }

// Empties every field it is given (page_fields(clear, e) for a load without them).
struct ClearFields {
  template <typename... T>
  void operator()(T&... v) const { ((v = T{}), ...); }
};

class CacheWriter {
 public:
  template <typename... T>
  void operator()(const T&... v) { (put(v), ...); }
  const std::string& bytes() const { return out_; }

 private:
  template <typename T>
  void scalar(T v) { out_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(uint32_t v) { scalar(v); }
  void put(uint64_t v) { scalar(v); }
  void put(int v) { scalar(v); }
  void put(double v) { scalar(v); }
  void put(bool v) { scalar(static_cast<uint8_t>(v)); }
  void put(Role v) { scalar(static_cast<uint8_t>(v)); }
  void put(Precedence v) { scalar(static_cast<uint8_t>(v)); }
  void put(ErrorCode v) { scalar(static_cast<uint8_t>(v)); }
  void put(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  template <typename T>
  void put(const std::vector<T>& v) {
    put(static_cast<uint32_t>(v.size()));
    for (const T& x : v) put(x);
  }
  void put(const std::map<std::string, std::string>& m) {
    put(static_cast<uint32_t>(m.size()));
    for (const auto& [k, v] : m) put(k), put(v);
  }
  template <typename T>
  void put(const T& x) { fields(*this, x); }

  std::string out_;
};

class CacheReader {
 public:
  explicit CacheReader(std::string_view in) : in_(in) {}
  template <typename... T>
  void operator()(T&... v) { (get(v), ...); }
  // Everything read was there and nothing is left over.
  bool complete() const { return ok_ && pos_ == in_.size(); }
  size_t pos() const { return pos_; }

 private:
  // The next n bytes, or null (and the reader has failed) when fewer are left.
  const char* take(size_t n) {
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return nullptr;
    }
    pos_ += n;
    return in_.data() + pos_ - n;
  }
  template <typename T>
  void scalar(T& v) {
    if (const char* p = take(sizeof v)) std::memcpy(&v, p, sizeof v);
  }
  // A one-byte enum whose value must not pass `last`.
  template <typename E>
  void enumerator(E& v, E last) {
    uint8_t b = 0;
    scalar(b);
    if (b > static_cast<uint8_t>(last)) ok_ = false;
    else v = static_cast<E>(b);
  }
  // Every item of a list takes at least four bytes, so a count the bytes left cannot hold
  // is damage, found before anything is built for it.
  uint32_t count() {
    uint32_t n = 0;
    scalar(n);
    if (n > (in_.size() - pos_) / 4) ok_ = false;
    return ok_ ? n : 0;
  }
  void get(uint32_t& v) { scalar(v); }
  void get(uint64_t& v) { scalar(v); }
  void get(int& v) { scalar(v); }
  void get(double& v) { scalar(v); }
  void get(bool& v) {
    uint8_t b = 0;
    scalar(b);
    if (b > 1) ok_ = false;
    v = b == 1;
  }
  void get(Role& v) { enumerator(v, Role::kCompletion); }
  void get(Precedence& v) { enumerator(v, Precedence::kNone); }
  void get(ErrorCode& v) { enumerator(v, ErrorCode::kInternal); }
  void get(std::string_view& s) {
    uint32_t n = 0;
    scalar(n);
    if (const char* p = take(n)) s = {p, n};
  }
  void get(std::string& s) {
    std::string_view v;
    get(v);
    s = v;
  }
  template <typename T>
  void get(std::vector<T>& v) {
    uint32_t n = count();
    // Room for all n at once saves moving the items as the vector grows, but never more
    // than the bytes left: a damaged count must not reserve gigabytes.
    v.reserve(std::min<size_t>(n, (in_.size() - pos_) / sizeof(T)));
    for (uint32_t i = 0; i < n && ok_; ++i) get(v.emplace_back());
  }
  void get(std::map<std::string, std::string>& m) {
    for (uint32_t i = 0, n = count(); i < n && ok_; ++i) {
      std::string k, v;
      get(k), get(v);
      m.emplace_hint(m.end(), std::move(k), std::move(v));
    }
  }
  template <typename T>
  void get(T& x) { fields(*this, x); }

  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// The whole of a regular file, or false when it cannot be opened or read.
bool read_file(const std::string& path, std::string& out) {
  // O_NONBLOCK: a FIFO named like a KB file must not hang the run (it is not regular).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok) out.resize(static_cast<size_t>(st.st_size));
  for (size_t got = 0; ok && got < out.size();) {
    ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;  // an error, or a file that shrank under us
    else got += static_cast<size_t>(n);
  }
  ::close(fd);
  return ok;
}

// The bytes a KB cache file begins with (its magic, as the writer puts a string), for
// pruning only files of this cache.
std::string cache_magic_bytes() {
  CacheWriter w;
  w(std::string(kCacheMagic));
  return w.bytes();
}

// The cached model and its files' errors, or false when the file is missing, damaged,
// short, or of another version or key. The file is mapped rather than read into memory,
// which meant zeroing and copying its megabyte first (0.8 ms, more than the decoding of
// what a diagnosis needs). Mapping is safe because a cache file is never rewritten in
// place: write_cache renames a new one over it. Layout: magic, version, key, the
// checksums of the two sections (cache_checksum), the diagnosis section (the model and
// its errors), the page section (length-prefixed). The lengths catch a cut file; the
// checksums catch a flipped bit (a changed text the lengths cannot see), each checked only
// for the section that is read.
bool read_cache(const std::string& path, uint64_t hash, bool with_pages, KnowledgeBase& kb,
                std::vector<Error>& errors) {
  size_t size = 0;
  const int fd = open_cache_file(path, &size);
  if (fd < 0) return false;
  void* map = size > 0 ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (map == MAP_FAILED) return false;
  const std::string_view bytes(static_cast<const char*>(map), size);
  CacheReader in(bytes);
  std::string magic, version;
  uint64_t key = 0, main_sum = 0, pages_sum = 0;
  std::string_view pages;
  in(magic, version, key, main_sum, pages_sum);
  bool ok = magic == kCacheMagic && version == kCacheVersion && key == hash;
  const size_t main_begin = in.pos();
  if (ok) in(kb, errors);
  const size_t main_end = in.pos();
  if (ok) in(pages);
  ok = ok && in.complete() && cache_checksum(bytes.substr(main_begin, main_end - main_begin)) == main_sum;
  if (ok && with_pages) {
    ok = cache_checksum(pages) == pages_sum;
    CacheReader page_in(pages);
    for (Entry& e : kb.entries) {
      if (ok) page_fields(page_in, e);
    }
    ok = ok && page_in.complete();
  }
  ::munmap(map, size);
  if (!ok) {
    kb = KnowledgeBase{};  // whatever was decoded before the damage showed is dropped
    errors.clear();
  }
  return ok;
}

void write_cache(const std::string& dir, const std::string& path, uint64_t hash, const KnowledgeBase& kb,
                 const std::vector<Error>& errors) {
  CacheWriter pages;
  for (const Entry& e : kb.entries) page_fields(pages, e);
  CacheWriter main;
  main(kb, errors);
  CacheWriter head;
  head(std::string(kCacheMagic), std::string(kCacheVersion), hash, cache_checksum(main.bytes()),
       cache_checksum(pages.bytes()));
  CacheWriter tail;
  tail(pages.bytes());
  // Atomic, to a fresh temporary name: a reader never sees half a file, and no planted
  // link is written through.
  write_cache_file(dir, path, {head.bytes(), main.bytes(), tail.bytes()});
  prune_cache(dir, "kb-", cache_magic_bytes(), 8);
}

uint64_t hash_file(const File& f, uint64_t hash) { return fnv1a64(f.content, fnv1a64(f.path, hash)); }

// `files` null: the embedded files.
LoadResult load_files(const std::vector<File>* files, const std::vector<std::string>& override_dirs,
                      const LoadOptions& options) {
  namespace fs = std::filesystem;
  LoadResult r;
  // 1. The files of each override directory in order; they come after the given ones.
  std::vector<File> overrides;
  for (const std::string& dir : override_dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      r.errors.push_back(make_error(ErrorCode::kNotFound, "knowledge-base directory not found", {dir, 0, ""}));
      continue;
    }
    std::vector<std::string> paths;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && (it->path().extension() == ".yaml" || it->path().extension() == ".yml"))
        paths.push_back(it->path().string());
    }
    std::sort(paths.begin(), paths.end());
    for (const std::string& p : paths) {
      File f{p, "", false};
      if (!read_file(p, f.content)) {
        r.errors.push_back(make_error(ErrorCode::kIo, "cannot read knowledge-base file", {p, 0, ""}));
        continue;
      }
      overrides.push_back(std::move(f));
    }
  }
  // 2. The hash of everything decides whether the cached model can be used. The embedded
  // files' part was computed at build time, so that a start neither hashes nor copies out
  // their megabyte.
  uint64_t hash = fnv1a64(kCacheVersion);
  if (!files) {
    uint64_t embedded = embedded_files_hash();
    hash = fnv1a64(std::string_view(reinterpret_cast<const char*>(&embedded), sizeof embedded), hash);
  } else {
    for (const File& f : *files) hash = hash_file(f, hash);
  }
  for (const File& f : overrides) hash = hash_file(f, hash);
  std::string cache_file;
  if (!options.cache_dir.empty()) {
    char name[64];
    std::snprintf(name, sizeof(name), "kb-%016llx.bin", static_cast<unsigned long long>(hash));
    cache_file = (fs::path(options.cache_dir) / name).string();
  }
  KnowledgeBase cached;
  std::vector<Error> cached_errors;
  if (!cache_file.empty() && read_cache(cache_file, hash, options.page_fields, cached, cached_errors)) {
    r.kb = std::move(cached);
    r.errors.insert(r.errors.end(), cached_errors.begin(), cached_errors.end());
  } else {
    // 3. Parse.
    std::map<std::string, std::string> id_files, override_files;
    size_t first_parse_error = r.errors.size();
    for (const File& f : files ? *files : embedded_files()) load_file(f, r.kb, r.errors, id_files, false, override_files);
    for (const File& f : overrides) load_file(f, r.kb, r.errors, id_files, true, override_files);
    if (!cache_file.empty())
      write_cache(options.cache_dir, cache_file, hash, r.kb,
                  std::vector<Error>(r.errors.begin() + static_cast<long>(first_parse_error), r.errors.end()));
    // Left out here too, so that the model is the same whether the cache had it or not.
    if (!options.page_fields) {
      ClearFields clear;
      for (Entry& e : r.kb.entries) page_fields(clear, e);
    }
  }
  r.kb.hash = hash;
  Loader::index(r.kb);
  return r;
}

}  // namespace

LoadResult load(const std::vector<File>& files, const std::vector<std::string>& override_dirs,
                const LoadOptions& options) {
  return load_files(&files, override_dirs, options);
}

LoadResult load_embedded(const std::vector<std::string>& override_dirs, const LoadOptions& options) {
  return load_files(nullptr, override_dirs, options);
}

}  // namespace ff::kb
