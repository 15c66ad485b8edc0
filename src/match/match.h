// match/match.h — the multi-pattern matcher.
//
// All patterns of the knowledge base are compiled once into one immutable Database
// (Vectorscan when available, RE2::Set otherwise). A Scanner (one per thread, holding
// the per-thread scratch) reports which patterns match a line; captures are then read
// with RE2 only for the patterns that hit, which keeps the hot path free of RE2.
//
//   auto db = match::Database::compile(specs, {.cache_dir = "~/.cache/firstfault"});
//   match::Scanner scanner(*db.value());
//   scanner.scan(line, hits);                       // hits: pattern ids that matched
//   db.value()->captures(hits[0], line, &caps);     // named captures of one pattern
//
// Thread-safety: Database is immutable and shared; a Scanner belongs to one thread.
// Failure behaviour: a pattern that one backend rejects is reported in
// Database::rejected() and served by the RE2 fallback, so no pattern is silently lost.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace ff::match {

struct PatternSpec {
  uint32_t id = 0;    // the caller's id, reported back on hits
  std::string regex;  // RE2 syntax (named groups allowed)
};

struct CompileOptions {
  std::string cache_dir;   // where to keep the serialised database; empty = no cache
  uint64_t cache_key = 0;  // content hash of the patterns' source (the KB hash)
  bool use_vectorscan = true;
};

// A pattern a backend would not compile (the other one serves it, if it can).
struct Rejected {
  enum class Backend : uint8_t { kVectorscan, kRe2 };
  uint32_t id;
  Backend backend;
  std::string message;
  // Vectorscan's database came from the cache: the pattern was rejected, and reported,
  // when the cache was written.
  bool cached = false;
  const char* backend_name() const { return backend == Backend::kVectorscan ? "vectorscan" : "re2"; }
};

class Database {
 public:
  static Result<std::shared_ptr<const Database>> compile(const std::vector<PatternSpec>& patterns,
                                                         const CompileOptions& options = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // "vectorscan", "vectorscan (cached)" or "re2".
  const std::string& backend() const { return backend_; }
  const std::vector<Rejected>& rejected() const { return rejected_; }
  size_t size() const { return specs_.size(); }

  // Named captures of one pattern on a line it matched; returns the matched span
  // (begin, end) or false when the pattern does not match after all.
  bool captures(uint32_t id, std::string_view line, std::map<std::string, std::string>* out,
                std::pair<size_t, size_t>* span = nullptr) const;

  // Whether some pattern could match a line made of `pieces` with one number between each
  // two (digits, sign, point, exponent, or nan / inf / infinity in any case): a progress
  // line's shape. False only when none can: every match of a pattern holds the literals
  // (RE2's FilteredRE2 atoms) its regex requires, and no such set can be spelt in a line of
  // that shape. Each pattern's atoms are read from the cache (CompileOptions) or computed on
  // the first call (about a tenth of a second for the KB: callers on short inputs should
  // not ask), and then a FilteredRE2 of the few patterns some of whose atoms fit answers
  // exactly. Thread-safe.
  bool may_match_between_numbers(const std::vector<std::string_view>& pieces) const;

 private:
  friend class Scanner;
  struct Impl;
  Database();
  std::vector<PatternSpec> specs_;
  std::string backend_;
  std::vector<Rejected> rejected_;
  std::unique_ptr<Impl> impl_;
};

class Scanner {
 public:
  explicit Scanner(const Database& db);
  ~Scanner();
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;
  // Appends to `hits` the ids of the patterns matching `line` (each at most once, in
  // ascending id order).
  void scan(std::string_view line, std::vector<uint32_t>& hits);
  // Many lines in one pass (a whole chunk per call is several times faster than a call
  // per line): `text` holds the lines, each ended by '\n', and line_ends[k] is the offset
  // of line k's '\n'. Appends to `lines`, ascending, the lines that may match: every line
  // that scan() finds hits in is among them (a match spanning lines adds a few more), so
  // scanning those alone gives the same hits. Returns false, leaving `lines` alone, when
  // the database cannot do this (a pattern served by RE2, or anchored to \A or \z):
  // then scan every line.
  bool candidate_lines(std::string_view text, const std::vector<uint32_t>& line_ends, std::vector<uint32_t>& lines);
  bool joins_lines() const;  // whether candidate_lines() works with this database

 private:
  const Database& db_;
  struct State;
  std::unique_ptr<State> state_;
};

// Turns RE2 syntax into the Vectorscan dialect: named groups become plain groups.
std::string to_vectorscan_syntax(std::string_view re2_regex);

// Vectorscan 5.4.9 (Debian 12's) misses a repeated negated class that spans more than about
// 70 bytes: `X [^,]+,` finds no match in "X " + 80 letters + ",". A repeated negated class
// becomes `.` for Vectorscan (a superset on one line), and the scanner confirms such a
// pattern's hits with RE2. Returns whether it changed anything.
bool relax_negated_repeats(std::string& vectorscan_regex);

}  // namespace ff::match
