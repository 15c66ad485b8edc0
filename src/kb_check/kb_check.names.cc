// `kb check`'s rule names.exist (kb/README.md, "Names that exist"): every command-line flag,
// environment variable and DeepSpeed config key that an entry names in its fix, verify, FAQ
// or code examples is in the table of real names, kb/names/*.tsv, that tools/kb-names
// extracts from the frameworks' own argument parsers, config classes and variable
// definitions (hand.tsv: the names no tree read holds, each with its documentation page).
// Which program a flag belongs to (programs.tsv), which variable prefixes are checked
// (prefixes.tsv) and the names no framework defines (allow.tsv) are data too.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "kb_check/kb_check.h"
#include "base/strings.h"
#include "base/wrap.h"

namespace ff::app {
namespace {

struct Program {
  std::vector<std::string> frameworks;  // empty: its flags are not checked (another program's)
};

struct NameData {
  // kind ("flag", "env", "config", "arg") -> framework -> names
  std::map<std::string, std::map<std::string, std::set<std::string>>> names;
  std::map<std::string, std::set<std::string>> allowed;  // kind -> names allowed without a framework
  std::map<std::string, Program> programs;               // program word -> whose flags it takes
  std::map<std::string, bool> prefixes;                  // variable prefix -> checked
  // dotted path root -> (framework, kind): `zero_optimization.stage`, `--trainer.devices`
  std::map<std::string, std::pair<std::string, std::string>> config_roots;
  std::vector<std::string> errors;
  bool any = false;  // a names table was found

  const std::set<std::string>& all(const std::string& kind) {
    auto& cache = union_[kind];
    if (cache.empty())
      for (const auto& [fw, set] : names[kind]) cache.insert(set.begin(), set.end());
    return cache;
  }

