// The page rules of `kb check` (kb/README.md, "The page"): every entry has the fields an
// engineer looks for, its verify is a command run where the state it reads lives, its text
// renders, its tags join it to other entries, and its GitHub links name real branches.
// The data the rules read is kb/formats/lint.yaml and kb/formats/tags.yaml.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "kb_check/kb_check.h"
#include "base/markdown.h"
#include "base/strings.h"

namespace ff::app {
namespace {

bool in(const std::vector<std::string>& v, std::string_view s) { return std::find(v.begin(), v.end(), s) != v.end(); }

bool is_blank(std::string_view s) { return trim(s).empty(); }

// The first word a shell runs: past `VAR=value` assignments, a leading `(` or `!`, and the
// program's folder (`/usr/bin/nvidia-smi`, `./all_reduce_perf`).
std::string first_program(std::string_view cmd) {
  size_t i = 0;
  while (true) {
    while (i < cmd.size() && (cmd[i] == ' ' || cmd[i] == '\t' || cmd[i] == '\n' || cmd[i] == '(' || cmd[i] == '!')) ++i;
    size_t j = i;
    while (j < cmd.size() && cmd[j] != ' ' && cmd[j] != '\t' && cmd[j] != '\n' && cmd[j] != ';' && cmd[j] != '|') ++j;
    std::string_view word = cmd.substr(i, j - i);
    size_t eq = word.find('=');
    bool assignment =
        eq != std::string_view::npos && eq > 0 &&
        std::all_of(word.begin(), word.begin() + eq, [](char c) { return std::isalnum((unsigned char)c) || c == '_'; });
    if (assignment && j < cmd.size()) {
      // A quoted value may hold spaces: skip to its closing quote.
      if (eq + 1 < word.size() && (word[eq + 1] == '"' || word[eq + 1] == '\'')) {
        size_t close = cmd.find(word[eq + 1], i + eq + 2);
        if (close == std::string_view::npos) return std::string(word);
        j = close + 1;
        while (j < cmd.size() && cmd[j] != ' ' && cmd[j] != '\t') ++j;
      }
      i = j;
      continue;
    }
    size_t slash = word.rfind('/');
    if (slash != std::string_view::npos) word.remove_prefix(slash + 1);
    return std::string(word);
  }
}

// GitHub URL → (owner/name, branch-or-ref) for blob/ and tree/ links.
std::optional<std::pair<std::string, std::string>> github_ref(std::string_view url) {
  constexpr std::string_view kHost = "https://github.com/";
  if (!starts_with(url, kHost)) return std::nullopt;
  auto parts = split(url.substr(kHost.size()), '/');
  if (parts.size() < 4 || (parts[2] != "blob" && parts[2] != "tree")) return std::nullopt;
  return std::pair{std::string(parts[0]) + "/" + std::string(parts[1]), std::string(parts[3])};
}

// A ref that is not a branch: a release tag (v2.18.5-1, 2.1.0, slurm-23-02-7-1) or a commit.
bool is_tag_or_commit(std::string_view ref) {
  bool hex =
      ref.size() >= 7 && std::all_of(ref.begin(), ref.end(), [](char c) { return std::isxdigit((unsigned char)c); });
  return hex || std::any_of(ref.begin(), ref.end(), [](char c) { return std::isdigit((unsigned char)c); });
}

// lint.yaml `verify_not_yet:` (state a verify reads -> "hook: why"), read from the embedded
// file by kb check alone: a diagnosis never needs it, so it stays out of the cached model.
std::map<std::string, std::string> verify_not_yet() {
  std::map<std::string, std::string> out;
  for (const auto& f : kb::embedded_files()) {
    if (!ends_with(f.path, "formats/lint.yaml")) continue;
    try {
      YAML::Node n = YAML::Load(f.content)["verify_not_yet"];
      if (n && n.IsMap())
        for (const auto& kv : n) out[kv.first.as<std::string>()] = kv.second.as<std::string>();
    } catch (const YAML::Exception&) {
      // the loader reports a broken lint.yaml with its line
    }
  }
  return out;
}

}  // namespace

// Over 80 lines: one pass over the entries applies every page rule to each entry, the rules
// sharing the entry's texts and the bundled/--kb decision; split per rule, each part would
// walk the entries and rebuild them again.
void check_pages(const kb::KnowledgeBase& kb, KbCheckReport& rep, bool strict_pages) {
  const kb::LintData& lint = kb.lint;
  const auto not_yet = verify_not_yet();
  // The bundled entries (their file is an embedded path) must have their page; a --kb
  // entry only warns unless strict_pages.
  std::set<std::string> bundled;
  for (const auto& f : kb::embedded_files()) bundled.insert(f.path);
  // The page rules, counted in the order kb check prints them.
  const size_t first = rep.rules.size();
  for (const char* name : {"page.fields", "page.code-examples", "verify.command", "page.markdown",
                           "references.default-branch", "tags.shared"})
    rep.rules.push_back({name});
  RuleCount &fields = rep.rules[first], &examples = rep.rules[first + 1], &verify = rep.rules[first + 2],
            &md = rep.rules[first + 3], &refs = rep.rules[first + 4], &tags = rep.rules[first + 5];
  auto fail = [&](RuleCount& r, const kb::Entry& e, const std::string& what) {
    bool error = strict_pages || bundled.count(e.file);
    ++(error ? r.failed : r.warned);
    (error ? rep.problems : rep.page_warnings).push_back(fmt::format("{}: {}: {}", e.file, e.id, what));
  };
  std::map<std::string, std::vector<std::string>> tag_users;
  for (const auto& e : kb.entries) {
    for (const auto& t : e.tags) tag_users[t].push_back(e.id);
    // The entries that recognise a finished run have no failure to explain.
    if (e.category == "healthy") continue;

    ++fields.checked;
    std::vector<std::string> missing;
    if (e.symptoms.size() < 2) missing.push_back("symptoms (at least two rows)");
    if (e.prevention.empty()) missing.push_back("prevention");
    if (e.transience.empty()) missing.push_back("transience");
    if (is_blank(e.transience_recovers) || is_blank(e.transience_stop))
      missing.push_back("transience_rule {recovers, stop}");
    const kb::Faq& q = e.faq;
    for (auto [name, text] : {std::pair{"hardware_or_software", &q.hardware_or_software},
                              {"fix_time", &q.fix_time},
                              {"inference", &q.inference},
                              {"cheapest_confirm", &q.cheapest_confirm},
                              {"scale", &q.scale},
                              {"monitor", &q.monitor}})
      if (is_blank(*text)) missing.push_back(fmt::format("faq.{}", name));
    if (q.docs.empty()) missing.push_back("faq.docs");
    for (const auto& d : q.docs)
      if (!starts_with(d.url, "https://")) missing.push_back("faq.docs with an https:// URL (" + d.url + ")");
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      fail(fields, e, "the page lacks " + list);
    }

    ++examples.checked;
    for (const auto& [kind, code] : e.code_examples)
      if (!in(lint.code_example_kinds, kind))
        fail(examples, e, fmt::format("code_examples.{}: not a kind of lint.yaml code_example_kinds", kind));
    for (const auto& fw : e.frameworks)
      if (in(lint.configurable_frameworks, fw) && !e.code_examples.count(fw) && !e.code_examples_note.count(fw))
        fail(examples, e,
             fmt::format("names {} but has no code_examples.{} (or code_examples_note.{} saying why none applies)", fw,
                         fw, fw));

    ++verify.checked;
    // The state a verify reads must exist where expect says to run it (lint.yaml
    // verify_not_yet): Lightning's batch counts are set after on_fit_start.
    auto check_not_yet = [&](const kb::Entry& x) {
      for (const auto& [state, hook_why] : not_yet) {
        std::string_view hook = std::string_view(hook_why).substr(0, hook_why.find(':'));
        if (x.verify.find(state) != std::string::npos && x.verify_expect.find(hook) != std::string::npos)
          fail(verify, x,
               fmt::format("verify reads {} in {}, where it does not exist yet ({})", state, hook,
                           trim(std::string_view(hook_why).substr(hook.size() + 1))));
      }
    };
    if (e.verify_where.empty()) {
      fail(verify, e, "verify is a plain string: give {where, command, expect}");
    } else if (e.verify_where == "in-process") {
      check_not_yet(e);
      std::string prog = first_program(e.verify);
      if (in(lint.commands, prog) && prog != "print")
        fail(
            verify, e,
            fmt::format(
                "verify.where is in-process, but the command starts the program '{}': Python lines to add to the training script belong here",
                prog));
    } else {
      std::string prog = first_program(e.verify);
      if (!in(lint.commands, prog))
        fail(verify, e,
             fmt::format("verify.command does not start with a program (first word '{}'; lint.yaml commands)", prog));
      check_not_yet(e);
      for (const auto& call : lint.per_process_state)
        if (e.verify.find(call) != std::string::npos)
          fail(
              verify, e,
              fmt::format(
                  "verify.command reads per-process state ('{}') from a fresh process: it always reads the default; use where: in-process",
                  call));
    }

    ++md.checked;
    std::vector<std::pair<std::string, const std::string*>> texts{{"title", &e.title},
                                                                  {"summary", &e.summary},
                                                                  {"mechanism", &e.mechanism},
                                                                  {"root_cause", &e.root_cause},
                                                                  {"verify.expect", &e.verify_expect},
                                                                  {"transience_rule.recovers", &e.transience_recovers},
                                                                  {"transience_rule.stop", &e.transience_stop},
                                                                  {"faq.hardware_or_software", &q.hardware_or_software},
                                                                  {"faq.fix_time", &q.fix_time},
                                                                  {"faq.inference", &q.inference},
                                                                  {"faq.cheapest_confirm", &q.cheapest_confirm},
                                                                  {"faq.scale", &q.scale},
                                                                  {"faq.monitor", &q.monitor}};
    auto add_list = [&](const char* name, const std::vector<std::string>& v) {
      for (size_t i = 0; i < v.size(); ++i) texts.push_back({fmt::format("{}[{}]", name, i), &v[i]});
    };
    add_list("fix", e.fix);
    add_list("confirm", e.confirm);
    add_list("prevention", e.prevention);
    for (size_t i = 0; i < e.symptoms.size(); ++i) {
      texts.push_back({fmt::format("symptoms[{}].symptom", i), &e.symptoms[i].symptom});
      texts.push_back({fmt::format("symptoms[{}].why", i), &e.symptoms[i].why});
    }
    for (const auto& [name, text] : texts)
      if (!markdown_balanced(*text))
        fail(md, e,
             fmt::format("{} has an unpaired Markdown delimiter (a backtick, '**' or '*': put globs and "
                         "products inside backticks)",
                         name));

    std::vector<const kb::Reference*> links;
    for (const auto& r : e.references) links.push_back(&r);
    for (const auto& r : q.docs) links.push_back(&r);
    for (const auto* r : links) {
      auto gh = github_ref(r->url);
      if (!gh) continue;
      ++refs.checked;
      auto it = lint.default_branches.find(gh->first);
      if (it == lint.default_branches.end()) {
        if (!is_tag_or_commit(gh->second))
          fail(refs, e,
               fmt::format("{}: {} is not in lint.yaml default_branches (add its default branch)", r->url, gh->first));
      } else if (gh->second != it->second && !is_tag_or_commit(gh->second)) {
        fail(refs, e, fmt::format("{}: {}'s default branch is {}, not {}", r->url, gh->first, it->second, gh->second));
      }
    }
  }

  for (const auto& [tag, users] : tag_users) {
    ++tags.checked;
    bool good = std::all_of(tag.begin(), tag.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
    const kb::Entry* e = kb.find(users.front());
    if (!good) fail(tags, *e, fmt::format("tag '{}' is not lowercase [a-z0-9_-]", tag));
    if (users.size() == 1 && !lint.tag_singletons.count(tag))
      fail(
          tags, *e,
          fmt::format(
              "tag '{}' is used by no other entry: merge it into a shared tag or justify it in formats/tags.yaml singletons",
              tag));
  }
  for (const auto& [tag, why] : lint.tag_singletons) {
    auto it = tag_users.find(tag);
    if (it == tag_users.end() || it->second.size() != 1) {
      ++tags.failed;
      rep.problems.push_back(
          fmt::format("formats/tags.yaml: singleton '{}' is used by {} entries: drop its justification", tag,
                      it == tag_users.end() ? 0 : it->second.size()));
    }
  }
}

}  // namespace ff::app
