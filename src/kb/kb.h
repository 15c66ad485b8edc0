// kb/kb.h — the knowledge-base model and its loader.
//
// The knowledge base is data (YAML files under kb/, embedded in the binary at build
// time). load() parses and validates every file and returns a KnowledgeBase value plus
// the list of problems found: a bad entry is reported with its file, line and field and
// left out, and the other entries still load.
//
//   kb::LoadResult r = kb::load(kb::embedded_files(), {"my-kb/"});
//   for (const Error& e : r.errors) report(e);
//   const kb::Entry* e = r.kb.find("pytorch.cuda.out-of-memory");
//
// Thread-safety: a KnowledgeBase is immutable after load and may be shared freely.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"

namespace ff::kb {

// What a pattern's line means to the reasoning (kb/README.md). kCompletion: the run
// reached its end (a framework's own completion line); positive evidence for `healthy`.
enum class Role { kRoot, kCollateral, kSymptom, kContext, kCompletion };
const char* role_name(Role role);

// How strongly a pattern's line claims to be the job's first failure, best first
// (`precedence:` in an entry; analyze orders candidate incidents by it before time).
//   hardware    a host hard fault (Xid, ECC, fallen off the bus): outranks everything
//   root        a recognised failure on a rank's own lines
//   weak        a failure that is usually a consequence (timeouts, generic OS errors)
//   collateral  the effect of a failure elsewhere (peer lost, watchdog timeout)
//   none        never a failure by itself (symptoms, context, completion)
// Default: root for role root, collateral for role collateral, none otherwise.
enum class Precedence { kHardware, kRoot, kWeak, kCollateral, kNone };
const char* precedence_name(Precedence p);

// The 14 stable categories (kb/README.md, `category`; an entry may also be `healthy`) and
// the lifecycle phases.
const std::vector<std::string>& categories();
const std::vector<std::string>& phases();

// Where a pattern's text is produced upstream (`source:` of a pattern, kb/README.md): a
// repository with a commit or release tag, the path and line there, or a documentation
// page; and the versions that print this wording when it changed (`since`, `until`).
struct Source {
  std::string repo;   // "NVIDIA/nccl"
  std::string ref;    // the tag or commit that was read ("v2.18.3-1")
  std::string path;   // "src/misc/shmutils.cc"
  int line = 0;       // 0: not given
  std::string url;    // a documentation page (instead of repo and path)
  std::string since;  // first version that prints this wording, when known
  std::string until;  // last version that prints it, when it changed later

  bool operator==(const Source&) const = default;
};

struct Pattern {
  std::string id;  // unique inside its entry
  Role role = Role::kRoot;
  std::string regex;    // RE2 syntax; literals are stored escaped here
  std::string literal;  // the literal text when the pattern was given as `literal`
  int priority = 0;     // breaks ties between entries matching one line
  Precedence precedence = Precedence::kRoot;
  int line = 0;  // line in the YAML file, for messages
  // Provenance: where upstream prints this text, or (source_note) why that is not given,
  // e.g. "not yet checked against upstream". `kb check` wants one of the two.
  std::vector<Source> sources;
  std::string source_note;

  bool operator==(const Pattern&) const = default;
};

struct Example {
  std::string text;
  std::map<std::string, std::string> captures;
  int line = 0;

  bool operator==(const Example&) const = default;
};

struct Symptom {
  std::string symptom;
  std::string why;

  bool operator==(const Symptom&) const = default;
};

struct Reference {
  std::string url;
  std::string note;

  bool operator==(const Reference&) const = default;
};

// An entry that looks like this one, and the observation that tells them apart.
struct Lookalike {
  std::string id;
  std::string how_to_tell;

  bool operator==(const Lookalike&) const = default;
};

// The questions every encyclopedia page answers for its entry (kb/README.md, "The page").
struct Faq {
  std::string hardware_or_software;
  std::string fix_time;
  std::string inference;  // does it affect inference too
  std::string cheapest_confirm;
  std::string scale;            // how it changes from 1 GPU to 1,000
  std::string monitor;          // the fingerprint to alert on
  std::vector<Reference> docs;  // the official documentation

