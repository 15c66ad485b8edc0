#include "shell/shell.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <vector>

#include "base/escape.h"
#include "kb/kb.h"

#ifndef FF_VERSION
#define FF_VERSION "0.0.0"
#endif

namespace ff::app {

std::string version_text(const std::string& includes) {
  kb::LoadOptions lo;
  lo.page_fields = false;  // no cache_dir: --version reads and writes no file
  const kb::LoadResult r = kb::load_embedded({}, lo);
  std::string kb_line = fmt::format("{} entries, hash {:016x}", r.kb.entries.size(), kb::embedded_files_hash());
  if (!r.errors.empty()) kb_line += fmt::format(" ({} load errors: firstfault kb check)", r.errors.size());
  return fmt::format("firstfault " FF_VERSION
                     "\n"
                     "commit: {}\n"
                     "build: {}\n"
                     "includes: {}\n"
                     "knowledge base: {}",
                     build_commit(), build_kind(), includes, kb_line);
}

namespace {

// The command tree as the completion writers see it: only what the help lists.
enum class ValueKind { kNone, kChoices, kDirectory, kFile, kOther };

struct OptionSpec {
  std::vector<std::string> names;  // "-f", "--format"
  std::string description;
  ValueKind value = ValueKind::kNone;
  std::vector<std::string> choices;
  bool repeatable = false;
};

struct CommandSpec {
  std::vector<std::string> path;  // {} for the top level, {"kb", "list"}
  std::string name;               // last word of the path
  std::string description;
  std::vector<OptionSpec> options;
  bool takes_files = false;  // positional inputs (and, at the top level, `firstfault job.log`)
  std::vector<CommandSpec> subcommands;
};

// The first clause of a help text, short enough for a completion menu.
std::string short_description(const std::string& text) {
  std::string s = text.substr(0, text.find('\n'));
  for (const char* cut : {"; ", " (", ". ", ": "}) {
    const size_t at = s.find(cut);
    if (at != std::string::npos && at >= 16) s.resize(at);
  }
  if (s.size() > 80) {
    const size_t space = s.rfind(' ', 77);
    s = s.substr(0, space == std::string::npos ? 77 : space) + "...";
  }
  return s;
}

ValueKind value_kind(const CLI::Option& o, std::vector<std::string>& choices) {
  if (o.get_expected_max() == 0) return ValueKind::kNone;  // a flag
  const std::string type = o.get_type_name();
  if (const size_t open = type.find(":{"); open != std::string::npos) {
    const size_t close = type.find('}', open);
    std::string list = type.substr(open + 2, close == std::string::npos ? std::string::npos : close - open - 2);
    size_t start = 0;
    while (start <= list.size()) {
      const size_t comma = list.find(',', start);
      const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) choices.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return ValueKind::kChoices;
  }
  if (type.find(":DIR") != std::string::npos) return ValueKind::kDirectory;
  for (const char* numeric : {"INT", "UINT", "FLOAT", "NUMBER"}) {
    if (type.rfind(numeric, 0) == 0) return ValueKind::kOther;
  }
  return ValueKind::kFile;  // TEXT: log files and folders, the common case
}

CommandSpec describe(const CLI::App& app, std::vector<std::string> path) {
  CommandSpec c;
  c.path = path;
  c.name = path.empty() ? app.get_name() : path.back();
  c.description = short_description(app.get_description());
  c.takes_files = path.empty();  // `firstfault job.log` diagnoses it
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    if (!o->nonpositional()) {
      c.takes_files = true;
      continue;
    }
    OptionSpec s;
    for (const auto& n : o->get_snames()) s.names.push_back("-" + n);
    for (const auto& n : o->get_lnames()) s.names.push_back("--" + n);
    s.description = short_description(o->get_description());
    s.value = value_kind(*o, s.choices);
    s.repeatable = o->get_items_expected_max() > 1;
    c.options.push_back(std::move(s));
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
    std::vector<std::string> sub_path = path;
    sub_path.push_back(sub->get_name());
    c.subcommands.push_back(describe(*sub, sub_path));
  }
  return c;
}

template <typename F>
void each_command(const CommandSpec& c, F&& f) {
  f(c);
  for (const auto& s : c.subcommands) each_command(s, f);
}

std::string join(const std::vector<std::string>& words, const char* sep = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
  return out;
}

// Inside a single-quoted shell word.
std::string single_quoted(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out;
}

std::string header(const char* shell) {
  return fmt::format("# {} completion for firstfault " FF_VERSION
                     ", generated by `firstfault completions {}` from the command\n"
                     "# line's own definition (app/shell.cc): regenerate it rather than edit it.\n",
                     shell, shell);
}

// --- bash ---------------------------------------------------------------------------

std::string bash_script(const CommandSpec& root) {
  std::string transitions, value_options, per_command, value_cases;
  each_command(root, [&](const CommandSpec& c) {
    const std::string path = join(c.path);
    std::vector<std::string> opts, subs;
    for (const auto& o : c.options) {
      for (const auto& n : o.names) opts.push_back(n);
      if (o.value == ValueKind::kNone) continue;
      std::vector<std::string> keys;
      for (const auto& n : o.names) keys.push_back(fmt::format("\"{}/{}\"", path, n));
      value_options += (value_options.empty() ? "" : "|") + join(keys, "|");
      std::string action;
      switch (o.value) {
        case ValueKind::kChoices: action = fmt::format("_firstfault_reply -W \"{}\"", join(o.choices)); break;
        case ValueKind::kDirectory: action = "compopt -o filenames 2>/dev/null; _firstfault_reply -d"; break;
        case ValueKind::kFile: action = "compopt -o filenames 2>/dev/null; _firstfault_reply -f"; break;
        default: action = "COMPREPLY=()"; break;
      }
      value_cases += fmt::format("        {}) {}; return ;;\n", join(keys, "|"), action);
    }
    for (const auto& s : c.subcommands) {
      subs.push_back(s.name);
      transitions += (transitions.empty() ? "" : "|") + fmt::format("\"{}/{}\"", path, s.name);
    }
    per_command += fmt::format("        \"{}\") opts=\"{}\"; subs=\"{}\"; files={} ;;\n", path, join(opts), join(subs),
                               c.takes_files ? 1 : 0);
  });
  std::string out = header("bash");
  out += "_firstfault_reply() { mapfile -t COMPREPLY < <(compgen \"$@\" -- \"$cur\"); }\n\n";
  out += "_firstfault() {\n";
  out += "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n";
  out += "    local cmd=\"\" skip=0 i w opts subs files\n";
  out += "    # The subcommand path typed so far (\"kb list\"), stepping over option values.\n";
  out += "    for ((i = 1; i < COMP_CWORD; i++)); do\n";
  out += "        w=\"${COMP_WORDS[i]}\"\n";
  out += "        if ((skip)); then skip=0; continue; fi\n";
  out += "        case \"$cmd/$w\" in\n";
  if (!transitions.empty()) out += "            " + transitions + ") cmd=\"${cmd:+$cmd }$w\" ;;\n";
  if (!value_options.empty()) out += "            " + value_options + ") skip=1 ;;\n";
  out += "        esac\n";
  out += "    done\n";
  out += "    case \"$cmd/$prev\" in\n" + value_cases + "    esac\n";
  out += "    case \"$cmd\" in\n" + per_command + "        *) return ;;\n    esac\n";
  out += "    if [[ \"$cur\" == -* ]]; then\n";
  out += "        _firstfault_reply -W \"$opts\"\n";
  out += "    else\n";
  out += "        _firstfault_reply -W \"$subs\"\n";
  out +=
      "        if ((${#COMPREPLY[@]} == 0 && files)); then compopt -o filenames 2>/dev/null; _firstfault_reply -f; fi\n";
  out += "    fi\n";
  out += "}\n";
  out += "complete -F _firstfault firstfault\n";
  return out;
}

// --- zsh ----------------------------------------------------------------------------

// An _arguments description: `[` and `]` (and the backslash) escaped.
std::string zsh_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '[' || ch == ']' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}

