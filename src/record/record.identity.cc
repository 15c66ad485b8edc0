// record.identity.cc — LineIdentity: the lines that say who wrote them or whose traceback
// follows (kb/formats/prefixes.yaml `identity:` and `rank_headers:`), each regex with a
// `rank` capture, run only where a cheap test passes (the regex's leading literal).
#include <re2/re2.h>

#include <cctype>

#include "base/strings.h"
#include "record/record.h"

namespace ff::record {

struct LineIdentity::Rule {
  std::string id;
  std::unique_ptr<RE2> re;
  std::string lead;  // the literal the regex starts with: a line without it cannot match
  std::vector<std::string> samples;
};

namespace {

// The literal text a regex starts with, up to its first metacharacter (an escaped
// punctuation byte counts as itself).
std::string leading_literal(std::string_view rx) {
  std::string out;
  for (size_t i = 0; i < rx.size(); ++i) {
    const char c = rx[i];
    if (c == '\\' && i + 1 < rx.size() && !std::isalnum(static_cast<unsigned char>(rx[i + 1]))) {
      out.push_back(rx[++i]);
      continue;
    }
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) {
      // A quantifier applies to the byte before it: that byte is not certain.
      if ((c == '?' || c == '*' || c == '{') && !out.empty()) out.pop_back();
      break;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

LineIdentity::LineIdentity() = default;
LineIdentity::~LineIdentity() = default;

Result<std::unique_ptr<LineIdentity>> LineIdentity::create(const std::vector<kb::PrefixFormat>& identity,
                                                           const std::vector<kb::PrefixFormat>& headers) {
  std::unique_ptr<LineIdentity> li(new LineIdentity());
  RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_encoding(RE2::Options::EncodingLatin1);
  for (auto [list, into] : {std::pair{&identity, &li->writers_}, {&headers, &li->headers_}}) {
    for (const auto& f : *list) {
      Rule r{f.id, std::make_unique<RE2>(f.regex, opts), leading_literal(f.regex), f.samples};
      if (!r.re->ok() || r.re->NamedCapturingGroups().count("rank") == 0)
        return make_error(ErrorCode::kInvalidKb,
                          "identity line " + f.id + (r.re->ok() ? " has no rank capture" : ": " + r.re->error()),
                          {"formats", f.line, f.id});
      into->push_back(std::move(r));
    }
  }
  for (const Rule& r : li->headers_) {
    if (r.lead.empty()) {
      li->header_first_.fill(true);  // a header without a leading literal: every line may be one
    } else {
      li->header_first_[static_cast<unsigned char>(r.lead[0])] = true;
    }
  }
  return li;
}

int LineIdentity::read(const Rule& r, std::string_view message, bool anchored) {
  const int group = r.re->NamedCapturingGroups().at("rank");
  std::vector<re2::StringPiece> groups(static_cast<size_t>(group) + 1);
  if (!r.re->Match(re2::StringPiece(message.data(), message.size()), 0, message.size(),
                   anchored ? RE2::ANCHOR_START : RE2::UNANCHORED, groups.data(), group + 1))
    return -1;
  long long v = 0;
  const auto& g = groups[static_cast<size_t>(group)];
  if (!parse_int(std::string_view(g.data(), g.size()), v) || v < 0 || v >= 100000000) return -1;
  return static_cast<int>(v);
}

int LineIdentity::writer_rank(std::string_view message) const {
  for (const Rule& r : writers_) {
    if (message.find(r.lead) == std::string_view::npos) continue;
    if (int rank = read(r, message, false); rank >= 0) return rank;
  }
  return -1;
}

bool LineIdentity::may_be_header_slow(std::string_view message) const {
  for (const Rule& r : headers_) {
    if (starts_with(message, r.lead)) return true;
  }
  return false;
}

int LineIdentity::header_rank(std::string_view message) const {
  for (const Rule& r : headers_) {
    if (!starts_with(message, r.lead)) continue;
    if (int rank = read(r, message, true); rank >= 0) return rank;
  }
  return -1;
}

std::vector<std::string> LineIdentity::check_samples() const {
  std::vector<std::string> bad;
  for (const Rule& r : writers_) {
    for (const auto& s : r.samples) {
      if (s.find(r.lead) == std::string::npos || read(r, s, false) < 0) bad.push_back(r.id + ": " + s);
    }
  }
  for (const Rule& r : headers_) {
    for (const auto& s : r.samples) {
      if (!starts_with(s, r.lead) || read(r, s, true) < 0) bad.push_back(r.id + ": " + s);
    }
  }
  return bad;
}

}  // namespace ff::record
