// kb/kb.entry.cc — one entry file's YAML into an Entry, every problem with its file, line
// and field (kb/README.md describes the fields).
#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

#include "base/strings.h"
#include "kb/kb.h"
#include "kb/kb_internal.h"

namespace ff::kb {

namespace {

// The encyclopedia fields (mechanism, affected, confirm) are required of every entry.
constexpr bool kDepthRequired = true;

std::string escape_literal(std::string_view lit) { return RE2::QuoteMeta(std::string(lit)); }

// A pattern's `source:` (one mapping or a list of them) and `source_note:`. A source names
// a repository (owner/name) with the tag or commit that was read and the path there, or a
// documentation `url`; `line` is a positive number.
void parse_sources(FileChecker& c, const YAML::Node& p, const std::string& field, Pattern& pat) {
  pat.source_note = c.str(p, "source_note", false);
  YAML::Node src = p["source"];
  if (!src || src.IsNull()) return;
  std::vector<YAML::Node> items;
  if (src.IsMap())
    items.push_back(src);
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
      } catch (const YAML::Exception&) { s.line = -1; }
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

// `verify:` a plain command, or {command, where, expect}.
void parse_verify(FileChecker& c, const YAML::Node& doc, Entry& e) {
  if (YAML::Node v = doc["verify"]; v && v.IsMap()) {
    e.verify = c.str(v, "command", true);
    e.verify_where = c.str(v, "where", true);
    e.verify_expect = c.str(v, "expect", true);
    if (!e.verify_where.empty() && !contains({"shell", "rerun", "in-process"}, e.verify_where))
      c.fail(v["where"], "verify.where", "must be shell, rerun or in-process");
    for (const auto& kv : v) {
      std::string k = kv.first.as<std::string>();
      if (!contains({"command", "where", "expect"}, k))
        c.fail(kv.second, "verify." + k, "unknown field (where, command, expect)");
    }
  } else {
    e.verify = c.str(doc, "verify", true);
  }
}

// One item of a list of links (references, faq.docs): a URL, or {url, note}.
void parse_reference(FileChecker& c, const YAML::Node& n, const std::string& field, std::vector<Reference>& out) {
  if (n.IsScalar())
    out.push_back({n.as<std::string>(), ""});
  else if (n.IsMap())
    c.known_keys(n, field, {"url", "note"}), out.push_back({c.str(n, "url", true), c.str(n, "note", false)});
  else
    c.fail(n, field, "must be a URL or {url, note}");
}

// `faq:` the questions every encyclopedia page answers (kb/README.md, "The page").
void parse_faq(FileChecker& c, const YAML::Node& doc, Faq& faq) {
  if (YAML::Node f = doc["faq"]; f) {
    if (!f.IsMap()) {
      c.fail(f, "faq",
             "must be a mapping (hardware_or_software, fix_time, inference, cheapest_confirm, scale, monitor, docs)");
    } else {
      faq.hardware_or_software = c.str(f, "hardware_or_software", false);
      faq.fix_time = c.str(f, "fix_time", false);
      faq.inference = c.str(f, "inference", false);
      faq.cheapest_confirm = c.str(f, "cheapest_confirm", false);
      faq.scale = c.str(f, "scale", false);
      faq.monitor = c.str(f, "monitor", false);
      if (YAML::Node d = f["docs"]; d && d.IsSequence()) {
        for (size_t i = 0; i < d.size(); ++i) {
          parse_reference(c, d[i], "faq.docs[" + std::to_string(i) + "]", faq.docs);
        }
      } else if (d) {
        c.fail(d, "faq.docs", "must be a list of {url, note}");
      }
      for (const auto& kv : f) {
        std::string k = kv.first.as<std::string>();
        if (!contains({"hardware_or_software", "fix_time", "inference", "cheapest_confirm", "scale", "monitor", "docs"},
                      k))
          c.fail(kv.second, "faq." + k, "unknown question");
      }
    }
  }
}

// One mapping of `patterns:` (at `field`); false when it cannot be a pattern at all (the
// problem is said). `seen`: the pattern ids of the entry so far.
bool parse_pattern(FileChecker& c, const YAML::Node& p, const std::string& field, bool trusted,
                   std::set<std::string>& seen, Pattern& pat) {
  pat.line = p.Mark().line + 1;
  pat.id = c.str(p, "id", true);
  if (!pat.id.empty() && !seen.insert(pat.id).second)
    c.fail(p["id"], field + ".id", "duplicate pattern id '" + pat.id + "'");
  std::string role = c.str(p, "role", true);
  if (role == "root")
    pat.role = Role::kRoot;
  else if (role == "collateral")
    pat.role = Role::kCollateral;
  else if (role == "symptom")
    pat.role = Role::kSymptom;
  else if (role == "context")
    pat.role = Role::kContext;
  else if (role == "completion")
    pat.role = Role::kCompletion;
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
    if (it == std::end(kPrec))
      c.fail(p["precedence"], field + ".precedence", "must be hardware, root, weak, collateral or none");
    else if (pat.role != Role::kRoot && pat.role != Role::kCollateral && it->second != Precedence::kNone)
      c.fail(p["precedence"], field + ".precedence", "only a root or collateral pattern can be a failure");
    else
      pat.precedence = it->second;
  }
  bool has_rx = p["regex"].IsDefined(), has_lit = p["literal"].IsDefined();
  if (has_rx == has_lit) {
    c.fail(p, field, "needs exactly one of 'regex' or 'literal'");
    return false;
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
    } catch (const YAML::Exception&) { c.fail(p["priority"], field + ".priority", "must be an integer"); }
  }
  parse_sources(c, p, field, pat);
  if (!pat.regex.empty() && !trusted) {
    std::string why = check_regex(pat.regex);
    if (!why.empty()) c.fail(p[has_rx ? "regex" : "literal"], field + (has_rx ? ".regex" : ".literal"), why);
  }
  return true;
}

