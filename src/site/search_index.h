// site/search_index.h — keyword relevance over the knowledge base (BM25), shared by
// `firstfault search` and the encyclopedia's client-side search.
//
// The index is built here, in C++, from each entry's id, title, tags, summary, symptoms and
// the literal text of its patterns (each field with a weight), and the synonyms of
// kb/formats/search.yaml (SearchData). The static site ships the
// built index (postings with integer weighted term frequencies, document lengths, k1, b)
// as data, and assets/search.js re-implements only tokenize() and score(), so the browser
// ranks exactly as the command line does. Change tokenize() here and in search.js together
// (the site test compares the two rankings).
//
//   site::KeywordIndex index(kb);
//   for (const auto& hit : index.search("nccl watchdog timeout")) ...kb.entries[hit.entry]...
//
// Thread-safety: immutable after construction; search() is const and may run concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "kb/kb.h"

namespace ff::site {

// Lower-cased ASCII alphanumeric runs; every other byte (punctuation, spaces, non-ASCII)
// separates. Runs shorter than 2, stop words, and numbers longer than 4 digits are dropped;
// a plural "s" is stripped from words longer than 3 ("timeouts" -> "timeout", not "loss").
std::vector<std::string> tokenize(std::string_view text);

// A keyword hit's snippet, as the site's search.js makes it (keywordSnippet): the sentence
// of `text` (an entry's quick answer) holding most of `terms` (the first sentence when none
// does), cut to about 170 bytes around the first term it holds, with an ellipsis where cut.
std::string keyword_snippet(std::string_view text, const std::vector<std::string>& terms);

// The literal text runs of an RE2 regex, for keyword search: "CUDA out of memory\. Tried"
// yields "CUDA out of memory. Tried"; classes, groups and escapes like \d separate runs.
std::vector<std::string> regex_literals(std::string_view regex);

// Field weights: a term in the id, title or tags counts three times, in pattern literals
// twice, in the summary or symptoms once.
inline constexpr int kWeightId = 3;
inline constexpr int kWeightTitle = 3;
inline constexpr int kWeightTags = 3;
inline constexpr int kWeightLiterals = 2;
inline constexpr int kWeightSummary = 1;
inline constexpr int kWeightSymptoms = 1;
inline constexpr double kBm25K1 = 1.2;
inline constexpr double kBm25B = 0.75;

// The search's own data, kb/formats/search.yaml: the words people type for what the
// entries say in other words, and a weight per severity.
//   synonyms: {oom: [out of memory, OutOfMemoryError]}   an entry whose indexed text holds
//       a phrase counts as holding the word there too (same field weight), so "oom" finds
//       "CUDA out of memory"; phrases match whole tokens in order (after tokenize()).
//   severity_weight: {warning: 0.85}                       the score is multiplied by it
//       (default 1): a warning that merely mentions "hang" ranks below the fatal hang.
//   linked_weight: 0.1                                      the score is multiplied by
//       1 + w * ln(1 + n), n = the entries that name this one in `related` or `lookalikes`:
//       the failure other pages point to is the one a short word usually means.
struct SearchData {
  struct Synonym {
    std::string term;                               // one token, as tokenize() makes it
    std::vector<std::vector<std::string>> phrases;  // each tokenized
  };
  std::vector<Synonym> synonyms;
  std::map<std::string, double> severity_weight;
  double linked_weight = 0;
};
// Fails (kFormat) on YAML that is not of that shape, naming the key.
Result<SearchData> parse_search_data(std::string_view yaml);
// The embedded kb/formats/search.yaml, parsed once (empty when it is absent or does not
// parse: the site test checks that it does). A --kb directory's formats/search.yaml is
// not read: the search data is the build's.
const SearchData& builtin_search_data();

class KeywordIndex {
 public:
  explicit KeywordIndex(const kb::KnowledgeBase& kb, const SearchData& data = builtin_search_data());

  struct Hit {
    size_t entry = 0;  // index into kb.entries
    double score = 0;  // BM25 times the entry's weight (SearchData), rounded to 1e-6 (so C++ and JS agree on ties)
    std::vector<std::string> terms;  // the query terms that matched, best contribution first
  };
  // Every entry with a positive score, best first; ties by entry id.
  std::vector<Hit> search(std::string_view query) const;

  // The relevance cut-off: a keyword hit scoring under this fraction of the best keyword
  // hit is a weak match, counted but not listed by default (the site's search and serve's
  // page show the good matches and say how many more). Shipped to search.js in to_json.
  static constexpr double kRelevant = 0.4;
  // How many of `scores` (best first) are good matches by kRelevant.
  static size_t relevant(const std::vector<double>& scores);

  // The index as data for the static site: {k1, b, n, len: [...], boost: [...], post: {term: [doc, tf, ...]}}.
  nlohmann::ordered_json to_json() const;

 private:
  std::vector<std::string> ids_;
  std::vector<uint32_t> len_;                                                   // weighted document length
  std::vector<double> boost_;                                                   // severity and link weight per document
  std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> postings_;  // term -> (doc, tf)
  double avgdl_ = 0;
};

}  // namespace ff::site
