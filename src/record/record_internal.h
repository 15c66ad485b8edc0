// record/record_internal.h — what the record module's files share and no other module
// needs: the time formats a prefix format names (record.time.cc), the compiled prefix
// formats (PrefixParser::Impl, built by record.prefix.cc) and how a format's match is
// applied to a Record (read by the rounds and the memo, record.prefix_memo.cc).
//
// The apply functions are inline: the parser's per-line loop calls them once per capture.
#pragma once

#include <re2/re2.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/strings.h"
#include "record/prefix_fast.h"
#include "record/prefix_program.h"
#include "record/record.h"

namespace ff::record::detail {

// The time formats of kb/formats/prefixes.yaml's `time_format`, read once per format.
enum class TimeFormat : uint8_t { kNone, kIso, kGlog, kMdhms, kSyslog, kDmesg, kHms };

// The minute of the last ISO stamp parsed in full on this thread: its first 17 bytes
// ("2026-11-30 10:20:", a valid date and time) and that minute in microseconds.
struct IsoMinuteMemo {
  char key[17]{};
  int64_t minute_us = 0;
  bool valid = false;
};
// constinit: no dynamic initialisation, so other files read it without a TLS wrapper call.
extern thread_local constinit IsoMinuteMemo iso_minute_memo;

TimeFormat time_format_of(std::string_view format);
// parse_time with the format already looked up.
bool parse_time_as(std::string_view s, TimeFormat format, int64_t& us, Clock& clock, bool& subsecond);

}  // namespace ff::record::detail

namespace ff::record {

struct PrefixParser::Impl {
  struct Format {
    kb::PrefixFormat spec;
    std::unique_ptr<RE2> re;
    int ngroups = 0;  // capturing groups used (at most 15)
    // Per CaptureField, the capture index that fills it; 0 when the format has no such group.
    std::array<int, detail::kCaptureFields> group{};
    detail::TimeFormat time_format = detail::TimeFormat::kNone;
    detail::FastKind fast = detail::FastKind::kNone;  // its hand-written matcher, if any
    std::optional<detail::PrefixProgram> program;     // its regex compiled (prefix_program.h), if it can be
  };
  std::vector<Format> formats;
  // Bit i of first_byte[b]: format i (i < 64) can match a text that starts with byte b.
  // Formats from the 65th on are always tried.
  std::array<uint64_t, 256> first_byte{};
  uint64_t consuming = 0;  // bit i: format i consumes
  uint64_t id = 0;         // unique per parser ever made: the key of the per-thread memo
  // What parse() reads per format, packed: its matcher (the hand-written one, else the
  // compiled program, else neither: RE2) and whether the format consumes.
  struct Hot {
    detail::FastKind fast;
    const detail::PrefixProgram* program;  // null when `fast` is used, or in kRegexOnly
    bool consume;
    const Format* format;
  };
  std::vector<Hot> hot;
  // Per first byte, the formats that can start with it, in order (the formats from the
  // 65th on are always tried, after these: `tail`).
  // With each, the second bytes a match can have after this first byte (all, when the
  // format has no fast matcher).
  struct Candidate {
    uint16_t format;
    std::array<uint64_t, 4> second;
  };
  std::array<std::vector<Candidate>, 256> order;
  std::vector<uint16_t> all_order;
  // Tolerant framing (PrefixParser::unglue): the residues a message may be glued to (each
  // regex matched whole, up to and with its `end`), and the formats marked `glued`.
  struct Residue {
    std::unique_ptr<RE2> re;
    std::string end;
  };
  std::vector<Residue> residues;
  std::vector<uint16_t> glued;
  // The bytes a glued message needs in its line ('[' for the glued formats, each residue's
  // end's first byte): a line without any of them (most) is left in one SIMD pass.
  std::string glue_bytes;
  bool use_fast = true;
  bool all_fast = false;  // every format has a fast matcher or a program (see PrefixShape::flat)

  // On a match, fills m; the fields of the captures a format does not have stay as they
  // were, so m must come in cleared (fast matchers and programs write only when they
  // match). `how`: kFast takes the hand-written matcher, else the program; kCompiled the
  // program; RE2 decides when neither answers.
  bool match(const Format& f, std::string_view s, FormatMatch& m, Matchers how) const {
    if (how == Matchers::kFast && f.fast != detail::FastKind::kNone) {
      m.matched = detail::match_fast(f.fast, s, m);
      return m.matched;
    }
    if (how != Matchers::kRegexOnly && f.program) {
      const int r = f.program->match(s, m);
      if (r >= 0) return r == 1;
    }
    re2::StringPiece groups[16];
    if (!f.re->Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::ANCHOR_START, groups, f.ngroups + 1))
      return false;
    auto view = [&](int idx) -> std::string_view {
      if (idx == 0 || idx > f.ngroups || groups[idx].data() == nullptr) return {};
      return std::string_view(groups[idx].data(), groups[idx].size());
    };
    m.matched = true;
    m.length = groups[0].size();
    for (int k = 0; k < detail::kCaptureFields; ++k) m.*detail::kCaptureMembers[k] = view(f.group[k]);
    return true;
  }
};