std::string zsh_function_name(const CommandSpec& c) {
  std::string name = "_firstfault";
  for (const auto& w : c.path) {
    name += '_';
    for (char ch : w) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  }
  return name;
}

std::string zsh_function(const CommandSpec& c) {
  std::string specs;
  for (const auto& o : c.options) {
    std::string value;
    switch (o.value) {
      case ValueKind::kChoices: value = ":value:(" + join(o.choices) + ")"; break;
      case ValueKind::kDirectory: value = ":directory:_files -/"; break;
      case ValueKind::kFile: value = ":file:_files"; break;
      case ValueKind::kOther: value = ":value: "; break;
      case ValueKind::kNone: break;
    }
    // '(-f --format)'{-f,--format}'[description]:value:(text json)'; '*--kb[...]:...' repeats.
    const std::string prefix = o.repeatable ? "*" : o.names.size() > 1 ? "(" + join(o.names) + ")" : "";
    const std::string tail = "[" + zsh_escape(o.description) + "]" + value;
    std::string spec;
    if (o.names.size() == 1) {
      spec = "'" + single_quoted(prefix + o.names[0] + tail) + "'";
    } else {
      spec = (prefix.empty() ? "" : "'" + prefix + "'") + "{" + join(o.names, ",") + "}'" + single_quoted(tail) + "'";
    }
    specs += "    " + spec + " \\\n";
  }
  std::string out = zsh_function_name(c) + "() {\n";
  if (c.subcommands.empty()) {
    if (c.takes_files) specs += "    '*:file:_files' \\\n";
    out += "  _arguments -s \\\n" + specs + "    && return 0\n  return 1\n}\n";
    return out;
  }
  out += "  local curcontext=\"$curcontext\" state line ret=1\n  typeset -A opt_args\n";
  out += "  _arguments -C -s \\\n" + specs + "    '1: :->command' \\\n    '*:: :->args' && ret=0\n";
  out += "  case $state in\n    command)\n      local -a commands\n      commands=(\n";
  for (const auto& s : c.subcommands) {
    out += "        '" + single_quoted(s.name) + ":" + single_quoted(s.description) + "'\n";
  }
  out += "      )\n";
  out += "      _describe -t commands '" +
         single_quoted(join(c.path.empty() ? std::vector<std::string>{"firstfault"} : c.path)) +
         " subcommand' commands && ret=0\n";
  if (c.takes_files) out += "      _files && ret=0\n";
  out += "      ;;\n    args)\n      case $words[1] in\n";
  for (const auto& s : c.subcommands) { out += "        " + s.name + ") " + zsh_function_name(s) + " && ret=0 ;;\n"; }
  out += "      esac\n      ;;\n  esac\n  return ret\n}\n";
  return out;
}

