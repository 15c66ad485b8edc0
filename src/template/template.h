// template/template.h — log templates: the same line with different numbers is one
// template ("step <N> | loss <N>"), so 1,024 ranks or 100,000 steps collapse to one.
//
// mask() replaces the variable parts of a line (numbers, hex, paths, IPs, quoted
// values, timestamps) with placeholders. TemplateMiner groups masked lines Drain-style:
// lines with the same token count and first token are compared token by token, and a
// line within the similarity threshold of a known template joins it (differing tokens
// become <*>). Memory is bounded by a cap on templates; lines beyond it count in an
// overflow bucket.
//
//   template_::TemplateMiner miner;
//   uint32_t id = miner.add(message, {source, line});
//   for (const auto& t : miner.templates()) ...   // text, count, first occurrence
//
// Thread-safety: a miner belongs to one thread. mask() and fingerprint() are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ff::template_ {

// The line with its variable parts replaced: digits runs -> <N>, hex/addresses -> <HEX>,
// paths -> <PATH>, IP:port -> <IP>, 'quoted' / "quoted" -> <STR>. Whitespace collapsed.
std::string mask(std::string_view line);

// A stable 16-hex-digit fingerprint of a failure: its KB id and the masked decisive line,
// so the same failure on another rank, at another time or with other sizes is the same.
std::string fingerprint(std::string_view id, std::string_view decisive_text);

struct Where {
  uint32_t source = 0;
  uint64_t line = 0;
};

struct Template {
  uint32_t id = 0;
  std::string text;  // tokens joined by ' ', variable tokens as <*>/<N>/...
  uint64_t count = 0;
  Where first;
  std::string first_text;  // the first line as written (capped)
};

class TemplateMiner {
 public:
  struct Options {
    double similarity = 0.6;  // share of equal tokens to join a template
    size_t max_templates = 20000;
    size_t max_bucket = 64;  // templates compared per (length, first token) bucket
  };
  TemplateMiner();
  explicit TemplateMiner(Options options);
  // Returns the template id, or kOverflow when the cap is reached and the line is new.
  uint32_t add(std::string_view line, Where where);
  const std::vector<Template>& templates() const { return templates_; }
  uint64_t lines() const { return lines_; }
  uint64_t overflow() const { return overflow_; }
  static constexpr uint32_t kOverflow = UINT32_MAX;

 private:
  Options opt_;
  std::vector<Template> templates_;
  std::vector<std::vector<std::string>> tokens_;                    // per template
  std::unordered_map<std::string, std::vector<uint32_t>> buckets_;  // "len|first token" -> ids
  std::unordered_map<std::string, uint32_t> exact_;                 // masked line -> id (fast path)
  uint64_t lines_ = 0;
  uint64_t overflow_ = 0;
};

}  // namespace ff::template_
