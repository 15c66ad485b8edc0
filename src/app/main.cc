// app/main.cc — the firstfault command line. The only module that sees everything:
// it loads the KB, builds the scan engine, runs the scan, analyses and renders.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <system_error>
#include <nlohmann/json.hpp>

#include "analyze/analyze.h"
#include "app/commands.h"
#include "app/commands.report.h"
#include "bundle/bundle.h"
#include "pipeline/perf.h"
#include "controls/controls.h"
#include "schedulers/schedulers.h"
#include "lsp/lsp.h"
#include "shell/shell.h"
#include "watch/live.h"
#include "base/cache.h"
#include "base/escape.h"
#include "base/wrap.h"
#include "base/interrupt.h"
#include "kb/kb.h"
#include "report/report.h"
#include "scan/scan.h"

namespace {

constexpr const char* kExitCodes =
    "Exit codes (the verdict; `firstfault rules` lists the rules that decide it):\n"
    "  0  healthy: the log shows the run completing (completion lines, the final step of a known total)\n"
    "  1  failed: a failure, with its evidence\n"
    "  2  could not run: bad arguments, unreadable knowledge base, or no input could be read\n"
    "  3  incomplete: no failure found, but the input ends (or was read) short of the run's end:\n"
    "     a truncated stream, --max-bytes reached, inputs not read, a log that stops at step k of n\n"
    "  4  unknown: nothing to judge (empty input, nothing that reads as a training or serving log)\n"
    "  5  degraded: no failure, but sustained harm the numbers show while the run went on (a straggler,\n"
    "     a throughput drop, errors recovered from that keep coming)\n"
    "  A script that tests for 0 never reads a partial answer as healthy.\n";

}  // namespace

std::vector<const CLI::App*> subcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

bool is_subcommand(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : subcommands(app)) {
    if (sub->check_name(word)) return true;
  }
  return false;
}

// `firstfault job.log` means `firstfault diagnose job.log` (issue 16): the first word is
// not a subcommand or an option, and names a file, a folder or stdin ("-").
bool first_word_is_an_input(int argc, char** argv, const CLI::App& app) {
  if (argc < 2) return false;
  const std::string first = argv[1];
  if (first.empty() || (first[0] == '-' && first != "-") || is_subcommand(app, first)) return false;
  struct stat st {};
  return first == "-" || ::stat(first.c_str(), &st) == 0;
}

// The first word is neither an option, a subcommand nor an input: say so, with the
// nearest subcommand when one is close (a typo), instead of "A subcommand is required".
bool explain_unknown_first_word(int argc, char** argv, const CLI::App& app) {
  if (argc < 2 || argv[1][0] == '-' || is_subcommand(app, argv[1])) return false;
  const std::string first = argv[1];
  std::string names;
  std::vector<std::string> all;
  for (const CLI::App* sub : subcommands(app)) {
    if (sub->get_group().empty()) continue;  // hidden
    names += (names.empty() ? "" : ", ") + sub->get_name();
    all.push_back(sub->get_name());
  }
  auto near = ff::nearest_words(first, all, 1);
  fmt::print(stderr, "firstfault: '{}' is not a subcommand, nor a file or folder here{}\n  subcommands: {}\n",
             ff::escape_for_terminal(first), near.empty() ? "" : "; did you mean '" + near[0] + "'?", names);
  return true;
}

// After CLI11's "The following argument was not expected": the nearest option of the
// subcommand the words name (`--fromat` → `--format`), the global ones included.
void suggest_options(const CLI::App& app, const std::vector<std::string>& words) {
  const CLI::App* cmd = &app;
  std::vector<const CLI::App*> chain = {&app};
  for (const auto& w : words) {
    if (!w.empty() && w[0] == '-') continue;
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : subcommands(*cmd)) {
      if (sub->check_name(w)) next = sub;
    }
    if (!next) continue;
    cmd = next;
    chain.push_back(cmd);
  }
  std::vector<std::string> names;
  for (const CLI::App* c : chain) {
    for (const CLI::Option* o : c->get_options()) {
      if (o->get_group().empty()) continue;  // hidden
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      for (const auto& sn : o->get_snames()) names.push_back("-" + sn);
    }
  }
  for (const auto& w : words) {
    if (w.size() < 2 || w[0] != '-') continue;
    const std::string flag = w.substr(0, w.find('='));
    if (std::find(names.begin(), names.end(), flag) != names.end()) continue;
    auto near = ff::nearest_words(flag, names, 2);
    std::erase_if(near, [](const std::string& n) { return n.size() == 2; });  // "-f" for "--fx" says little
    if (!near.empty())
      fmt::print(stderr, "firstfault: unknown option '{}'; did you mean {}?\n", ff::escape_for_terminal(flag),
                 fmt::format("'{}'", fmt::join(near, "' or '")));
  }
}

