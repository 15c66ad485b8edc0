// pipeline/pipeline.h — a job's way through the engine, as every surface takes it: the
// command line's Options, the KB and engine loaded (Loaded), a job scanned, diagnosed,
// redacted and rendered. The subcommands (app), the live commands (watch), the language
// server (lsp), the schedulers, the controls and the bundle all call these, so that each
// gives the answer `diagnose` gives. Commands that do not diagnose return exit codes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "base/result.h"
#include "kb/kb.h"
#include "redact/redact.h"
#include "scan/scan.h"

namespace ff::app {

struct Options {
  std::vector<std::string> inputs;
  std::vector<std::string> kb_dirs;
  std::string format = "text";
  std::string colour = "auto";  // --color: auto, always, never
  bool verbose = false;
  bool no_cache = false;
  std::string filter_category;
  std::string filter_framework;
  std::string filter_phase;
  std::string filter_tag;
  bool list_tags = false;              // kb list --tags: the tags with how many entries use each
  bool strict_pages = false;           // kb check --strict: the page rules fail --kb entries too
  bool brief = false;                  // diagnose --brief: only the answer (verdict to verify)
  bool no_pager = false;               // diagnose --no-pager: never through $PAGER
  std::vector<std::string> entry_ids;  // explain: one page per id, in the order given
  std::vector<std::string> words;      // search: the query (words, a pasted line, or - for stdin)
  size_t limit = 10;                   // search: most results shown (0 = all)
  std::string out_dir;                 // site: where the encyclopedia is written
  std::string output;                  // diagnose -o: the report's file ("" or "-": stdout)
  std::string site_url;                // diagnose --site-url: the encyclopedia, for the html report's links
  // Where an entry is shown by a surface that has its own encyclopedia (serve: "/#entry=ID");
  // when set, it is the html report's link rather than --site-url's page.
  std::function<std::string(const std::string& id)> entry_link;
  std::vector<std::string> control;    // diff: the healthy control run; verify: the rerun (--after)
  uint64_t max_bytes = 0;              // decompressed bytes read over all inputs; 0 = io's default
  unsigned threads = 0;                // scanning threads; 0 = one per core (pipeline/perf.h)
  size_t chunk_bytes = 0;              // bytes per chunk of lines; 0 = the scan's default
  uint64_t map_min = 0;                // hidden --map-min: map files this large at once (tests); 0 = the default
  bool no_progress = false;
  bool follow_symlinks = false;  // -L/--follow: follow symbolic links found in folders
  bool no_redact = false;        // bundle --no-redact: keep the text as logged
  bool redact = false;           // --redact: secrets and identities in log text replaced (pipeline/redaction.h)
  std::string only_host;         // --host: only this host's lines (syslog, journald, any prefix naming a node)
  std::string only_unit;         // --unit: only this unit's or program's lines
  // serve
  std::string bind = "127.0.0.1";
  int port = 8765;
  bool open_browser = false;  // --open
  bool allow_remote = false;  // --allow-remote: a --bind address other than loopback
  uint64_t max_upload = 8ull << 30;
  unsigned jobs = 0;        // diagnoses at once; 0: one per core (at least 2)
  unsigned queue = 64;      // diagnoses waiting behind them
  int read_timeout = 10;    // seconds a client may stay silent
  bool no_history = false;  // --no-history (or FIRSTFAULT_NO_HISTORY=1): keep no history (history/history.h)
};

// A job's diagnosis, as `diagnose` prints it (redacted when opt.redact; input problems
// said on stderr). 0, or 2 when it could not run (said on stderr).
struct DiagnosedJob {
  analyze::Diagnosis d;
  std::optional<redact::Redactor> redactor;
  bool nothing_read = false;        // no input could be read
  std::vector<Error> input_errors;  // what could not be read (also in the verdict's reasons)
};
int diagnose_job(const Options& opt, DiagnosedJob& job);

// The same with the KB and engine already loaded and the reading left to `scan_fn` (named
// inputs, or an upload's streams in serve); `names` are the inputs as the verify command
// names them. The input errors are kept in job.input_errors, not printed. False when
// --redact could not start (said on stderr).
struct Loaded {
  std::unique_ptr<kb::KnowledgeBase> kb;
  std::shared_ptr<const scan::Engine> engine;
  std::vector<Error> kb_errors;
};

// kDiagnosis: only the entry fields a diagnosis reads (kb::LoadOptions::page_fields), for
// the commands that diagnose, which must start fast.
enum class KbFields { kAll, kDiagnosis };
Result<Loaded> load_everything(const Options& opt, bool quiet_kb_errors, KbFields fields = KbFields::kAll);

// The scan's per-source statistics as the analysis sees them.
std::vector<analyze::SourceSummary> summarise_sources(const scan::JobStats& stats);

// Rewrites the commands the analysis suggests with a log's text in them (the search for an
// unrecognised message) so that the text is one shell word (base::shell_quote): pasted
// into a shell, a hostile line runs nothing (issue 14).
void quote_suggested_commands(analyze::Diagnosis& d);

// load_everything with its failure said on stderr: nullopt then, and the
// command exits 2.
std::optional<Loaded> load_or_say(const Options& opt, bool quiet_kb_errors, KbFields fields);

using ScanFn = std::function<scan::JobStats(const scan::Engine&, scan::EventSink&)>;
bool diagnose_loaded(const Loaded& loaded, const Options& opt, const ScanFn& scan_fn,
                     const std::vector<std::string>& names, DiagnosedJob& job);

// The second half of diagnose_loaded: the diagnosis of events already scanned (watch's
// live analyses, watch/live.session.cc), with the same rules, commands and redaction.
bool diagnose_events(const Loaded& loaded, const Options& opt, const std::vector<record::Event>& events,
                     const scan::JobStats& stats, const std::vector<std::string>& names, DiagnosedJob& job);

// --color: always, never, or auto: colour when the output is a terminal (`tty`) and
// NO_COLOR is not set (no-color.org).
bool use_colour(const Options& opt, bool tty);

// Writes a file the user named (-o) whole or not at all; the problem, or "" when written.
// Its mode is `mode` less the umask (the epilog gives a diagnosis its output's mode).
// A path that is a character device or a pipe (`-o /dev/null`, `-o >(gzip > r.gz)`, through
// links too) is written into, as a shell's `>` would, when `into_device`: the atomic rename
// would replace the device node itself (as root, /dev/null became a regular file). A block
// device is refused. The epilog, which writes into a user's folder as root, passes false:
// whatever the user planted there is replaced, never written through.
std::string write_output_file(const std::string& path, std::string_view bytes, mode_t mode = 0666,
                              bool into_device = true);

// A diagnosed job as `diagnose --format json|html|markdown|vimgrep|sarif` prints it
// (redacted when the job has a redactor); mark_nothing_read gives the answer for a job of which nothing was read.
std::string render_report(DiagnosedJob& job, const std::string& format, const Options& opt);
void mark_nothing_read(analyze::Diagnosis& d);

int run_diagnose(const Options& opt);
// What run_diagnose prints for a diagnosed job (opt.format, opt.output); its exit code.
int print_diagnosis(DiagnosedJob& job, const Options& opt);
// Where the KB and compiled-database caches live ("" with --no-cache or no home).
std::string cache_dir(const Options& opt);
// The scan's options from the command line (threads, limits, --host/--unit, progress).
scan::ScanOptions scan_options(const Options& opt);
// Each error on stderr as "firstfault: WHAT: error".
void print_errors(const std::vector<Error>& errors, const char* what);

}  // namespace ff::app