std::string zsh_script(const CommandSpec& root) {
  std::string out = "#compdef firstfault\n" + header("zsh") + "\n";
  each_command(root, [&](const CommandSpec& c) { out += zsh_function(c) + "\n"; });
  // Autoloaded from $fpath (the installed _firstfault) or sourced by hand.
  out +=
      "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n  _firstfault \"$@\"\nelse\n"
      "  compdef _firstfault firstfault\nfi\n";
  return out;
}

// --- fish ---------------------------------------------------------------------------

std::string fish_script(const CommandSpec& root) {
  std::string transitions, value_options, lines;
  each_command(root, [&](const CommandSpec& c) {
    const std::string path = join(c.path);
    const std::string cond = fmt::format("-n '__fish_firstfault_path_is \"{}\"'", single_quoted(path));
    for (const auto& s : c.subcommands) {
      transitions += fmt::format(" '{}|{}'", single_quoted(path), single_quoted(s.name));
      lines += fmt::format("complete -c firstfault {} -a {} -d '{}'\n", cond, s.name, single_quoted(s.description));
    }
    if (c.takes_files) lines += fmt::format("complete -c firstfault {} -F\n", cond);
    for (const auto& o : c.options) {
      std::string flags;
      for (const auto& n : o.names) {
        if (n.rfind("--", 0) == 0) {
          flags += " -l " + n.substr(2);
        } else {
          flags += " -s " + n.substr(1);
        }
        if (o.value != ValueKind::kNone) value_options += fmt::format(" '{}|{}'", single_quoted(path), n);
      }
      switch (o.value) {
        case ValueKind::kChoices: flags += " -x -a '" + single_quoted(join(o.choices)) + "'"; break;
        case ValueKind::kDirectory: flags += " -x -a '(__fish_complete_directories)'"; break;
        case ValueKind::kFile: flags += " -r -F"; break;
        case ValueKind::kOther: flags += " -x"; break;
        case ValueKind::kNone: break;
      }
      lines += fmt::format("complete -c firstfault {}{} -d '{}'\n", cond, flags, single_quoted(o.description));
    }
  });
  std::string out = header("fish");
  out += "# The subcommand path typed so far (\"kb list\"), stepping over option values.\n";
  out += "function __fish_firstfault_path_is\n";
  out += "    set -l tokens (commandline -opc)\n";
  out += "    set -e tokens[1]\n";
  out += "    set -l path ''\n";
  out += "    set -l skip 0\n";
  out += "    for t in $tokens\n";
  out += "        if test $skip -eq 1\n            set skip 0\n            continue\n        end\n";
  out += "        switch \"$path|$t\"\n";
  if (!transitions.empty()) {
    out += "            case" + transitions + "\n";
    out +=
        "                if test -z \"$path\"\n                    set path $t\n                else\n"
        "                    set path \"$path $t\"\n                end\n";
  }
  if (!value_options.empty()) out += "            case" + value_options + "\n                set skip 1\n";
  out += "        end\n    end\n    test \"$path\" = \"$argv[1]\"\nend\n\n";
  out += "complete -c firstfault -f\n";
  out += lines;
  return out;
}

std::string g_shell;   // completions SHELL
std::string g_output;  // completions -o FILE

}  // namespace

std::string completion_script(const CLI::App& app, std::string_view shell) {
  const CommandSpec root = describe(app, {});
  if (shell == "bash") return bash_script(root);
  if (shell == "zsh") return zsh_script(root);
  if (shell == "fish") return fish_script(root);
  return {};
}

CLI::App* add_completions_command(CLI::App& app) {
  CLI::App* c = app.add_subcommand("completions", "Print the shell completion script for bash, zsh or fish");
  c->group("");  // hidden: the installed files are what users see
  c->add_option("shell", g_shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  c->add_option("-o,--output", g_output, "Write the script to this file instead of stdout");
  return c;
}

int run_completions(const CLI::App& app) {
  const std::string script = completion_script(app, g_shell);
  if (g_output.empty()) {
    fmt::print("{}", script);
    return 0;
  }
  std::ofstream out(g_output, std::ios::binary | std::ios::trunc);
  out << script;
  out.close();
  if (!out) {
    fmt::print(stderr, "firstfault: cannot write {}\n", escape_for_terminal(g_output));
    return 2;
  }
  return 0;
}

}  // namespace ff::app