// Over 80 lines: the command tree is declared here, in one place (flags as data for
// CLI11), so that --help, the shell completions and the dispatch all read the one list.
int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  ff::app::Options opt;
  CLI::App app{
      "firstfault: why did my training job die? Reads the logs of an ML training or serving job "
      "and names the failure that happened first, on which rank and node, what is only collateral, "
      "the root cause, the fix and how to verify it. Fully offline."};
  app.name("firstfault");  // the usage says firstfault, not the path it was run from
  app.set_version_flag("--version,-V", [] { return ff::app::version_text(ff::app::build_includes()); });  // shell/shell.cc
  app.require_subcommand(1);
  app.add_option("--kb", opt.kb_dirs, "Extra knowledge-base directory (adds entries, overrides same ids); repeatable")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--no-cache", opt.no_cache, "Do not read or write the compiled pattern cache");

  auto* diag = app.add_subcommand("diagnose", "Diagnose a failed job from its logs");
  diag->add_option("inputs", opt.inputs,
                   "Log files, directories (a torchrun --log_dir, per-node Slurm outputs), .gz/.zst/.xz files, "
                   ".tar(.gz) bundles, or - for stdin (the default when stdin is a pipe or a file). Several "
                   "inputs are one job.");
  diag->add_option(
          "--format,-f", opt.format,
          "Output format: text (the terminal), json (docs/json-output.md), html (one self-contained page: "
          "timeline, plots; open it in a browser), markdown (for a GitHub issue or a chat; md for short), vimgrep "
          "(file:line:col: severity: message lines for an editor's quickfix list) or sarif (SARIF 2.1.0 for "
          "code-scanning tools)")
      ->check(CLI::IsMember({"text", "json", "html", "markdown", "md", "vimgrep", "sarif"}));
  diag->add_option("--output,-o", opt.output, "Write the report to this file instead of stdout (- for stdout)");
  diag->add_option("--site-url", opt.site_url,
                   "Where the encyclopedia (`firstfault site DIR`) is, as a path or URL: the html report links the "
                   "entry's page there");
  diag->add_option("--color", opt.colour, "Colour: auto (on a TTY, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  diag->add_flag("-v,--verbose", opt.verbose, "Show all collateral, the whole timeline and notes");
  const char* kBriefHelp =
      "Only the answer: the verdict, the first failure and its line, the fix and the command that verifies it";
  const char* kNoPagerHelp =
      "Print the report as it is, never through the pager (on a terminal a report longer than the screen goes "
      "through FIRSTFAULT_PAGER, else PAGER, else less -FRX, as git does; PAGER=cat turns it off too)";
  diag->add_flag("--brief", opt.brief, kBriefHelp);
  diag->add_flag("--no-pager", opt.no_pager, kNoPagerHelp);
  const char* kMaxBytesHelp =
      "Stop reading after this many decompressed bytes over all inputs (e.g. 512M, 20G; default 256G): "
      "a bound on archive and compression bombs";
  diag->add_option("--max-bytes", opt.max_bytes, kMaxBytesHelp)->transform(CLI::AsSizeValue(false));
  const char* kHostHelp =
      "Only the lines this host wrote, out of a shared stream (syslog, journald, any prefix naming a node; the "
      "short name matches the FQDN); lines that name no host are kept";
  const char* kUnitHelp =
      "Only the lines this unit or program wrote (a syslog tag, an RFC 5424 APP-NAME, a journal's unit; train "
      "matches train.service)";
  diag->add_option("--host", opt.only_host, kHostHelp);
  diag->add_option("--unit", opt.only_unit, kUnitHelp);
  ff::app::add_scan_flags(diag, opt);
  ff::app::add_follow_flag(diag, opt);
  diag->footer(kExitCodes);
  const char* kRedactHelp =
      "Replace tokens, passwords, e-mail and IP addresses, host names and home-folder user names in "
      "everything quoted from the logs (consistent pseudonyms: the same host is the same node-NN "
      "throughout); the diagnosis itself is made on the original text";
  diag->add_flag("--redact", opt.redact, kRedactHelp);

  auto* events = app.add_subcommand("events", "Print every recognised event, one per line");
  events->add_option("inputs", opt.inputs,
                     "Log files, directories, archives, or - for stdin (the default when stdin is not a terminal)");
  events->add_option("--format,-f", opt.format, "Output format: jsonl or text")
      ->check(CLI::IsMember({"jsonl", "text"}));
  events->add_option("--max-bytes", opt.max_bytes, kMaxBytesHelp)->transform(CLI::AsSizeValue(false));
  events->add_option("--host", opt.only_host, kHostHelp);
  events->add_option("--unit", opt.only_unit, kUnitHelp);
  ff::app::add_scan_flags(events, opt);
  ff::app::add_follow_flag(events, opt);
  events->add_flag("--redact", opt.redact, kRedactHelp);
  events->footer(
      "Exit codes:\n  0  no event recognised\n  1  events printed\n  2  could not run (no input could be read)\n");

  auto* kbcmd = app.add_subcommand("kb", "Inspect the knowledge base");
  kbcmd->require_subcommand(1);
  auto* kb_check = kbcmd->add_subcommand("check", "Validate every entry: schema, patterns, examples, collisions");
  kb_check->add_flag(
      "--strict", opt.strict_pages,
      "Fail on the page rules for --kb entries too (they are warnings there: a private KB needs patterns, not pages)");
  kb_check->footer(
      "Exit codes:\n  0  every entry is valid\n  1  errors found (each printed with its file and line)\n  2  could not run\n");
  auto* kb_list = kbcmd->add_subcommand("list", "List entries");
  auto* kb_literals = kbcmd->add_subcommand(
      "literals", "Print the literal text of every pattern, one per line (for grep -F / rg -F comparisons)");
  kb_list->add_option("--category", opt.filter_category, "Only this category");
  kb_list->add_option("--framework", opt.filter_framework, "Only this framework");
  kb_list->add_option("--phase", opt.filter_phase, "Only this lifecycle phase")->check(CLI::IsMember(ff::kb::phases()));
  kb_list->add_option("--tag", opt.filter_tag, "Only entries with this tag");
  kb_list->add_flag("--tags", opt.list_tags,
                    "List the tags (of the entries the filters keep) with how many entries use each, most used first");
  kb_list->footer(
      "Exit codes:\n  0  entries listed\n  1  no entry matches the filters together\n  2  could not run, or a filter value no entry has (the values that exist are named)\n");
  kb_list->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));

  auto* explain = app.add_subcommand("explain", "Show knowledge-base entries, a page each");
  explain
      ->add_option("id", opt.entry_ids,
                   "Entry ids, e.g. pytorch.cuda.out-of-memory (several: a page each, "
                   "separated by a line of dashes)")
      ->required();
  explain->footer(
      "Exit codes:\n  0  every entry shown\n  2  an id no entry has (the nearest ids are named; the other pages are "
      "still shown), or could not run\n");

  auto* search = app.add_subcommand(
      "search",
      "Find the entries for a pasted error text or keywords: entries whose pattern matches a line first, "
      "then the rest by keyword relevance");
  search
      ->add_option("words", opt.words,
                   "Keywords or a pasted log line (quote it; several lines are fine), or - to read stdin")
      ->required();
  search->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  search->add_option("--limit,-n", opt.limit, "Show at most N entries (0 = all)")->capture_default_str();
  search->footer("Exit codes:\n  0  something matched\n  1  nothing matched\n  2  could not run\n");

  auto* rules = app.add_subcommand("rules", "List the reasoning rules behind a verdict, in the order they apply");
  rules->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  rules->footer("Exit codes:\n  0  rules listed\n");

  auto* site = app.add_subcommand(
      "site", "Write the knowledge base as a static HTML encyclopedia (open OUTDIR/index.html; works offline)");
  site->add_option("outdir", opt.out_dir, "Folder to write (created if missing; files in it are overwritten)")
      ->required();
  site->footer(
      "Exit codes:\n  0  encyclopedia written\n  2  could not run (the folder cannot be written, or no usable entry)\n");

  auto* diff = app.add_subcommand(
      "diff", "Compare a failed run with a healthy control: new lines, changed rates, the first departure");
  diff->add_option("failed", opt.inputs, "Logs of the failed run (files, folders, archives)")->required();
  diff->add_option("--control,-c", opt.control, "Logs of a healthy run of the same job")->required();
  diff->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  diff->add_option("--limit", opt.limit, "Rows shown per section (default 20)");
  ff::app::add_follow_flag(diff, opt);
  diff->add_flag("--redact", opt.redact, kRedactHelp);
  diff->footer(
      "Exit codes: 0 nothing new and the failed run healthy, 1 differences or a failure found, 2 could not "
      "run, 3 the control is not a healthy run (it failed too, or shows no end): the comparison cannot be "
      "trusted.");

  auto* bundle = app.add_subcommand(
      "bundle",
      "Write the evidence a helper needs into one tar.gz, redacted: the diagnosis (JSON, Markdown, HTML), "
      "the decisive lines with their context, the environment the log states, a manifest");
  bundle->add_option("inputs", opt.inputs, "Logs of the job (files, folders, archives, - for stdin)")->required();
  bundle->add_option("--output,-o", opt.output, "The bundle to write (default evidence.tar.gz)");
  bundle->add_flag("--no-redact", opt.no_redact,
                   "Keep the text as logged (by default tokens, passwords, e-mail and IP addresses, hostnames and "
                   "user names are replaced)");
  bundle->add_option("--max-bytes", opt.max_bytes, kMaxBytesHelp)->transform(CLI::AsSizeValue(false));
  ff::app::add_follow_flag(bundle, opt);
  bundle->footer(
      "Exit codes: the verdict's, as for diagnose (0 healthy, 1 failed, 3 incomplete, 4 "
      "unknown, 5 degraded), once the bundle is written; 2 could not run (nothing read, or the bundle cannot be "
      "written).");

  auto* serve = app.add_subcommand(
      "serve",
      "A local web page: paste or drop a log, read the diagnosis, browse the encyclopedia (logs stay on this "
      "machine)");
  serve->add_option("--bind", opt.bind, "Address to listen on (default 127.0.0.1; another needs --allow-remote)");
  serve->add_option("--port,-p", opt.port, "Port (default 8765; 0 picks a free one)")->check(CLI::Range(0, 65535));
  serve->add_flag("--open", opt.open_browser, "Open the page in the default browser (xdg-open)");
  serve->add_flag("--allow-remote", opt.allow_remote,
                  "Allow a --bind address other than loopback: other machines can then send logs and read diagnoses");
  serve->add_option("--max-upload", opt.max_upload, "Largest upload accepted (default 8G; larger: 413)")
      ->transform(CLI::AsSizeValue(false));
  serve->add_option("--jobs,-j", opt.jobs, "Diagnoses at once (default: one per core, at least 2)");
  serve->add_option("--queue", opt.queue, "Diagnoses waiting behind them (default 64; more: 503 with Retry-After)");
  serve
      ->add_option("--read-timeout", opt.read_timeout,
                   "Seconds a client may stay silent, in its headers or its upload, before it is dropped (default 10)")
      ->check(CLI::Range(1, 3600));
  serve->add_option("--max-bytes", opt.max_bytes, kMaxBytesHelp)->transform(CLI::AsSizeValue(false));
  serve->footer(
      "The API: POST /api/diagnose (a text body or multipart files), GET /api/entries, /api/entries/ID, "
      "/api/search?q=, /healthz (docs/serve.md).\nExit codes:\n  0  stopped by Ctrl-C or SIGTERM\n  2  "
      "could not run (the address or port cannot be used, a remote address without --allow-remote, no web "
      "server in this build)\n");

  auto* verify = app.add_subcommand("verify", "After a fix: is the original failure's signature gone from the rerun?");
  verify->add_option("--before,-b", opt.inputs, "Logs of the failed run")->required();
  verify->add_option("--after,-a", opt.control, "Logs of the rerun after the fix")->required();
  verify->add_option("--format,-f", opt.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  ff::app::add_follow_flag(verify, opt);
  verify->add_flag("--redact", opt.redact, kRedactHelp);
  verify->footer(
      "Exit codes: 0 fixed: the original failure's signature is gone and the rerun got past the point "
      "where it failed (a later step, or completion); 1 still failing, or replaced by a different failure; "
      "2 could not run (or the --before logs show no failure); 3 inconclusive: the signature is gone but "
      "the rerun stops before the original's failing step, or was not fully read.");

  // Where the jobs run (app/scheduler.h): the Slurm epilog, a Slurm job id, a Kubernetes pod or Job.
  ff::app::SchedulerOptions sched;
  auto add_report_flags = [&](CLI::App* cmd) {
    cmd->add_option("--format,-f", opt.format, "Output format: text, json, html or markdown (md), as for diagnose")
        ->check(CLI::IsMember({"text", "json", "html", "markdown", "md"}));
    cmd->add_option("--output,-o", opt.output, "Write the report to this file instead of stdout (- for stdout)");
    cmd->add_option("--color", opt.colour, "Colour: auto, always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    cmd->add_flag("-v,--verbose", opt.verbose, "Show all collateral, the whole timeline and notes");
    cmd->add_flag("--brief", opt.brief, kBriefHelp);
    cmd->add_flag("--no-pager", opt.no_pager, kNoPagerHelp);
    cmd->add_option("--max-bytes", opt.max_bytes, kMaxBytesHelp)->transform(CLI::AsSizeValue(false));
    cmd->add_flag("--redact", opt.redact, kRedactHelp);
    ff::app::add_scan_flags(cmd, opt);
    cmd->footer(kExitCodes);
  };
  auto seconds = [](std::string v) {  // "30" or "30s"
    if (!v.empty() && v.back() == 's') v.pop_back();
    return v;
  };
  auto* slurm_epilog = app.add_subcommand(
      "slurm-epilog",
      "Run as Slurm's Epilog, EpilogSlurmctld or a strigger program: diagnose a failed job, write "
      "<StdOut>.firstfault.json and .md beside its output and a one-line summary into its AdminComment");
  slurm_epilog->add_option("--job", sched.job, "The job id (default: $SLURM_JOB_ID)");
  slurm_epilog
      ->add_option("--timeout", sched.timeout_s,
                   "Whole run's bound in seconds (default 30; 30s also reads): reading stops before it and the "
                   "answer so far is written, marked incomplete")
      ->transform(seconds)
      ->check(CLI::Range(1.0, 3600.0));
  slurm_epilog->add_flag("--force", sched.force, "Diagnose the job even when it succeeded");
  slurm_epilog->add_flag("--no-comment", sched.no_comment, "Do not set the job's AdminComment");
  slurm_epilog->add_flag("--env-only", sched.env_only,
                         "Take the exit codes in the environment (SLURM_JOB_EXIT_CODE2, SLURM_JOB_DERIVED_EC) as the "
                         "answer when they are 0, without asking scontrol: no RPC for a job that succeeded, but a "
                         "time-limit cancel, whose codes there are 0, goes undiagnosed");
  slurm_epilog->add_option("--history", sched.history,
                           "The history database the diagnosis is kept in (default: as diagnose's, "
                           "$XDG_STATE_HOME/firstfault/history.db or FIRSTFAULT_HISTORY)");
  slurm_epilog->add_flag("--no-history", sched.no_history, "Do not keep the diagnosis in the history");
  slurm_epilog->add_option("--textfile-dir", sched.textfile_dir,
                           "node_exporter's textfile-collector folder: the failure counters are added to "
                           "firstfault.prom there (written atomically, 0644)");
  slurm_epilog
      ->add_option("--metric-labels", sched.metric_labels,
                   "The job's facts that label the failure series: any of partition, account, user "
                   "(default: partition; \"\" for none)")
      ->delimiter(',')
      ->check(CLI::IsMember({"partition", "account", "user", ""}));
  ff::app::add_scan_flags(slurm_epilog, opt);
  slurm_epilog->footer(
      "Exit code: always 0, so that the job's teardown never fails (a failed Epilog drains the "
      "node); problems are said on stderr, which slurmd and slurmctld log.");
  auto* slurm = app.add_subcommand(
      "slurm",
      "Diagnose a Slurm job from its id: its output files from scontrol (or sacct once slurmctld has "
      "forgotten the job)");
  slurm->add_option("jobid", sched.job, "The job id (1234, or 1234_7 for an array task)")->required();
  add_report_flags(slurm);
  auto* k8s = app.add_subcommand(
      "k8s",
      "Diagnose a Kubernetes pod or Job: kubectl logs --prefix --timestamps --all-containers, with the pods' "
      "events and container statuses (OOMKilled, Evicted, BackOff, FailedScheduling) as evidence");
  k8s->add_option("target", sched.target, "POD, pod/POD, or job/NAME (the Job's pods, by the job-name label)")
      ->required();
  k8s->add_option("--namespace,-n", sched.k8s_namespace, "The namespace (default: kubectl's)");
  k8s->add_option("--context", sched.k8s_context, "The kubeconfig context (default: kubectl's)");
  k8s->add_flag("--previous,-p", sched.previous, "The logs of the containers' previous run (after a restart)");
  add_report_flags(k8s);

  // The fleet report (app/commands.report.cc, fleet/): many jobs' diagnoses added up.
  ff::app::FleetReportOptions fleet;
  auto* report = app.add_subcommand(
      "report",
      "Add up many jobs' diagnoses (the .firstfault.json files the Slurm epilog leaves beside job outputs, "
      "or the history): interruptions by category and entry over time, hardware vs software, GPU-hours lost, "
      "nodes with repeated hardware findings, recurring failures, and what changed against another period");
  report->add_option("paths", fleet.paths, "Folders of job outputs (walked for *.firstfault.json), or such files");
  report->add_flag("--history", fleet.history, "Also the diagnoses kept in the history (firstfault history)");
  report->add_option("--since", fleet.since, "The period's first day (YYYY-MM-DD, UTC; default: all)");
  report->add_option("--until", fleet.until, "The day after the period (YYYY-MM-DD; default: now)");
  report->add_option("--compare-to", fleet.compare_to,
                     "Another period to compare with: FROM..TO (YYYY-MM-DD..YYYY-MM-DD)");
  report->add_option("--format,-f", fleet.format, "html (one self-contained page), markdown (md) or json")
      ->check(CLI::IsMember({"html", "markdown", "md", "json"}));
  report->add_option("--output,-o", fleet.output, "Write it to this file instead of stdout");
  report->add_option("--title", fleet.title, "The report's title (default: Fleet report)");
  report->footer(
      "Exit codes: 0 written; 2 could not run (bad arguments, a path that does not exist, an "
      "unwritable output). Files that are not diagnoses are skipped and counted.");

  diag->add_flag("--no-history", opt.no_history, "Do not keep the diagnosis in the history (firstfault history)");
  ff::app::LiveCommands& live = ff::app::add_live_commands(app, opt);  // watch, run, history: app/watch.cc
  auto* lsp = app.add_subcommand(
      "lsp", "Language server (LSP over stdio) for editors: diagnostics, hover and code actions on open log files");
  lsp->footer(
      "Exit codes: 0 after the client's shutdown and exit, 1 when the input ended without them, 2 could not "
      "start (unreadable knowledge base).");

  CLI::App* completions = ff::app::add_completions_command(app);  // hidden; app/shell.cc
  // Set last: CLI11 copies a parent's footer into the subcommands made after it, and the
  // verdict's exit codes belong to diagnose (and the top level, which runs it for a file).
  app.footer(std::string(kExitCodes) + "\nEach subcommand's --help says what it takes and its own exit codes.\n");

  // `firstfault job.log`: diagnose it.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (first_word_is_an_input(argc, argv, app)) {
    args.insert(args.begin(), "diagnose");
  } else if (explain_unknown_first_word(argc, argv, app)) {
    return 2;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // --help or --version into a pipe already closed: as for any output (below).
    std::cout.flush();
    if ((std::cout.bad() || std::fflush(stdout) != 0) && errno == EPIPE) return 128 + SIGPIPE;
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      suggest_options(app, std::vector<std::string>(argv + 1, argv + argc));
    return rc == 0 ? 0 : 2;
  }

  // No input named: stdin when it is a pipe or a file (`cat job.log | firstfault diagnose`);
  // on a terminal, say what to give instead of waiting for typed text.
  if ((diag->parsed() || events->parsed()) && opt.inputs.empty()) {
    if (::isatty(STDIN_FILENO)) {
      fmt::print(stderr,
                 "firstfault: no input: name log files or folders (firstfault {} train.log), or pipe one in "
                 "(cat train.log | firstfault {})\n",
                 diag->parsed() ? "diagnose" : "events", diag->parsed() ? "diagnose" : "events");
      return 2;
    }
    opt.inputs = {"-"};
  }
  // Commands that read logs stop reading at Ctrl-C or SIGTERM and answer for what they
  // read, marked incomplete; a second Ctrl-C ends them at once.
  if (diag->parsed() || events->parsed() || diff->parsed() || verify->parsed() || bundle->parsed() || slurm->parsed())
    ff::install_interrupt_handlers();
  auto dispatch = [&]() -> int {
    if (diag->parsed()) return ff::app::run_diagnose(opt);
    if (events->parsed()) {
      if (opt.format == "text" && events->count("--format") == 0) opt.format = "jsonl";
      return ff::app::run_events(opt);
    }
    if (kb_check->parsed()) return ff::app::run_kb_check(opt);
    if (kb_list->parsed()) return ff::app::run_kb_list(opt);
    if (kb_literals->parsed()) return ff::app::run_kb_literals(opt);
    if (explain->parsed()) return ff::app::run_explain(opt);
    if (search->parsed()) return ff::app::run_search(opt);
    if (site->parsed()) return ff::app::run_site(opt);
    if (rules->parsed()) return ff::app::run_rules(opt);
    if (diff->parsed()) {
      if (diff->count("--limit") == 0) opt.limit = 20;
      return ff::app::run_diff(opt);
    }
    if (verify->parsed()) return ff::app::run_verify(opt);
    if (bundle->parsed()) return ff::app::run_bundle(opt);
    if (lsp->parsed()) return ff::app::run_lsp(opt);
    if (serve->parsed()) return ff::app::run_serve(opt);
    if (slurm_epilog->parsed()) return ff::app::run_slurm_epilog(opt, sched);
    if (report->parsed()) return ff::app::run_fleet_report(opt, fleet);
    if (slurm->parsed()) return ff::app::run_slurm(opt, sched);
    if (k8s->parsed()) return ff::app::run_k8s(opt, sched);
    if (int rc = 0; ff::app::run_live_command(live, opt, rc)) return rc;
    if (completions->parsed()) return ff::app::run_completions(app);
    return 2;
  };
  // A reader that stops early (`firstfault kb list | head -1`): stop quietly, as grep and
  // git do, with the exit status of a process ended by SIGPIPE (SIGPIPE itself is ignored,
  // so a write fails with EPIPE instead of killing the process mid-way).
  int rc = 0;
  try {
    rc = dispatch();
    std::cout.flush();
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::broken_pipe) throw;
    return 128 + SIGPIPE;
  }
  if ((std::cout.bad() || std::fflush(stdout) != 0 || std::ferror(stdout)) && errno == EPIPE) return 128 + SIGPIPE;
  // A cache that cannot be written makes every run compile the KB and the patterns again
  // (seconds): said once per run, whatever failed to be written.
  if (auto problem = ff::take_cache_problem()) {
    fmt::print(stderr,
               "firstfault: {} (each run compiles again; FIRSTFAULT_CACHE_DIR chooses another place, "
               "--no-cache turns it off)\n",
               ff::escape_for_terminal(*problem));
  }
  return rc;
}
