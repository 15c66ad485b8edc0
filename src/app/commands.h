// app/commands.h — one function per subcommand; each returns the process exit code.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/diagnosis.h"
#include "redact/redact.h"
#include "scan/scan.h"
#include "site/search_index.h"

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
  std::vector<std::string> control;    // diff: the healthy control run; verify: the rerun (--after)
  uint64_t max_bytes = 0;              // decompressed bytes read over all inputs; 0 = io's default
  unsigned threads = 0;                // scanning threads; 0 = one per core (app/perf.h)
  size_t chunk_bytes = 0;              // bytes per chunk of lines; 0 = the scan's default
  uint64_t map_min = 0;                // hidden --map-min: map files this large at once (tests); 0 = the default
  bool no_progress = false;
  bool follow_symlinks = false;  // -L/--follow: follow symbolic links found in folders
  bool no_redact = false;        // bundle --no-redact: keep the text as logged
  bool redact = false;           // --redact: secrets and identities in log text replaced (app/redaction.h)
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
  bool no_history = false;  // --no-history (or FIRSTFAULT_NO_HISTORY=1): keep no history (app/history.h)
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
struct Loaded;
enum class KbFields;
// load_everything (app/kb_check.h) with its failure said on stderr: nullopt then, and the
// command exits 2.
std::optional<Loaded> load_or_say(const Options& opt, bool quiet_kb_errors, KbFields fields);

using ScanFn = std::function<scan::JobStats(const scan::Engine&, scan::EventSink&)>;
bool diagnose_loaded(const Loaded& loaded, const Options& opt, const ScanFn& scan_fn,
                     const std::vector<std::string>& names, DiagnosedJob& job);

// The second half of diagnose_loaded: the diagnosis of events already scanned (watch's
// live analyses, app/watch.live.cc), with the same rules, commands and redaction.
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
// `firstfault serve` (serve_command.cc; in a build without cpp-httplib, a message).
int run_serve(const Options& opt);
// `firstfault bundle JOB... -o evidence.tar.gz` (bundle.cc).
int run_bundle(const Options& opt);
// `firstfault rules`: the reasoning rules of analyze, in the order they apply.
int run_rules(const Options& opt);
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
