// app/commands.h — one function per subcommand of app's own; each returns the process exit
// code. What the subcommands share with the surfaces (Options, the loaded KB and engine,
// a job diagnosed and rendered) is pipeline/pipeline.h.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "pipeline/pipeline.h"
#include "site/search_index.h"

namespace ff::app {

// `firstfault serve` (serve_command.cc; in a build without cpp-httplib, a message).
int run_serve(const Options& opt);
// `firstfault rules`: the reasoning rules of analyze, in the order they apply.
int run_rules(const Options& opt);
// What this build includes, for --version: "vectorscan, serve, --metrics", or "no serve"...
std::string build_includes();
int run_events(const Options& opt);
int run_kb_check(const Options& opt);
int run_kb_list(const Options& opt);
int run_explain(const Options& opt);
int run_search(const Options& opt);
// `search --format json`'s answer for a text ({query, total, results}, at most `limit`
// results, 0: all), shared with serve's /api/search so that both rank alike.
nlohmann::ordered_json search_json(const Loaded& loaded, const site::KeywordIndex& index, std::string_view text,
                                   size_t limit);
int run_site(const Options& opt);

}  // namespace ff::app