namespace detail {

inline char level_char(std::string_view v) {
  if (v.empty()) return 0;
  switch (v[0]) {
    case 'D':
    case 'd':
    case 'T':
    case 't': return 'D';
    case 'I':
    case 'i':
    case 'N':
    case 'n': return 'I';
    case 'W':
    case 'w': return 'W';
    case 'E':
    case 'e': return 'E';
    case 'F':
    case 'f':
    case 'C':
    case 'c': return 'F';
  }
  return 0;
}

inline int to_int(std::string_view v) {
  // Captured ranks, pids and GPUs are digit runs: read them without from_chars.
  if (v.empty() || v.size() > 10) {
    long long n = 0;
    if (!parse_int(v, n) || n > 1'000'000'000) return -1;
    return static_cast<int>(n);
  }
  long long n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n > 1'000'000'000 ? -1 : static_cast<int>(n);
}

// A stamp of the iso-time format (prefix_fast.h) whose first 17 bytes are the minute of
// the last stamp parsed in full (iso_minute_memo, a valid date and time) needs no check of
// those bytes: its matcher goes on from the seconds. -1: not such a stamp (the caller runs
// the whole matcher); else whether the format matched.
inline int iso_time_in_memo_minute(std::string_view s, PrefixParser::FormatMatch& m) {
  const IsoMinuteMemo& memo = iso_minute_memo;
  const size_t t0 = !s.empty() && s[0] == '[' ? 1 : 0;
  // (parse_time_as also takes "2026-11-30_10:20:", which this format does not)
  if (!memo.valid || s.size() < t0 + 19 || std::memcmp(s.data() + t0, memo.key, 17) != 0 ||
      (s[t0 + 10] != 'T' && s[t0 + 10] != ' '))
    return -1;
  return detail::iso_time_from_seconds(s, t0, m) ? 1 : 0;
}

using FormatMatch = PrefixParser::FormatMatch;

// One non-empty capture of a matching format, applied to rec: the first capture of a
// field that reads wins.
inline void apply_capture(CaptureField field, std::string_view text, TimeFormat time_format, Record& rec) {
  switch (field) {
    case kRankField:
      if (rec.rank < 0) rec.rank = to_int(text);
      break;
    case kLocalRankField:
      if (rec.local_rank < 0) rec.local_rank = to_int(text);
      break;
    case kPidField:
      if (rec.pid < 0) rec.pid = to_int(text);
      break;
    case kGpuField:
      if (rec.gpu < 0) rec.gpu = to_int(text);
      break;
    case kNodeField:
      if (rec.node.empty()) rec.node = text;
      break;
    case kProgramField:
      if (rec.program.empty()) rec.program = text;
      break;
    case kLevelField:
      if (!rec.level) rec.level = level_char(text);
      break;
    case kTimeField:
      if (rec.time_us == kNoTime && time_format != TimeFormat::kNone) {
        int64_t us;
        Clock clock;
        bool sub;
        if (parse_time_as(text, time_format, us, clock, sub)) {
          rec.time_us = us;
          rec.clock = clock;
          rec.time_subsecond = sub;
          rec.time_text = text;
        }
      }
      break;
  }
}

// Applies a match of format i (m as its matcher filled it) to rec: advances rest past it
// (or marks the non-consuming format used) and returns true; false when the match does
// not count (an empty match of a consuming format).
template <typename Impl, typename Match>
inline bool apply_match(const Impl& impl, uint16_t i, std::string_view& rest, Record& rec, Match& m,
                        bool& applied_nonconsuming) {
  const auto& f = *impl.hot[i].format;
  if (f.spec.consume && m.length == 0) {
    m = Match{};
    return false;
  }
  // A capture that did not take part, or took part empty, changes nothing. Each one is
  // cleared once read, so m comes clean to the next match. A `rank_wins` format's rank
  // replaces the one an outer prefix gave.
  if (f.spec.rank_wins && !m.rank.empty()) rec.rank = -1;
  for (int k = 0; k < kCaptureFields; ++k) {
    std::string_view& capture = m.*kCaptureMembers[k];
    if (capture.empty()) continue;
    apply_capture(static_cast<CaptureField>(k), capture, f.time_format, rec);
    capture = {};
  }
  if (rec.prefix_id.empty()) rec.prefix_id = f.spec.id;
  if (f.spec.consume) {
    rest.remove_prefix(m.length);
  } else {
    applied_nonconsuming = true;
  }
  return true;
}

// Tries format i at the start of rest; when it matches, applies it (apply_match).
template <typename Impl, typename Match>
inline bool try_format(const Impl& impl, uint16_t i, std::string_view& rest, Record& rec, Match& m,
                       bool& applied_nonconsuming) {
  const auto& h = impl.hot[i];
  if (!h.consume && applied_nonconsuming) return false;
  const int known_minute = h.fast == detail::FastKind::k_iso_time ? iso_time_in_memo_minute(rest, m) : -1;
  if (known_minute == 0) return false;
  if (known_minute < 0) {
    if (h.fast != detail::FastKind::kNone) {
      if (!detail::match_fast(h.fast, rest, m)) return false;
    } else {
      const int r = h.program != nullptr ? h.program->match(rest, m) : -1;
      if (r == 0 || (r < 0 && !impl.match(*h.format, rest, m, PrefixParser::Matchers::kRegexOnly))) return false;
    }
  }
  return apply_match(impl, i, rest, rec, m, applied_nonconsuming);
}
}  // namespace detail

}  // namespace ff::record