 private:
  std::map<std::string, std::set<std::string>> union_;
};

// The rows of a TSV file: '#' lines and the header (its first field "name" or "program" or
// "prefix") are skipped.
std::vector<std::vector<std::string_view>> tsv_rows(std::string_view content) {
  std::vector<std::vector<std::string_view>> rows;
  for (std::string_view line : split(content, '\n')) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#') continue;
    auto cols = split(line, '\t');
    if (cols[0] == "name" || cols[0] == "program" || cols[0] == "prefix" || cols[0] == "root") continue;
    rows.push_back(cols);
  }
  return rows;
}

NameData load_names() {
  NameData d;
  for (const auto& f : kb::embedded_files()) {
    if (!starts_with(f.path, "names/") || !ends_with(f.path, ".tsv")) continue;
    std::string_view base = std::string_view(f.path).substr(6);
    for (const auto& c : tsv_rows(f.content)) {
      auto bad = [&](const char* what) { d.errors.push_back(fmt::format("{}: '{}': {}", f.path, c[0], what)); };
      if (base == "programs.tsv") {
        if (c.size() < 3) { bad("a row is: program, frameworks (comma-separated, or - for none), reason"); continue; }
        Program p;
        if (c[1] != "-")
          for (auto fw : split(c[1], ',')) p.frameworks.emplace_back(trim(fw));
        d.programs[std::string(c[0])] = p;
      } else if (base == "prefixes.tsv") {
        if (c.size() < 3 || (c[1] != "yes" && c[1] != "no")) { bad("a row is: prefix, yes|no, reason"); continue; }
        d.prefixes[std::string(c[0])] = c[1] == "yes";
      } else if (base == "config-roots.tsv") {
        if (c.size() < 4) { bad("a row is: root, framework, kind, reason"); continue; }
        d.config_roots[std::string(c[0])] = {std::string(c[1]), std::string(c[2])};
      } else if (base == "allow.tsv") {
        if (c.size() < 3 || trim(c[2]).empty()) { bad("a row is: name, kind, reason (the reason is required)"); continue; }
        d.allowed[std::string(c[1])].insert(std::string(c[0]));
      } else {
        if (c.size() < 9) { bad("a row is: name, kind, framework, repository, ref, file, line, versions, evidence"); continue; }
        d.names[std::string(c[1])][std::string(c[2])].insert(std::string(c[0]));
        d.any = true;
      }
    }
  }
  return d;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// One name an entry uses, with the text it was read from.
struct Use {
  std::string name;
  std::string kind;                     // flag, env, config
  std::vector<std::string> frameworks;  // a flag's program's tables; empty: any table
  bool glob = false;                    // written as a prefix: `--exit-*`, `NCCL_IB_*`
};

// The program a flag at `pos` belongs to: the nearest word before it in the same command
// (a line, with backslash continuations; cut at a backtick, `|`, `;` or `&`) that is a
// program of programs.tsv, a script (`*.py`, whose flags are its own) or another program a
// verify may start with (lint.yaml `commands:`, whose flags are not checked). nullopt: none.
// In a prose field, outside a `code span`, the clause before the flag (cut at `.`, `(` too)
// is searched for other programs only: "srun --label" is srun's, while a framework's name in
// a sentence ("with accelerate, pass --bf16") is not the flag's command.
std::optional<Program> program_before(std::string_view text, size_t pos, bool prose, const NameData& d,
                                      const std::vector<std::string>& other_programs) {
  const bool sentence = prose && std::count(text.begin(), text.begin() + static_cast<long>(pos), '`') % 2 == 0;
  size_t start = pos;
  while (start > 0) {
    char c = text[start - 1];
    if (c == '`' || c == '|' || c == ';' || c == '&') break;
    if (sentence && (c == '(' || c == ')' || c == ':' || (c == '.' && start < text.size() && text[start] == ' ')))
      break;
    if (c == '\n') {
      size_t k = start - 1;
      while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
      if (k == 0 || text[k - 1] != '\\') break;
    }
    --start;
  }
  std::string_view before = text.substr(start, pos - start);
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < before.size()) {
    while (i < before.size() && std::isspace(static_cast<unsigned char>(before[i]))) ++i;
    size_t j = i;
    while (j < before.size() && !std::isspace(static_cast<unsigned char>(before[j]))) ++j;
    if (j > i) words.push_back(before.substr(i, j - i));
    i = j;
  }
  for (auto it = words.rbegin(); it != words.rend(); ++it) {
    std::string_view w = *it;
    while (!w.empty() && std::string_view("\"'([{,").find(w.front()) != std::string_view::npos) w.remove_prefix(1);
    while (!w.empty() && std::string_view("\"')]},:").find(w.back()) != std::string_view::npos) w.remove_suffix(1);
    if (starts_with(w, "--")) continue;
    std::string_view base = w;
    if (size_t slash = base.rfind('/'); slash != std::string_view::npos) base.remove_prefix(slash + 1);
    // `pip install deepspeed --no-cache-dir`: a package's name, not its program
    if (auto prev = std::next(it); prev != words.rend() && *prev == "install") continue;
    if (auto p = d.programs.find(std::string(base)); p != d.programs.end()) {
      if (sentence && !p->second.frameworks.empty()) continue;
      return p->second;
    }
    if (ends_with(base, ".py")) return Program{};
    if (std::find(other_programs.begin(), other_programs.end(), base) != other_programs.end()) return Program{};
  }
  return std::nullopt;
}

// An upper-case word at text[i]: a variable (NCCL_DEBUG) when a checked prefix of the names
// tables starts it, added to `out`. Returns the position the caller's scan goes on from
// (after its ++i).
size_t variable_at(std::string_view text, size_t i, const NameData& d, std::vector<Use>& out) {
  size_t j = i;
  while (j < text.size() && (std::isupper(static_cast<unsigned char>(text[j])) ||
                             std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '_'))
    ++j;
  if (j < text.size() && std::islower(static_cast<unsigned char>(text[j]))) return j;
  std::string name(text.substr(i, j - i));
  const std::pair<const std::string, bool>* best = nullptr;
  for (const auto& p : d.prefixes)
    if (starts_with(name, p.first) && (!best || p.first.size() > best->first.size())) best = &p;
  if (best && best->second && name.size() > best->first.size()) {
    bool glob = j < text.size() && (text[j] == '*' || text[j] == '<' || text[j] == '{');
    while (!name.empty() && name.back() == '_') {
      glob = true;
      name.pop_back();
    }
    out.push_back({name, "env", {}, glob});
  }
  return j - 1;
}

// A quoted word at text[i] followed by a colon: a key of a DeepSpeed config, added to
// `out`. Returns the position of its closing quote, or i for a lone quote (the rest is
// still read).
size_t config_key_at(std::string_view text, size_t i, std::vector<Use>& out) {
  size_t j = text.find('"', i + 1);
  if (j == std::string_view::npos) return i;
  size_t k = j + 1;
  while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
  std::string_view key = text.substr(i + 1, j - i - 1);
  if (k < text.size() && text[k] == ':' && !key.empty() &&
      std::all_of(key.begin(), key.end(), [](char c) { return std::islower((unsigned char)c) || std::isdigit((unsigned char)c) || c == '_'; }))
    out.push_back({std::string(key), "config", {"deepspeed"}, false});
  return j;
}

// The flags, variables and (in a DeepSpeed config) keys that a text names.
// `kind`: the code example's kind ("megatron"), empty for a text field: programs.tsv's row
// `code_examples.<kind>` names the program of the flags with no program word before them.
std::vector<Use> uses_in(std::string_view text, const std::string& field, const NameData& d,
                         const std::vector<std::string>& other_programs) {
  const bool deepspeed_config = field == "code_examples.deepspeed";
  const bool prose = !starts_with(field, "code_examples.") && field != "verify.command";
  std::optional<Program> field_program;
  if (auto it = d.programs.find(field); it != d.programs.end()) field_program = it->second;
  std::vector<Use> out;
  for (size_t i = 0; i < text.size(); ++i) {
    char prev = i ? text[i - 1] : ' ';
    // --flag
    if (i + 2 < text.size() && text[i] == '-' && text[i + 1] == '-' &&
        std::isalpha(static_cast<unsigned char>(text[i + 2])) &&
        !word_char(prev) && prev != '-' && prev != '.' && prev != '/') {
      size_t j = i + 2;
      while (j < text.size() && (word_char(text[j]) || text[j] == '-' || text[j] == '.')) ++j;
      std::string name(text.substr(i, j - i));
      bool glob = j < text.size() && (text[j] == '*' || text[j] == '{' || text[j] == '<' || text[j] == '[');
      while (!name.empty() && (name.back() == '.' || name.back() == '-')) {
        glob = glob || name.back() == '-';
        name.pop_back();
      }
      // --trainer.devices: a dotted flag of config-roots.tsv names its keys
      if (size_t dot = name.find('.'); dot != std::string::npos) {
        if (auto root = d.config_roots.find(name.substr(0, dot)); root != d.config_roots.end()) {
          auto parts = split(std::string_view(name).substr(dot + 1), '.');
          for (auto part : parts) out.push_back({std::string(part), root->second.second, {root->second.first}, false});
          i = j;
          continue;
        }
      }
      auto prog = program_before(text, i, prose, d, other_programs);
      if (!prog) prog = field_program;
      if (prog && prog->frameworks.empty()) {  // another program's flag, or a script's own
        i = j;
        continue;
      }
      out.push_back({name, "flag", prog ? prog->frameworks : std::vector<std::string>{}, glob});
      i = j;
      continue;
    }
    // root.key.key: a dotted config path of config-roots.tsv
    if (std::islower(static_cast<unsigned char>(text[i])) && !word_char(prev) && prev != '.') {
      size_t j = i;
      while (j < text.size() && (word_char(text[j]) || text[j] == '.')) ++j;
      std::string_view path = text.substr(i, j - i);
      while (!path.empty() && path.back() == '.') path.remove_suffix(1);
      auto parts = split(path, '.');
      auto root = d.config_roots.find(std::string(parts[0]));
      if (parts.size() > 1 && root != d.config_roots.end())
        for (auto part : parts) out.push_back({std::string(part), root->second.second, {root->second.first}, false});
      i = j - 1;
      continue;
    }
    // VARIABLE of a checked prefix
    if (std::isupper(static_cast<unsigned char>(text[i])) && !word_char(prev)) {
      i = variable_at(text, i, d, out);
      continue;
    }
    // "key": in a DeepSpeed config
    if (deepspeed_config && text[i] == '"') i = config_key_at(text, i, out);
  }
  return out;
}

// The 1-based line of the entry's file that first names `name`, else the line of the field's
// key (`fix:`), else 1; 0 when the file cannot be read.
int line_of(const std::string& file, const std::string& name, const std::string& field) {
  std::string content;
  bool found = false;
  for (const auto& f : kb::embedded_files())
    if (f.path == file) {
      content = f.content;
      found = true;
      break;
    }
  if (!found) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return 0;
    std::ostringstream ss;
    ss << in.rdbuf();
    content = ss.str();
  }
  auto line_at = [&](size_t at) {
    return 1 + static_cast<int>(std::count(content.begin(), content.begin() + static_cast<long>(at), '\n'));
  };
  size_t at = content.find(name);
  while (at != std::string::npos && at + name.size() < content.size() && word_char(content[at + name.size()]))
    at = content.find(name, at + 1);
  if (at != std::string::npos) return line_at(at);
  std::string key = "\n" + field.substr(0, field.find_first_of(".[")) + ":";
  if (size_t k = content.find(key); k != std::string::npos) return line_at(k + 1);
  return 1;
}

}  // namespace

