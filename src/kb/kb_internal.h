// kb/kb_internal.h — what the files of kb share and nobody else needs.
//
//   kb.model.cc    the model's names and lists (roles, precedence, categories, phases),
//                  the id index (Loader)
//   kb.load.cc     load(): the files (embedded, --kb folders), the hash, the cache or a
//                  parse, one file at a time (load_file), the regex check
//   kb.entry.cc    one entry's YAML into an Entry, with located errors (parse_entry)
//   kb.formats.cc  a formats file's YAML into the KnowledgeBase (parse_formats)
//   kb.cache.cc    the parsed model in a checked binary file (read_cache, write_cache)
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strings.h"
#include "kb/kb.h"

namespace ff::kb {

// The one way into KnowledgeBase's id index (kb.model.cc).
struct Loader {
  static void index(KnowledgeBase& kb);
  // Adds an entry; an entry with the same id already there is replaced (an override).
  static void add(KnowledgeBase& kb, Entry e);
};

inline bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Collects the errors of one file; every check adds a located message and carries on.
struct FileChecker {
  const std::string& path;
  std::vector<Error>& errors;
  bool failed = false;

  void fail(const YAML::Node& at, const std::string& field, const std::string& message) {
    int line = at.IsDefined() ? at.Mark().line + 1 : 0;
    errors.push_back(make_error(ErrorCode::kInvalidKb, message, {path, line > 0 ? line : 0, field}));
    failed = true;
  }

  // Every key of `map` must be one the schema knows: an unknown one is an error with its
  // file and line, and the rest of the entry is still read (a typo loses nothing else).
  // A key with no value in a flow map is almost always a value YAML split at a comma
  // ({url: U, note: a, b} is note "a" and a key "b"): the message says to quote it.
  void known_keys(const YAML::Node& map, const std::string& field, std::initializer_list<std::string_view> allowed) {
    if (!map.IsMap()) return;
    for (const auto& kv : map) {
      const std::string k = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), std::string_view(k)) != allowed.end()) continue;
      std::string known;
      for (std::string_view a : allowed) known += (known.empty() ? "" : ", ") + std::string(a);
      std::string message = "unknown field '" + k + "' (known: " + known + ")";
      if (map.Style() == YAML::EmitterStyle::Flow && (!kv.second || kv.second.IsNull()))
        message += "; in a {...} map a comma ends a value: quote the value before it";
      const int line = kv.first.Mark().line + 1;
      errors.push_back(
          make_error(ErrorCode::kInvalidKb, message, {path, line > 0 ? line : 0, field.empty() ? k : field + "." + k}));
    }
  }

  std::string str(const YAML::Node& map, const char* key, bool required) {
    YAML::Node n = map[key];
    if (!n || n.IsNull()) {
      if (required) fail(map, key, "missing required field");
      return {};
    }
    if (!n.IsScalar()) {
      fail(n, key, "must be a string");
      return {};
    }
    std::string v = n.as<std::string>();
    if (required && trim(v).empty()) fail(n, key, "must not be empty");
    return v;
  }

  std::vector<std::string> list(const YAML::Node& map, const char* key, bool required) {
    std::vector<std::string> out;
    YAML::Node n = map[key];
    if (!n || n.IsNull()) {
      if (required) fail(map, key, "missing required field");
      return out;
    }
    if (!n.IsSequence()) {
      fail(n, key, "must be a list");
      return out;
    }
    for (size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar()) {
        fail(n[i], std::string(key) + "[" + std::to_string(i) + "]", "must be a string");
        continue;
      }
      out.push_back(n[i].as<std::string>());
    }
    if (required && out.empty()) fail(n, key, "must not be empty");
    return out;
  }
};

// Checks that a regex is in the subset both RE2 and Vectorscan accept; the problem, or ""
// (kb.load.cc).
std::string check_regex(const std::string& rx);

// One entry file's document (kb.entry.cc). `ok` is false when anything in it was wrong
// (each problem is in `errors`); `trusted` skips the regex check (File::trusted).
Entry parse_entry(const YAML::Node& doc, const std::string& path, std::vector<Error>& errors, bool& ok, bool trusted);

// One formats file's document, merged into kb (kb.formats.cc): what has the id (or type,
// path, name) of something already there replaces it.
void parse_formats(const YAML::Node& doc, const std::string& path, KnowledgeBase& kb, std::vector<Error>& errors);

// ---- the parsed-KB cache (kb.cache.cc)

// Part of the cache's key (load() hashes it first) and checked in the file.
// 6: checksums of the two sections after the key; 7: precedence, teardown exceptions,
// total_of and the completion role; 8: library_frames; 9: a pattern's sources and source_note;
// 10: the page (verify's where and expect, transience_rule, faq, code_examples_note) and lint data;
// 11: a metric's event_keys; tolerant framing (a prefix format's glued and end, the glue
// residues), identity lines and rank headers; 12: an entry's wrapper flag; 14: a prefix
// format's rank_wins, an entry's after_completion; 15: verify's where and expect are read by
// a diagnosis (the report says where the command runs), no longer page fields.
inline constexpr const char* kCacheVersion = "kbcache-15";

// The cached model and its files' errors, or false when the file is missing, damaged,
// short, or of another version or key; `with_pages` decodes the page fields too.
bool read_cache(const std::string& path, uint64_t hash, bool with_pages, KnowledgeBase& kb, std::vector<Error>& errors);
// Writes the model and the errors of its files (atomically), and prunes old cache files.
void write_cache(const std::string& dir, const std::string& path, uint64_t hash, const KnowledgeBase& kb,
                 const std::vector<Error>& errors);
// Empties the fields of an entry that only its page reads (LoadOptions::page_fields).
void clear_page_fields(Entry& e);

}  // namespace ff::kb