  bool empty() const {
    return hardware_or_software.empty() && fix_time.empty() && inference.empty() && cheapest_confirm.empty() &&
           scale.empty() && monitor.empty() && docs.empty();
  }
  bool operator==(const Faq&) const = default;
};

struct Entry {
  std::string id;
  std::string title;
  std::string category;
  std::string severity;
  bool wrapper = false;  // its message wraps another failure: the cause in its incident names it
  // The entry that names this entry's line when it comes after the run reported its
  // completion (a teardown after "training complete" is a hang at exit); empty: none.
  std::string after_completion;
  std::string phase;
  std::vector<std::string> frameworks;
  std::vector<std::string> tags;
  std::string summary;                // the quick answer
  std::string mechanism;              // what happens inside the software, step by step
  std::vector<std::string> affected;  // systems and versions ("PyTorch >= 2.1", "NCCL 2.18+ with IB")
  std::vector<std::string> confirm;   // checklist: how to confirm this is the problem
  std::string transience;             // "terminal", "transient" or "depends" (empty: not applicable)
  std::vector<Lookalike> lookalikes;
  std::vector<Pattern> patterns;
  std::vector<Symptom> symptoms;
  std::string root_cause;
  std::vector<std::string> fix;
  std::string verify;               // the command that checks the post-fix state
  std::string verify_where;         // "shell", "rerun" or "in-process" (empty: a plain-string verify)
  std::string verify_expect;        // what its output shows when the fix worked
  std::string transience_recovers;  // transience_rule.recovers: when it goes away by itself
  std::string transience_stop;      // transience_rule.stop: when to stop the run
  Faq faq;
  std::vector<std::string> prevention;
  std::vector<std::string> related;
  std::vector<Reference> references;
  std::map<std::string, std::string> code_examples;
  std::map<std::string, std::string> code_examples_note;  // framework -> why no example applies
  std::vector<Example> examples;
  std::vector<std::string> negatives;
  std::string file;  // where it was loaded from (kb-relative for embedded files)

  bool operator==(const Entry&) const = default;
};

// A line prefix that is peeled off before matching (kb/formats/prefixes.yaml).
struct PrefixFormat {
  std::string id;
  std::string regex;        // anchored at the current position; named captures below
  bool consume = true;      // false: read the captures but leave the text in place
  std::string time_format;  // how to read the `time` capture: iso, glog, syslog, dmesg, hms, mdhms
  // Tolerant framing (prefixes.yaml): `glued`, a prefix that may also start inside a line,
  // right after another writer's unfinished output; for a `glue:` residue, `end` is the
  // literal its text ends with, where the message starts.
  bool glued = false;
  std::string end;
  // `rank_wins`: the rank this format captures replaces one an outer prefix of the same
  // line gave (PyTorch's own "[rank12]:" is the global rank; torchrun's "[default0]:"
  // before it is only the worker's index on its node).
  bool rank_wins = false;
  std::vector<std::string> samples;
  int line = 0;

  bool operator==(const PrefixFormat&) const = default;
};

// Guessing a category for an exception no entry recognises (kb/formats/exceptions.yaml).
struct ExceptionRule {
  std::string type;  // exception class name, last dotted component ("OSError")
  std::string category;

  bool operator==(const ExceptionRule&) const = default;
};

// Guessing a category from where an unrecognised exception was raised: the innermost
// traceback frame's path contains `path` (kb/formats/exceptions.yaml, `frames:`).
struct FrameRule {
  std::string path;
  std::string category;

  bool operator==(const FrameRule&) const = default;
};

// A metric the progress-line parser knows (kb/formats/metrics.yaml): its canonical
// name, the keys that name it ("lm loss") and units that imply it ("ms/step").
struct MetricUnit {
  std::string unit;
  double scale = 1.0;  // multiply the value by this to get the canonical unit

  bool operator==(const MetricUnit&) const = default;
};
struct MetricSpec {
  std::string name;
  std::vector<std::string> keys;
  // Keys of a message that reports one event of the metric ("reducing loss scale to":
  // an fp16 overflow that skipped a step): a line with one is read without a step or a loss.
  std::vector<std::string> event_keys;
  std::vector<MetricUnit> units;
  // The metric is the total after another metric's slash ("step 16/80": total_of step):
  // how far the run means to go, so a log that stops short of it is incomplete.
  std::string total_of;