void check_names(const kb::KnowledgeBase& kb, KbCheckReport& rep, bool strict_pages) {
  NameData d = load_names();
  rep.rules.push_back({"names.exist"});
  RuleCount& rule = rep.rules.back();
  for (const auto& e : d.errors) {
    ++rule.failed;
    rep.problems.push_back(e);
  }
  if (!d.any) return;  // a build without the tables checks nothing
  std::set<std::string> bundled;
  for (const auto& f : kb::embedded_files()) bundled.insert(f.path);
  for (const auto& e : kb.entries) {
    if (e.category == "healthy") continue;
    std::vector<std::pair<std::string, const std::string*>> texts;
    for (size_t i = 0; i < e.fix.size(); ++i) texts.push_back({fmt::format("fix[{}]", i), &e.fix[i]});
    for (size_t i = 0; i < e.confirm.size(); ++i) texts.push_back({fmt::format("confirm[{}]", i), &e.confirm[i]});
    for (size_t i = 0; i < e.prevention.size(); ++i)
      texts.push_back({fmt::format("prevention[{}]", i), &e.prevention[i]});
    texts.push_back({"verify.command", &e.verify});
    const kb::Faq& q = e.faq;
    for (auto [name, text] : {std::pair{"faq.hardware_or_software", &q.hardware_or_software},
                              {"faq.fix_time", &q.fix_time},
                              {"faq.inference", &q.inference},
                              {"faq.cheapest_confirm", &q.cheapest_confirm},
                              {"faq.scale", &q.scale},
                              {"faq.monitor", &q.monitor}})
      texts.push_back({name, text});
    for (const auto& [kind, code] : e.code_examples) texts.push_back({"code_examples." + kind, &code});
    std::set<std::string> reported;
    for (const auto& [field, text] : texts) {
      for (const Use& u : uses_in(*text, field, d, kb.lint.commands)) {
        ++rule.checked;
        std::vector<std::string> pool;
        auto& by_fw = d.names[u.kind];
        if (u.frameworks.empty()) {
          const auto& all = d.all(u.kind);
          pool.assign(all.begin(), all.end());
        } else {
          for (const auto& fw : u.frameworks)
            if (auto it = by_fw.find(fw); it != by_fw.end()) pool.insert(pool.end(), it->second.begin(), it->second.end());
        }
        const auto& allowed = d.allowed[u.kind];
        pool.insert(pool.end(), allowed.begin(), allowed.end());
        bool ok = std::find(pool.begin(), pool.end(), u.name) != pool.end();
        if (!ok && u.glob)
          ok = std::any_of(pool.begin(), pool.end(), [&](const std::string& n) { return starts_with(n, u.name); });
        // a family of variables (`grep -E 'NCCL_IB|NCCL_SOCKET'`)
        if (!ok && u.kind == "env")
          ok = std::any_of(pool.begin(), pool.end(), [&](const std::string& n) { return starts_with(n, u.name + "_"); });
        if (ok || !reported.insert(u.kind + u.name).second) continue;
        std::string where = u.frameworks.empty() ? "any framework's table" : "the table of " + u.frameworks[0];
        for (size_t i = 1; i < u.frameworks.size(); ++i) where += " or " + u.frameworks[i];
        std::string hint;
        auto near = nearest_words(u.name, pool);
        for (const auto& n : near) hint += (hint.empty() ? "; did you mean " : ", ") + n;
        bool error = strict_pages || bundled.count(e.file);
        ++(error ? rule.failed : rule.warned);
        (error ? rep.problems : rep.page_warnings)
            .push_back(fmt::format("{}:{}: {}: {}: {} '{}' is not in {} (kb/names){}", e.file, line_of(e.file, u.name, field),
                                   e.id, field, u.kind == "env" ? "variable" : u.kind, u.name, where, hint));
      }
    }
  }
}

}  // namespace ff::app
