// app/commands.h — one function per subcommand; each returns the process exit code.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "redact/redact.h"

namespace ff::app {

struct Options {
  std::vector<std::string> inputs;
  std::vector<std::string> kb_dirs;
  std::string format = "text";
  std::string color = "auto";
  bool verbose = false;
  bool no_cache = false;
  std::string filter_category;
  std::string filter_framework;
  std::string filter_phase;
  std::string filter_tag;
  std::string entry_id;
  std::vector<std::string> words;  // search: the query (words, a pasted line, or - for stdin)
  size_t limit = 10;               // search: most results shown (0 = all)
  std::string out_dir;             // site: where the encyclopedia is written
  std::string output;              // diagnose -o: the report's file ("" or "-": stdout)
  std::string site_url;            // diagnose --site-url: the encyclopedia, for the html report's links
  std::vector<std::string> control;  // diff: the healthy control run; verify: the rerun (--after)
  uint64_t max_bytes = 0;  // decompressed bytes read over all inputs; 0 = io's default
  unsigned threads = 0;    // scanning threads; 0 = one per core (app/perf.h)
  size_t chunk_bytes = 0;  // bytes per chunk of lines; 0 = the scan's default
  uint64_t map_min = 0;    // hidden --map-min: map files this large at once (tests); 0 = the default
  bool no_progress = false;
  bool follow_symlinks = false;  // -L/--follow: follow symbolic links found in folders
  bool no_redact = false;        // bundle --no-redact: keep the text as logged
  bool redact = false;           // --redact: secrets and identities in log text replaced (app/redaction.h)
};

// A job's diagnosis, as `diagnose` prints it (redacted when opt.redact; input problems
// said on stderr). 0, or 2 when it could not run (said on stderr).
struct DiagnosedJob {
  analyze::Diagnosis d;
  std::optional<redact::Redactor> redactor;
  bool nothing_read = false;  // no input could be read
};
int diagnose_job(const Options& opt, DiagnosedJob& job);

// Writes a file the user named (-o) whole or not at all; the problem, or "" when written.
std::string write_output_file(const std::string& path, std::string_view bytes);

int run_diagnose(const Options& opt);
// The diagnosis of an in-memory text as one source named `name` (the language server's
// buffers, app/lsp.cc), made as diagnose_job makes it; nullopt when *cancel was set
// meanwhile (the scan stops at its next chunk). `loaded` comes from load_everything.
struct Loaded;
std::optional<analyze::Diagnosis> diagnose_text(const Loaded& loaded, const std::string& name, std::string_view text,
                                                const std::atomic<bool>* cancel = nullptr);
// `firstfault bundle JOB... -o evidence.tar.gz` (bundle.cc).
int run_bundle(const Options& opt);
// `firstfault rules`: the reasoning rules of analyze, in the order they apply.
int run_rules(const Options& opt);
int run_events(const Options& opt);
int run_kb_check(const Options& opt);
int run_kb_list(const Options& opt);
int run_explain(const Options& opt);
int run_search(const Options& opt);
int run_site(const Options& opt);

}  // namespace ff::app
