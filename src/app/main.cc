// app/main.cc — the firstfault command line. The only module that sees everything:
// it loads the KB, builds the scan engine, runs the scan, analyses and renders.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "app/commands.h"
#include "kb/kb.h"
#include "report/report.h"
#include "scan/scan.h"

namespace {

constexpr const char* kExitCodes =
    "Exit codes:\n"
    "  0  ran; the job looks healthy (no failure found)\n"
    "  1  ran; a failure or degradation was found\n"
    "  2  could not run: bad arguments, unreadable knowledge base, or no input could be read\n"
    "     (problems with some inputs are reported on stderr; the others are still diagnosed)\n";

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  ff::app::Options opt;
  CLI::App app{"firstfault: why did my training job die? Reads the logs of an ML training or serving job "
               "and names the failure that happened first, on which rank and node, what is only collateral, "
               "the root cause, the fix and how to verify it. Fully offline."};
  app.footer(kExitCodes);
  app.set_version_flag("--version", "firstfault " FF_VERSION);
  app.require_subcommand(1);
  app.add_option("--kb", opt.kb_dirs, "Extra knowledge-base directory (adds entries, overrides same ids); repeatable")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--no-cache", opt.no_cache, "Do not read or write the compiled pattern cache");

  auto* diag = app.add_subcommand("diagnose", "Diagnose a failed job from its logs");
  diag->add_option("inputs", opt.inputs,
                   "Log files, directories (a torchrun --log_dir, per-node Slurm outputs), .gz/.zst/.xz files, "
                   ".tar(.gz) bundles, or - for stdin. Several inputs are one job.")
      ->required();
  diag->add_option("--format,-f", opt.format, "Output format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  diag->add_option("--color", opt.color, "Colour: auto (on a TTY, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  diag->add_flag("-v,--verbose", opt.verbose, "Show all collateral, the whole timeline and notes");
  diag->footer(kExitCodes);

  auto* events = app.add_subcommand("events", "Print every recognised event, one per line");
  events->add_option("inputs", opt.inputs, "Log files, directories, archives, or - for stdin")->required();
  events->add_option("--format,-f", opt.format, "Output format: jsonl or text")
      ->check(CLI::IsMember({"jsonl", "text"}));

  auto* kbcmd = app.add_subcommand("kb", "Inspect the knowledge base");
  kbcmd->require_subcommand(1);
  auto* kb_check = kbcmd->add_subcommand("check", "Validate every entry: schema, patterns, examples, collisions");
  auto* kb_list = kbcmd->add_subcommand("list", "List entries");
  kb_list->add_option("--category", opt.filter_category, "Only this category");
  kb_list->add_option("--framework", opt.filter_framework, "Only this framework");
  kb_list->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));

  auto* explain = app.add_subcommand("explain", "Show one knowledge-base entry");
  explain->add_option("id", opt.entry_id, "Entry id, e.g. pytorch.cuda.out-of-memory")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (diag->parsed()) return ff::app::run_diagnose(opt);
  if (events->parsed()) {
    if (opt.format == "text" && events->count("--format") == 0) opt.format = "jsonl";
    return ff::app::run_events(opt);
  }
  if (kb_check->parsed()) return ff::app::run_kb_check(opt);
  if (kb_list->parsed()) return ff::app::run_kb_list(opt);
  if (explain->parsed()) return ff::app::run_explain(opt);
  return 2;
}