// `examples:` log snippets, each a string or {text, captures}; at least one.
void parse_examples(FileChecker& c, const YAML::Node& doc, Entry& e) {
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
        c.known_keys(exs[i], "examples[" + std::to_string(i) + "]", {"text", "captures"});
        ex.text = c.str(exs[i], "text", true);
        if (exs[i]["captures"] && exs[i]["captures"].IsMap()) {
          for (const auto& kv : exs[i]["captures"])
            ex.captures[kv.first.as<std::string>()] = kv.second.as<std::string>();
        }
      } else {
        c.fail(exs[i], "examples[" + std::to_string(i) + "]", "must be a string or {text, captures}");
        continue;
      }
      e.examples.push_back(std::move(ex));
    }
  }
}

// `patterns:` at least one, each a regex or a literal with its role; a completion pattern
// only in an entry of category healthy, and only completion patterns there.
void parse_patterns(FileChecker& c, const YAML::Node& doc, bool trusted, Entry& e) {
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
      c.known_keys(p, field, {"id", "role", "regex", "literal", "source", "source_note", "precedence", "priority"});
      Pattern pat;
      if (!parse_pattern(c, p, field, trusted, seen, pat)) continue;
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
}

// `references:` at least one, each a URL or {url, note}.
void parse_references(FileChecker& c, const YAML::Node& doc, Entry& e) {
  YAML::Node refs = doc["references"];
  if (!refs || !refs.IsSequence() || refs.size() == 0) {
    c.fail(refs ? refs : doc, "references", "needs at least one reference {url, note}");
  } else {
    for (size_t i = 0; i < refs.size(); ++i) {
      parse_reference(c, refs[i], "references[" + std::to_string(i) + "]", e.references);
    }
  }
}

}  // namespace

// Over 80 lines because it is the entry's field table: a line or two per field of
// kb/README.md, in the order the file's problems are reported; the larger fields have
// their own functions above.
Entry parse_entry(const YAML::Node& doc, const std::string& path, std::vector<Error>& errors, bool& ok, bool trusted) {
  FileChecker c{path, errors};
  Entry e;
  e.file = path;
  if (!doc.IsMap()) {
    c.fail(doc, "", "an entry must be a YAML mapping");
    ok = false;
    return e;
  }
  c.known_keys(doc, "",
               {"id",
                "title",
                "category",
                "severity",
                "wrapper",
                "after_completion",
                "phase",
                "frameworks",
                "tags",
                "summary",
                "mechanism",
                "affected",
                "confirm",
                "transience",
                "lookalikes",
                "patterns",
                "symptoms",
                "root_cause",
                "fix",
                "verify",
                "prevention",
                "transience_rule",
                "faq",
                "code_examples",
                "code_examples_note",
                "related",
                "references",
                "examples",
                "negatives"});
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
  // wrapper: true — the entry's message only wraps another failure (DistBackendError's
  // "unhandled system error", a launcher's exit code, a watchdog echoing an error): the
  // specific cause printed with it names the incident (analyze, step 1).
  if (const YAML::Node w = doc["wrapper"]; w) {
    if (!w.IsScalar() || (w.Scalar() != "true" && w.Scalar() != "false"))
      c.fail(w, "wrapper", "must be true or false");
    else
      e.wrapper = w.Scalar() == "true";
  }
  // after_completion: <id> — this entry's line, after the run reported its completion, is
  // that entry's failure (a teardown after "training complete": a hang at exit).
  e.after_completion = c.str(doc, "after_completion", false);
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
      c.known_keys(la[i], "lookalikes[" + std::to_string(i) + "]", {"id", "how_to_tell"});
      e.lookalikes.push_back({c.str(la[i], "id", true), c.str(la[i], "how_to_tell", true)});
    }
  }
  e.root_cause = c.str(doc, "root_cause", true);
  e.fix = c.list(doc, "fix", true);
  parse_verify(c, doc, e);
  if (YAML::Node t = doc["transience_rule"]; t) {
    if (!t.IsMap()) {
      c.fail(t, "transience_rule", "must be a mapping {recovers, stop}");
    } else {
      c.known_keys(t, "transience_rule", {"recovers", "stop"});
      e.transience_recovers = c.str(t, "recovers", true);
      e.transience_stop = c.str(t, "stop", true);
    }
  }
  parse_faq(c, doc, e.faq);
  e.prevention = c.list(doc, "prevention", false);
  e.related = c.list(doc, "related", false);
  e.negatives = c.list(doc, "negatives", false);

  parse_patterns(c, doc, trusted, e);

  YAML::Node syms = doc["symptoms"];
  if (syms && syms.IsSequence()) {
    for (size_t i = 0; i < syms.size(); ++i) {
      if (!syms[i].IsMap()) {
        c.fail(syms[i], "symptoms[" + std::to_string(i) + "]", "must be a mapping {symptom, why}");
        continue;
      }
      c.known_keys(syms[i], "symptoms[" + std::to_string(i) + "]", {"symptom", "why"});
      e.symptoms.push_back({c.str(syms[i], "symptom", true), c.str(syms[i], "why", false)});
    }
  }
  parse_references(c, doc, e);
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
  parse_examples(c, doc, e);
  ok = !c.failed;
  return e;
}

}  // namespace ff::kb
