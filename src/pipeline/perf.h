// pipeline/perf.h — the scan's speed knobs on the command line (--threads, --no-progress),
// the progress bar on stderr, and `firstfault kb literals`.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "pipeline/pipeline.h"
#include "kb/kb.h"

namespace ff::app {

// Adds --threads, --no-progress (and the hidden --chunk-size) to diagnose/events.
void add_scan_flags(CLI::App* cmd, Options& opt);

// Adds -L/--follow (follow symbolic links found in folders) to a command that reads logs.
void add_follow_flag(CLI::App* cmd, Options& opt);

// A progress bar for the scan, drawn on stderr when it is a terminal and the inputs are
// over ~100 MB (and not --no-progress); empty otherwise. It erases itself when the last
// copy of the function is destroyed.
std::function<void(uint64_t)> make_progress_bar(const Options& opt);

// The literal text of a pattern: the literal when the pattern is one, else the longest
// run of literal characters of its regex (what must appear in any line it matches, as
// far as a run outside alternations and optional parts goes). Empty when none.
std::string pattern_literal(const kb::Pattern& p);

// `firstfault kb literals`: pattern_literal() of every pattern, one per line, for
// `rg -F -f` / `grep -F -f` comparisons (bench/run.sh).
int run_kb_literals(const Options& opt);

}  // namespace ff::app
