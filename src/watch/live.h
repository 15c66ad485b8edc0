// watch/live.h — the live commands: `firstfault watch`, `firstfault run` and
// `firstfault history` (issue 20).
//
// watch follows files and folders (watch/follow.h) and diagnoses them as they grow
// (watch/watch.h), printing each finding once as it happens; run starts a command, passes
// its stdout and stderr through unchanged and apart, watches both and prints the
// diagnosis when it exits, with the command's own exit status; history lists the
// diagnoses kept in the SQLite history (history/history.h) and how often a failure recurs.
// main.cc only registers them (add_live_commands) and dispatches (run_live_command).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace CLI {
class App;
}

namespace ff::app {

struct LiveOptions {
  std::vector<std::string> paths;    // watch: files and folders
  std::vector<std::string> command;  // run: the command and its arguments
  std::string format = "text";       // watch: text or jsonl; run: the report's (text or json)
  std::string exit_on;               // failed | degraded: stop at the first finding that bad
  std::string severity = "warning";  // the floor for printing and --on-finding
  std::string on_finding;            // a shell command run once per incident
  std::string stall_after;           // a duration; empty: learned
  std::string metrics;               // Prometheus address
  bool allow_remote = false;         // --metrics may listen on an address other than loopback
  std::string report;                // run: the diagnosis's file ("" = stderr)
  std::string log;                   // run: the file that keeps the command's output ("" = one of
                                     // its own under the state folder's runs/)
  std::string idle_exit;             // watch: stop after this long without a new byte
  bool until_done = false;           // watch: stop once the logs say the job ended
  std::string poll = "100ms";        // how often files are checked
  bool no_history = false;
  int limit = 20;  // history: rows shown
};

struct LiveCommands {
  CLI::App* watch = nullptr;
  CLI::App* run = nullptr;
  CLI::App* history = nullptr;
  LiveOptions o;
};

// Registers watch, run and history on the command line (the object lives as long as app).
LiveCommands& add_live_commands(CLI::App& app, Options& opt);
// Runs the one that was parsed, if any: true, with its exit code in rc.
bool run_live_command(LiveCommands& c, const Options& opt, int& rc);

// "90s", "5m", "1h", "250ms", "2.5" (seconds) -> milliseconds; false when it is none of these.
bool parse_duration_ms(const std::string& text, int64_t& ms);

}  // namespace ff::app
