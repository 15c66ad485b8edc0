// redact/redact.h — replaces secrets and identities in text from a log (`--redact`).
//
// A Redactor is built once from the rules of kb/formats/secrets.yaml (app/redaction.cc
// reads the file into `Rules`) and applied to every string that came from a log. Tokens
// and passwords become `[REDACTED:<kind>]`; hosts, addresses, e-mail addresses and user
// names become pseudonyms numbered per distinct value (`node-03`, `192.0.2.1`, `user-2`),
// the same value getting the same pseudonym for the Redactor's whole life, so the redacted
// report still reads. All rules run on the original text; where two overlap, the earlier
// rule wins, so a replacement is never matched again.
// Thread-safety: apply() updates the pseudonym tables; one Redactor per thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace re2 {
class RE2;
}

namespace ff::redact {

enum class Replace : uint8_t { kPlaceholder, kPseudonym };

// One rule of kb/formats/secrets.yaml (the file's header says what each field means).
struct Rule {
  std::string kind;
  std::string regex;  // RE2; the group named `secret`, if any, is what is replaced
  Replace replace = Replace::kPlaceholder;
  std::string pseudonym;              // kPseudonym: e.g. "node-{n:02}"
  std::string not_after;              // characters the match may not follow ("alnum": letters, digits)
  std::string not_before;             // characters the match may not be followed by
  std::string check;                  // "hostname", "ipv4" or empty
  size_t min_length = 0;              // of the replaced part
  bool needs_digit = false;           // the replaced part holds a digit
  std::vector<std::string> examples;  // the replaced part between « and »
};

struct Rules {
  std::vector<Rule> rules;
  std::vector<std::string> keep;              // values never replaced (127.0.0.1, localhost)
  std::vector<std::string> keep_users;        // generic accounts (ubuntu): home paths kept
  std::vector<std::string> private_suffixes;  // hostname: internal from 2 labels (node5.local)
  std::vector<std::string> public_suffixes;   // hostname: from 3 labels (gpu-1.corp.example.com)
  std::vector<std::string> public_domains;    // public names kept (pytorch.org, and names under it)
};

// What was replaced, per kind, in the order the rules name the kinds.
struct KindCount {
  std::string kind;
  uint64_t count = 0;     // replacements made
  uint64_t distinct = 0;  // distinct values replaced
};

class Redactor {
 public:
  // An error names the rule whose regex does not compile (or has no use).
  static Result<Redactor> create(const Rules& rules);
  Redactor(Redactor&&) noexcept;
  Redactor& operator=(Redactor&&) noexcept;
  ~Redactor();

  // A host the diagnosis knows (a node name from the log's prefixes): replaced by its
  // pseudonym wherever it stands as a word, whatever its shape ("gpu17", "smc-gpu-03").
  // Names shorter than 2 characters, numbers and kept values are ignored.
  void add_host(std::string_view name);
  // The text with every match replaced; counts what it replaced.
  std::string apply(std::string_view text);

  std::vector<KindCount> summary() const;
  uint64_t total() const;
  // The pseudonym a value has been given ("" when it has none yet): for tests.
  std::string pseudonym_of(std::string_view kind, std::string_view value) const;

 private:
  struct Compiled;
  struct Span;
  Redactor();
  bool accept(const Compiled& c, std::string_view text, size_t m_begin, size_t m_end, size_t s_begin,
              size_t s_end) const;
  std::string replacement(const Compiled& c, const std::string& kind, std::string_view value);
  void rebuild_hosts();

  std::vector<Compiled> rules_;
  Rules data_;
  std::set<std::string, std::less<>> keep_;
  std::set<std::string, std::less<>> keep_users_;
  // Pseudonyms, per kind: value -> name; and every name given, never replaced again.
  std::map<std::string, std::map<std::string, std::string, std::less<>>, std::less<>> names_;
  std::set<std::string, std::less<>> given_;
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> seen_;  // placeholder kinds: distinct values
  std::map<std::string, uint64_t, std::less<>> counts_;
  std::vector<std::string> kinds_;  // in rule order
  std::vector<std::string> hosts_;  // add_host names
  std::unique_ptr<re2::RE2> hosts_re_;
  bool hosts_dirty_ = false;
  std::string host_pseudonym_ = "node-{n:02}";
};

// "node-{n:02}" with n = 3 -> "node-03"; "{n}" -> "3".
std::string format_pseudonym(std::string_view pattern, uint64_t n);

}  // namespace ff::redact
