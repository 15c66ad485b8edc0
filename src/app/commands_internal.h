// app/commands_internal.h — what the subcommands' files (commands*.cc) share and the rest
// of app does not need.
#pragma once

#include <string>
#include <vector>

#include "app/commands.h"
#include "base/result.h"
#include "scan/scan.h"

namespace ff::app {

// Where the KB and compiled-database caches live ("" with --no-cache or no home).
std::string cache_dir(const Options& opt);
// The scan's options from the command line (threads, limits, --host/--unit, progress).
scan::ScanOptions scan_options(const Options& opt);
// Each error on stderr as "firstfault: WHAT: error".
void print_errors(const std::vector<Error>& errors, const char* what);

}  // namespace ff::app