  bool operator==(const MetricSpec&) const = default;
};

// The data of `kb check`'s page rules (kb/formats/lint.yaml, kb/formats/tags.yaml).
struct LintData {
  std::vector<std::string> commands;                 // programs a shell/rerun verify may start with
  std::vector<std::string> per_process_state;        // calls only the training process can answer
  std::vector<std::string> configurable_frameworks;  // an entry naming one shows its config
  std::vector<std::string> code_example_kinds;
  std::map<std::string, std::string> default_branches;  // owner/name -> branch
  std::map<std::string, std::string> tag_singletons;    // tag -> why only one entry has it

  bool operator==(const LintData&) const = default;
};

struct KnowledgeBase {
  std::vector<Entry> entries;
  LintData lint;
  std::vector<PrefixFormat> prefixes;
  std::vector<PrefixFormat> source_names;  // formats over source names (kb/formats/sources.yaml)
  // Residue a message may be glued to, in front of it on its line (a progress bar's end):
  // kb/formats/prefixes.yaml `glue:`.
  std::vector<PrefixFormat> glue;
  // Lines that say which rank wrote them (NCCL's topology lines, with the host:pid prefix)
  // and lines that name the rank of the traceback right below them (torch.multiprocessing's
  // "-- Process N terminated with the following error:"): prefixes.yaml `identity:` and
  // `rank_headers:`, each regex with a `rank` capture.
  std::vector<PrefixFormat> identity;
  std::vector<PrefixFormat> rank_headers;
  std::vector<ExceptionRule> exceptions;
  std::vector<FrameRule> frames;
  std::vector<MetricSpec> metric_specs;
  std::string exception_default_category = "model-code";
  // Exception types that are a reaction, not a failure of their own (the launcher's
  // ChildFailedError, KeyboardInterrupt, SystemExit): kb/formats/exceptions.yaml `teardown`.
  std::vector<std::string> teardown_exceptions;
  // Substrings of a traceback frame's path that mark library code (formats/exceptions.yaml
  // `library_frames`): the innermost frame without one is the user's.
  std::vector<std::string> library_frames;
  uint64_t hash = 0;  // content hash of every file loaded; keys the compiled-db cache

  const Entry* find(std::string_view id) const;
  bool operator==(const KnowledgeBase&) const = default;

 private:
  friend struct Loader;
  std::unordered_map<std::string, size_t> by_id_;
};

struct File {
  std::string path;  // for messages; kb-relative for embedded files
  std::string content;
  // The embedded KB's regexes are checked by the test suite at build time; skipping the
  // RE2 syntax check at start-up saves most of the load time. Files from --kb are not
  // trusted. (A bad regex would still be reported by the matcher when it compiles.)
  bool trusted = false;
};

struct LoadResult {
  KnowledgeBase kb;
  std::vector<Error> errors;
};

struct LoadOptions {
  // Where to keep the parsed model (keyed by a hash of every file); empty = no cache.
  std::string cache_dir;
  // False: the fields of an entry that only its encyclopedia page and the kb commands read
  // are left empty (phase, frameworks, tags, mechanism, affected, confirm, transience,
  // lookalikes, prevention, related, code_examples, examples, negatives). A diagnosis
  // reads none of them, and they are 40% of what a start would decode from the cache.
  bool page_fields = true;
};

// Loads the given files, then every *.yaml under each override directory; an entry
// whose id already exists replaces the earlier one. Files under a "formats/" folder
// are line formats; all others are entries.
LoadResult load(const std::vector<File>& files, const std::vector<std::string>& override_dirs = {},
                const LoadOptions& options = {});
// load(embedded_files(), ...) as the CLI starts it: the cache key takes the embedded
// files' hash from the build, and the files are only read when the cache has no model.
LoadResult load_embedded(const std::vector<std::string>& override_dirs = {}, const LoadOptions& options = {});

// The knowledge base compiled into the binary (generated at build time from kb/).
const std::vector<File>& embedded_files();
// A hash of every embedded file's path and content, computed at build time.
uint64_t embedded_files_hash();

}  // namespace ff::kb
