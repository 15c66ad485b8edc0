// kb_check/kb_check.h — the knowledge base's self-test: every example must trigger its own
// entry and win the most-specific ranking against every other entry (the collision
// check), captures must equal the expected values, negatives must not match, and every
// prefix format sample must parse, and every pattern names its upstream source (or says
// in a source_note why not). Shared by `firstfault kb check` and the tests.
#pragma once

#include <map>
#include <string_view>
#include <string>
#include <vector>

#include "base/result.h"
#include "kb/kb.h"
#include "scan/scan.h"

namespace ff::app {

// One rule of `kb check`: how many things it looked at and how many failed it.
struct RuleCount {
  std::string name;
  size_t checked = 0;
  size_t failed = 0;
  size_t warned = 0;  // page rules broken by --kb entries (not in strict mode)
};

struct KbCheckReport {
  std::vector<RuleCount> rules;  // every rule enforced, in the order they ran
  size_t patterns = 0;
  size_t sourced = 0;  // patterns with an upstream `source:`
  size_t noted = 0;    // patterns with only a `source_note:` (not checked upstream)
  size_t examples = 0;
  std::vector<std::string> problems;       // "file:line: entry: what is wrong"
  std::vector<std::string> page_warnings;  // the page rules broken by --kb entries
};

// strict_pages: the page rules fail entries of --kb directories too (else they warn there;
// the bundled KB's entries always fail them).
KbCheckReport check_kb(const kb::KnowledgeBase& kb, const scan::Engine& engine, bool strict_pages = false);
// The page rules (kb_check.lint.cc; kb/README.md "The page"), run by check_kb.
void check_pages(const kb::KnowledgeBase& kb, KbCheckReport& rep, bool strict_pages);
// The rule names.exist (kb_check.names.cc; kb/README.md "Names that exist"): the flags, variables
// and DeepSpeed config keys an entry's fix, verify, FAQ and code examples name are in the
// embedded tables kb/names/*.tsv. Run by check_kb.
void check_names(const kb::KnowledgeBase& kb, KbCheckReport& rep, bool strict_pages);

// The entry that wins a line among all KB hits (highest priority, then longest match,
// then id); empty when nothing matches.
struct LineWinner {
  std::string entry_id;
  std::string pattern_id;  // the winning pattern of entry_id
  std::map<std::string, std::string> captures;
  std::vector<std::string> all;  // every entry that matched
};
LineWinner best_entry_for_line(const scan::Engine& engine, std::string_view message);

}  // namespace ff::app
