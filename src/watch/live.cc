// watch/live.cc — the command line of the live commands (watch, run, history) and their
// dispatch; the commands themselves are in live.*.cc (watch/live_internal.h).
#include "watch/live.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <string>

#include "watch/live_internal.h"

namespace ff::app {

namespace {

void add_live_flags(CLI::App* cmd, LiveOptions& o) {
  cmd->add_option("--severity", o.severity, "Say findings this bad or worse: info, warning (default), degraded, failed")
      ->check(CLI::IsMember({"info", "warning", "degraded", "failed"}));
  cmd->add_option("--exit-on", o.exit_on, "Stop at the first finding this bad (failed, or degraded and worse); exit 1")
      ->check(CLI::IsMember({"failed", "degraded"}));
  cmd->add_option("--on-finding", o.on_finding,
                  "Run this shell command once per incident at or above --severity: the finding as JSON on stdin, "
                  "FIRSTFAULT_KIND, _SEVERITY, _ENTRY, _CATEGORY, _VERDICT, _RANK, _KEY in its environment");
  cmd->add_option("--stall-after", o.stall_after,
                  "A stall (a hang finding) after this long without a new step (90s, 10m); default: 10 times the "
                  "run's typical step interval, at least 30 s");
  cmd->add_option("--metrics", o.metrics,
                  "Serve Prometheus metrics on this address (127.0.0.1:9464; a port alone binds 127.0.0.1)");
  cmd->add_flag("--allow-remote", o.allow_remote,
                "Let --metrics listen on an address other than loopback (anyone who can reach it reads the run's "
                "metrics)");
  cmd->add_flag("--no-history", o.no_history, "Do not keep the diagnosis in the history");
}

}  // namespace

bool parse_duration_ms(const std::string& text, int64_t& ms) {
  if (text.empty()) return false;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) { return false; }
  const std::string unit = text.substr(used);
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1000;
  else if (unit == "ms")
    scale = 1;
  else if (unit == "m" || unit == "min")
    scale = 60000;
  else if (unit == "h")
    scale = 3600000;
  else
    return false;
  if (!std::isfinite(v) || v < 0 || v * scale > 1e15) return false;
  ms = static_cast<int64_t>(v * scale);
  return true;
}

LiveCommands& add_live_commands(CLI::App& app, Options& opt) {
  static LiveCommands c;
  LiveOptions& o = c.o;
  c.watch = app.add_subcommand(
      "watch",
      "Follow a running job's logs (files, folders, new per-rank files, rotation) and say each finding as it "
      "happens: the first failure, collateral, stalls; the diagnosis at the end");
  c.watch->add_option("paths", o.paths, "Log files and folders to follow (a torchrun --log_dir)")->required();
  c.watch->add_option("--format,-f", o.format, "text, or jsonl (one JSON object per finding, the diagnosis last)")
      ->check(CLI::IsMember({"text", "jsonl"}));
  c.watch->add_option("--idle-exit", o.idle_exit, "Stop when no file has grown for this long (e.g. 30s)");
  c.watch->add_flag("--until-done", o.until_done,
                    "Stop when the logs say the job ended (the launcher's failure table, a completion line, a "
                    "scheduler's cancel or a launcher's exit), once the files are quiet for 2 s after it");
  c.watch->add_option("--poll", o.poll, "How often the files are checked (default 100ms)");
  add_live_flags(c.watch, o);
  c.watch->add_flag("-L,--follow", opt.follow_symlinks, "Follow symbolic links found in folders");
  c.watch->footer(
      "Stops at Ctrl-C, --exit-on, --idle-exit or --until-done, then prints the diagnosis of everything read.\n"
      "Exit codes: the final verdict's, as for diagnose (0 healthy, 1 failed, 5 degraded, 3 incomplete, "
      "4 unknown); 1 when --exit-on stopped it; 2 could not run.");

  c.run = app.add_subcommand(
      "run",
      "Run a command (firstfault run -- python3 train.py): its stdout and stderr pass through unchanged, both "
      "are watched live, and the diagnosis is printed on stderr when it exits");
  c.run->add_option("command", o.command, "The command and its arguments (after --)")->required();
  c.run->add_option("--report", o.report, "Write the diagnosis to this file instead of stderr");
  c.run->add_option("--log", o.log,
                    "Keep the command's output (stdout and stderr, line by line as they came) in this file; the "
                    "diagnosis's lines and its verify command name it. Default: a new file in "
                    "$XDG_STATE_HOME/firstfault/runs/ (0600; the newest 20 are kept)");
  c.run->add_option("--format,-f", o.format, "The diagnosis's format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  add_live_flags(c.run, o);
  c.run->footer(
      "Exit codes: the command's own (128 + N when a signal N ended it); 2 when firstfault could not "
      "start it.");

  c.history = app.add_subcommand("history", "List past diagnoses and how often their failure recurred");
  c.history->add_option("--limit,-n", o.limit, "Rows shown (default 20; 0 = all)");
  c.history->add_option("--format,-f", o.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  c.history->footer(
      "The history is $XDG_STATE_HOME/firstfault/history.db (FIRSTFAULT_HISTORY names another file).\n"
      "Exit codes: 0 listed; 2 the history cannot be read.");
  return c;
}

bool run_live_command(LiveCommands& c, const Options& opt, int& rc) {
  if (c.watch && c.watch->parsed()) {
    rc = live::run_watch(opt, c.o);
    return true;
  }
  if (c.run && c.run->parsed()) {
    rc = live::run_run(opt, c.o);
    return true;
  }
  if (c.history && c.history->parsed()) {
    rc = live::run_history(c.o);
    return true;
  }
  return false;
}

}  // namespace ff::app
