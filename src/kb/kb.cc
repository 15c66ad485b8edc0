#include "kb/kb.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "base/strings.h"

namespace ff::kb {

const char* role_name(Role role) {
  switch (role) {
    case Role::kRoot: return "root";
    case Role::kCollateral: return "collateral";
    case Role::kSymptom: return "symptom";
    case Role::kContext: return "context";
  }
  return "root";
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
  if (!e.category.empty() && !contains(categories(), e.category))
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
  e.verify = c.str(doc, "verify", true);
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
      else if (!role.empty()) c.fail(p["role"], field + ".role", "must be root, collateral, symptom or context");
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
      if (!pat.regex.empty() && !trusted) {
        std::string why = check_regex(pat.regex);
        if (!why.empty()) c.fail(p[has_rx ? "regex" : "literal"], field + (has_rx ? ".regex" : ".literal"), why);
      }
      e.patterns.push_back(std::move(pat));
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
      if (m.keys.empty() && m.units.empty()) c.fail(ms[i], field, "needs keys or units");
      auto same = std::find_if(kb.metric_specs.begin(), kb.metric_specs.end(), [&](const MetricSpec& x) { return x.name == m.name; });
      if (same != kb.metric_specs.end()) *same = std::move(m);
      else kb.metric_specs.push_back(std::move(m));
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

void load_file(const File& f, KnowledgeBase& kb, std::vector<Error>& errors,
               std::map<std::string, std::string>& id_files, bool is_override) {
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
// as MessagePack keyed by the hash of every file's path and content.
using nlohmann::json;

json errors_to_json(const std::vector<Error>& errors) {
  json a = json::array();
  for (const auto& e : errors)
    a.push_back({static_cast<int>(e.code), e.message, e.where.file, e.where.line, e.where.field});
  return a;
}

std::vector<Error> errors_from_json(const json& a) {
  std::vector<Error> out;
  for (const auto& e : a)
    out.push_back(make_error(static_cast<ErrorCode>(e[0].get<int>()), e[1].get<std::string>(),
                             {e[2].get<std::string>(), e[3].get<int>(), e[4].get<std::string>()}));
  return out;
}

json kb_to_json(const KnowledgeBase& kb) {
  json j;
  json entries = json::array();
  for (const auto& e : kb.entries) {
    json pats = json::array();
    for (const auto& p : e.patterns)
      pats.push_back({p.id, static_cast<int>(p.role), p.regex, p.literal, p.priority, p.line});
    json syms = json::array();
    for (const auto& s : e.symptoms) syms.push_back({s.symptom, s.why});
    json refs = json::array();
    for (const auto& r : e.references) refs.push_back({r.url, r.note});
    json exs = json::array();
    for (const auto& x : e.examples) exs.push_back({x.text, x.captures, x.line});
    json looks = json::array();
    for (const auto& l : e.lookalikes) looks.push_back({l.id, l.how_to_tell});
    entries.push_back({e.id, e.title, e.category, e.severity, e.phase, e.frameworks, e.tags, e.summary, pats, syms,
                       e.root_cause, e.fix, e.verify, e.prevention, e.related, refs, e.code_examples, exs, e.negatives,
                       e.file, e.mechanism, e.affected, e.confirm, e.transience, looks});
  }
  j["entries"] = std::move(entries);
  for (const auto* list : {&kb.prefixes, &kb.source_names}) {
    json pre = json::array();
    for (const auto& p : *list) pre.push_back({p.id, p.regex, p.consume, p.time_format, p.samples, p.line});
    j[list == &kb.prefixes ? "prefixes" : "sources"] = std::move(pre);
  }
  json ex = json::array();
  for (const auto& r : kb.exceptions) ex.push_back({r.type, r.category});
  j["exceptions"] = std::move(ex);
  json fr = json::array();
  for (const auto& r : kb.frames) fr.push_back({r.path, r.category});
  j["frames"] = std::move(fr);
  j["default"] = kb.exception_default_category;
  json ms = json::array();
  for (const auto& m : kb.metric_specs) {
    json units = json::array();
    for (const auto& u : m.units) units.push_back({u.unit, u.scale});
    ms.push_back({m.name, m.keys, units});
  }
  j["metrics"] = std::move(ms);
  return j;
}

void kb_from_json(const json& j, KnowledgeBase& kb) {
  for (const auto& x : j["entries"]) {
    Entry e;
    e.id = x[0]; e.title = x[1]; e.category = x[2]; e.severity = x[3]; e.phase = x[4];
    e.frameworks = x[5].get<std::vector<std::string>>();
    e.tags = x[6].get<std::vector<std::string>>();
    e.summary = x[7];
    for (const auto& p : x[8])
      e.patterns.push_back({p[0], static_cast<Role>(p[1].get<int>()), p[2], p[3], p[4], p[5]});
    for (const auto& s : x[9]) e.symptoms.push_back({s[0], s[1]});
    e.root_cause = x[10];
    e.fix = x[11].get<std::vector<std::string>>();
    e.verify = x[12];
    e.prevention = x[13].get<std::vector<std::string>>();
    e.related = x[14].get<std::vector<std::string>>();
    for (const auto& r : x[15]) e.references.push_back({r[0], r[1]});
    e.code_examples = x[16].get<std::map<std::string, std::string>>();
    for (const auto& ex : x[17]) e.examples.push_back({ex[0], ex[1].get<std::map<std::string, std::string>>(), ex[2]});
    e.negatives = x[18].get<std::vector<std::string>>();
    e.file = x[19];
    e.mechanism = x[20];
    e.affected = x[21].get<std::vector<std::string>>();
    e.confirm = x[22].get<std::vector<std::string>>();
    e.transience = x[23];
    for (const auto& l : x[24]) e.lookalikes.push_back({l[0], l[1]});
    kb.entries.push_back(std::move(e));
  }
  for (const auto& p : j["prefixes"])
    kb.prefixes.push_back({p[0], p[1], p[2], p[3], p[4].get<std::vector<std::string>>(), p[5]});
  for (const auto& p : j["sources"])
    kb.source_names.push_back({p[0], p[1], p[2], p[3], p[4].get<std::vector<std::string>>(), p[5]});
  for (const auto& r : j["exceptions"]) kb.exceptions.push_back({r[0], r[1]});
  for (const auto& r : j["frames"]) kb.frames.push_back({r[0], r[1]});
  kb.exception_default_category = j["default"];
  for (const auto& m : j["metrics"]) {
    MetricSpec spec{m[0], m[1].get<std::vector<std::string>>(), {}};
    for (const auto& u : m[2]) spec.units.push_back({u[0], u[1]});
    kb.metric_specs.push_back(std::move(spec));
  }
}

constexpr const char* kCacheVersion = "kbcache-4";

std::string read_all(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

LoadResult load(const std::vector<File>& files, const std::vector<std::string>& override_dirs,
                const LoadOptions& options) {
  namespace fs = std::filesystem;
  LoadResult r;
  // 1. Every file, embedded first, then each override directory in order.
  std::vector<std::pair<File, bool>> all;  // (file, is_override)
  for (const File& f : files) all.emplace_back(f, false);
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
      bool ok = false;
      std::string content = read_all(p, ok);
      if (!ok) {
        r.errors.push_back(make_error(ErrorCode::kIo, "cannot read knowledge-base file", {p, 0, ""}));
        continue;
      }
      all.emplace_back(File{p, std::move(content), false}, true);
    }
  }
  // 2. The hash of everything decides whether the cached model can be used.
  uint64_t hash = fnv1a64(kCacheVersion);
  for (const auto& [f, over] : all) {
    hash = fnv1a64(f.path, hash);
    hash = fnv1a64(f.content, hash);
  }
  std::string cache_file;
  if (!options.cache_dir.empty()) {
    char name[64];
    std::snprintf(name, sizeof(name), "kb-%016llx.msgpack", static_cast<unsigned long long>(hash));
    cache_file = (fs::path(options.cache_dir) / name).string();
    bool ok = false;
    std::string bytes = read_all(cache_file, ok);
    if (ok && !bytes.empty()) {
      json j = json::from_msgpack(bytes, true, false);
      if (!j.is_discarded()) {
        try {
          kb_from_json(j["kb"], r.kb);
          auto cached_errors = errors_from_json(j["errors"]);
          r.errors.insert(r.errors.end(), cached_errors.begin(), cached_errors.end());
          r.kb.hash = hash;
          Loader::index(r.kb);
          return r;
        } catch (const json::exception&) {
          r.kb = KnowledgeBase{};  // a stale or damaged cache: parse the YAML instead
        }
      }
    }
  }
  // 3. Parse.
  std::map<std::string, std::string> id_files;
  size_t first_parse_error = r.errors.size();
  for (const auto& [f, over] : all) load_file(f, r.kb, r.errors, id_files, over);
  r.kb.hash = hash;
  Loader::index(r.kb);
  if (!cache_file.empty()) {
    json j;
    j["kb"] = kb_to_json(r.kb);
    j["errors"] = errors_to_json(std::vector<Error>(r.errors.begin() + static_cast<long>(first_parse_error), r.errors.end()));
    std::vector<uint8_t> bytes = json::to_msgpack(j);
    std::error_code ec;
    fs::create_directories(options.cache_dir, ec);
    std::string tmp = cache_file + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    fs::rename(tmp, cache_file, ec);  // atomic: a reader never sees half a file
    if (ec) fs::remove(tmp, ec);
    prune_cache(options.cache_dir, "kb-", 8);
  }
  return r;
}

}  // namespace ff::kb
