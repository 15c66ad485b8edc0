// record.prefix_memo.cc — PrefixParser::parse: the rounds (at each position the formats
// in order until one matches) and the per-thread memo of how the rounds went on recent
// lines (PrefixShape), replayed on a line that differs from one of them only in digits.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "record/record_internal.h"

namespace ff::record {

using namespace detail;  // NOLINT(google-build-using-namespace): the module's own internals

namespace {

// The memo (see PrefixParser::parse): how the formats went on a line, per round. A line
// goes the same way when each round starts with the same two bytes and, over the bytes
// the failed attempts read (NUL-padded past the end), has the same bytes except digits
// (no matcher tells one digit from another, syslog's day aside: `exact`).
// A winner whose matcher is digit-blind too (digit_blind()) is not run again: the bytes
// it read are verified the same way, so it matches the same length with its captures at
// the same places, and the round applies those (`blind`). Other winners run again.
struct PrefixShape {
  struct Capture {
    CaptureField field = kRankField;
    uint16_t at = 0, size = 0;  // from the round's start
  };
  struct Round {
    uint32_t at;  // where the round starts in `text`
    unsigned char b0, b1;
    uint32_t verify;  // bytes from `at` the failed attempts (and a blind winner) read
    bool exact;       // compare those bytes exactly
    int32_t winner;   // the format that matched, or -1: the message starts here
    bool blind = false;
    uint32_t length = 0;    // a blind winner's match length
    uint8_t ncaptures = 0;  // the non-empty captures of a blind winner
    std::array<Capture, kCaptureFields> captures{};
  };
  std::string text;  // the line, as far as the rounds read it, then NUL bytes (8 more)
  std::vector<Round> rounds;
  // Flat: every winner blind, no round exact, and every format of the parser has a fast
  // matcher (so which formats a round tries is digit-blind too: the first-byte table and
  // the second-byte filter never tell digits apart). Then a line whose first `flat_end`
  // bytes equal `text`'s but for digits goes every round's way, and replay() only applies
  // the captures, which sit at the same places.
  struct FlatCapture {
    uint32_t at, size;  // in the line
    CaptureField field;
    TimeFormat time_format;
  };
  bool flat = false;
  uint32_t flat_end = 0;
  uint32_t message_at = 0;
  std::string_view prefix_id;  // the first winner's id (a format's: lives as long as the parser)
  std::vector<FlatCapture> captures;
};

struct PrefixMemo {
  uint64_t owner = 0;                                // PrefixParser::Impl::id
  std::vector<std::unique_ptr<PrefixShape>> shapes;  // most used first (moved by pointer)
  static constexpr size_t kMax = 4;
};

inline bool digit_byte(char c) { return c >= '0' && c <= '9'; }

// 0x80 in each byte of x that is an ASCII digit, 0 in the others (no carry crosses a
// byte: each is at most 0x7f + 0x50 after its top bit is cleared).
inline uint64_t digit_bytes(uint64_t x) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  const uint64_t low7 = x & ~kHigh;
  const uint64_t at_least_0 = (low7 + 0x5050505050505050ull) & kHigh;
  const uint64_t above_9 = (low7 + 0x4646464646464646ull) & kHigh;
  return at_least_0 & ~above_9 & ~x & kHigh;
}

}  // namespace

namespace {

// A format's matcher that tells no digit from another (every hand-written one but
// syslog's, whose day is "[ 0-3]\d"; a program without a class or literal that holds
// some digits only): on texts that differ only in digits it reads the same bytes and
// matches the same way.
template <class Hot>
bool digit_blind(const Hot& h) {
  if (h.fast != detail::FastKind::kNone) return h.fast != detail::FastKind::k_syslog;
  return h.program != nullptr && h.program->digit_blind();
}

// The format's hand-written matcher or program on a probe: 1 matched, 0 did not, -1 the
// program gave up (or there is neither).
template <class Hot>
int probe_fast(const Hot& h, const detail::PaddedProbe& probe, PrefixParser::FormatMatch& m) {
  if (h.fast != detail::FastKind::kNone) return detail::match_fast(h.fast, probe, m) ? 1 : 0;
  return h.program != nullptr ? h.program->match(probe, m) : -1;
}

// For the memo: when round r's winner (format h, at `text`) is digit-blind, notes how far
// it read, its length and its captures, so that replay() need not run it. False when the
// shape cannot be kept (the matcher does not match the padded text as it matched).
template <class Hot>
bool note_blind_winner(const Hot& h, std::string_view text, PrefixShape::Round& r) {
  if (!digit_blind(h)) return true;
  detail::PaddedProbe probe{text};
  PrefixParser::FormatMatch pm;
  if (probe_fast(h, probe, pm) != 1 || pm.length > UINT16_MAX) return false;
  if (probe.reach > UINT16_MAX) return false;
  for (int k = 0; k < kCaptureFields; ++k) {
    const std::string_view capture = pm.*kCaptureMembers[k];
    if (capture.empty()) continue;
    const size_t at = static_cast<size_t>(capture.data() - text.data());
    if (at > UINT16_MAX || capture.size() > UINT16_MAX) return false;
    r.captures[r.ncaptures++] = {static_cast<CaptureField>(k), static_cast<uint16_t>(at),
                                 static_cast<uint16_t>(capture.size())};
  }
  r.blind = true;
  r.length = static_cast<uint32_t>(pm.length);
  r.verify = std::max<uint32_t>(r.verify, static_cast<uint32_t>(probe.reach));
  return true;
}

}  // namespace

// The rounds: at each position, the formats in order until one matches (at most 12
// rounds). With `shape`, also notes how each round went (false: not memoisable).
bool PrefixParser::parse_rounds(std::string_view line, Record& rec, void* shape_out) const {
  const Impl& impl = *impl_;
  auto* shape = static_cast<PrefixShape*>(shape_out);
  bool memoisable = shape != nullptr;
  std::string_view rest = line;
  // Kept clean between lines (every field read is cleared), so no 128-byte reset per line.
  thread_local FormatMatch m;
  bool applied_nonconsuming = false;
  for (int round = 0; round < 12; ++round) {
    bool any = false;
    if (rest.size() < 2 || !impl.use_fast) {
      // All formats in order (a text this short is rare; RegexOnly is the reference).
      memoisable = false;
      for (uint16_t i : impl.all_order) {
        if (try_format(impl, i, rest, rec, m, applied_nonconsuming)) {
          any = true;
          break;
        }
      }
    } else {
      PrefixShape::Round r{static_cast<uint32_t>(rest.data() - line.data()),
                           static_cast<unsigned char>(rest[0]),
                           static_cast<unsigned char>(rest[1]),
                           0,
                           false,
                           -1};
      // The formats in order, those that can start with these two bytes only.
      const unsigned b1 = static_cast<unsigned char>(rest[1]);
      for (const Impl::Candidate& c : impl.order[static_cast<unsigned char>(rest[0])]) {
        if (((c.second[b1 >> 6] >> (b1 & 63)) & 1) == 0) continue;
        const Impl::Hot& h = impl.hot[c.format];
        if (!h.consume && applied_nonconsuming) continue;
        const std::string_view before = rest;
        if (try_format(impl, c.format, rest, rec, m, applied_nonconsuming)) {
          r.winner = c.format;
          any = true;
          break;
        }
        if (memoisable) {
          // How far this failed attempt read (a hand-written matcher or a program can say).
          if (h.fast == detail::FastKind::kNone && h.program == nullptr) {
            memoisable = false;
          } else {
            detail::PaddedProbe probe{before};
            FormatMatch scratch;
            // Matched: an empty match; a program that gave up: RE2 decided.
            if (probe_fast(h, probe, scratch) != 0) memoisable = false;
            r.verify = std::max<uint32_t>(r.verify, static_cast<uint32_t>(std::min<size_t>(probe.reach, UINT32_MAX)));
            if (!digit_blind(h)) r.exact = true;
          }
        }
      }
      if (memoisable && r.winner >= 0) memoisable = note_blind_winner(impl.hot[r.winner], line.substr(r.at), r);
      if (memoisable) shape->rounds.push_back(r);
    }
    if (!any) break;
  }
  rec.message = rest;
  if (memoisable) {
    size_t need = 0;
    bool flat = impl.all_fast;
    shape->captures.clear();
    for (const auto& r : shape->rounds) {
      need = std::max<size_t>(need, r.at + std::max<uint32_t>(r.verify, 2));
      if (r.exact || (r.winner >= 0 && !r.blind)) flat = false;
      if (r.winner < 0) continue;
      const Impl::Format& f = *impl.hot[static_cast<size_t>(r.winner)].format;
      if (shape->prefix_id.empty()) shape->prefix_id = f.spec.id;
      for (uint8_t k = 0; k < r.ncaptures; ++k)
        shape->captures.push_back({r.at + r.captures[k].at, r.captures[k].size, r.captures[k].field, f.time_format});
    }
    shape->flat = flat && need <= UINT32_MAX;
    shape->flat_end = static_cast<uint32_t>(need);
    shape->message_at = static_cast<uint32_t>(rest.data() - line.data());
    shape->text.assign(line.substr(0, std::min(line.size(), need)));
    shape->text.resize(need + 8, '\0');  // read as NUL past the line; room for replay's 8-byte reads
  }
  return memoisable;
}

namespace {

// line[0, n) equals text[0, n) but where both have a digit (past the line's end it reads
// as NUL; text is NUL-padded with 8 bytes to spare).
inline bool same_but_digits(std::string_view line, const char* text, size_t n) {
  size_t k = 0;
  for (; k + 8 <= n && k + 8 <= line.size(); k += 8) {
    uint64_t x, y;
    std::memcpy(&x, line.data() + k, 8);
    std::memcpy(&y, text + k, 8);
    const uint64_t diff = x ^ y;
    if (diff != 0 && (diff & ~(((digit_bytes(x) & digit_bytes(y)) >> 7) * 0xFF)) != 0) return false;
  }
  for (; k < n; ++k) {
    const char x = k < line.size() ? line[k] : '\0';
    const char y = text[k];
    if (x != y && (!digit_byte(x) || !digit_byte(y))) return false;
  }
  return true;
}

}  // namespace

bool PrefixParser::replay(const void* shape_in, std::string_view line, Record& rec) const {
  const auto& sh = *static_cast<const PrefixShape*>(shape_in);
  const Impl& impl = *impl_;
  if (sh.flat) {
    if (!same_but_digits(line, sh.text.data(), sh.flat_end)) return false;
    for (const PrefixShape::FlatCapture& c : sh.captures)
      apply_capture(c.field, std::string_view(line.data() + c.at, c.size), c.time_format, rec);
    rec.prefix_id = sh.prefix_id;
    rec.message = line.substr(sh.message_at);
    return true;
  }
  thread_local FormatMatch m;
  bool applied_nonconsuming = false;
  std::string_view rest = line;
  for (const PrefixShape::Round& r : sh.rounds) {
    if (rest.size() < 2 || static_cast<unsigned char>(rest[0]) != r.b0 || static_cast<unsigned char>(rest[1]) != r.b1)
      return false;
    // Eight bytes at a time (the shape's text is NUL-padded for it): a byte may differ
    // only where both are digits (and nowhere when the round is exact).
    const char* tx = sh.text.data() + r.at;
    for (uint32_t k = 2; k < r.verify;) {
      const uint32_t take = std::min<uint32_t>(8, r.verify - k);
      if (k + 8 <= rest.size()) {
        uint64_t x, y;
        std::memcpy(&x, rest.data() + k, 8);
        std::memcpy(&y, tx + k, 8);
        uint64_t diff = x ^ y;
        if (take < 8) diff &= (uint64_t{1} << (8 * take)) - 1;
        if (diff != 0) {
          if (r.exact) return false;
          const uint64_t both_digits = ((digit_bytes(x) & digit_bytes(y)) >> 7) * 0xFF;
          if (diff & ~both_digits) return false;
        }
      } else {
        for (uint32_t j = k; j < k + take; ++j) {
          const char x = j < rest.size() ? rest[j] : '\0';
          const char y = tx[j];
          if (x != y && (r.exact || !digit_byte(x) || !digit_byte(y))) return false;
        }
      }
      k += take;
    }
    if (r.winner < 0) break;
    if (r.blind) {
      // The winner matched here as on the memo's line: apply its captures from there.
      for (uint8_t k = 0; k < r.ncaptures; ++k) {
        const PrefixShape::Capture& c = r.captures[k];
        m.*kCaptureMembers[c.field] = std::string_view(rest.data() + c.at, c.size);
      }
      m.length = r.length;
      if (!apply_match(impl, static_cast<uint16_t>(r.winner), rest, rec, m, applied_nonconsuming)) return false;
    } else if (!try_format(impl, static_cast<uint16_t>(r.winner), rest, rec, m, applied_nonconsuming)) {
      return false;
    }
  }
  rec.message = rest;
  return true;
}

namespace {

// The fields a parse fills, back to "none", field by field: cheaper than assigning a
// whole new Record on every line.
void clear_parsed_fields(Record& rec) {
  rec.rank = rec.local_rank = rec.pid = rec.gpu = -1;
  rec.node = {};
  rec.time_us = kNoTime;
  rec.clock = Clock::kNone;
  rec.time_subsecond = false;
  rec.level = 0;
  rec.message = rec.time_text = rec.prefix_id = {};
}

}  // namespace

namespace {

inline bool blank(char c) { return c == ' ' || c == '\t'; }

// Whether s holds one of `bytes` (at most three are compared sixteen at a time; more, and
// the answer is yes).
bool holds_any(std::string_view s, const std::string& bytes) {
  if (bytes.empty()) return false;
  if (bytes.size() > 3) return true;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i a = _mm_set1_epi8(bytes[0]);
  const __m128i b = _mm_set1_epi8(bytes.size() > 1 ? bytes[1] : bytes[0]);
  const __m128i c = _mm_set1_epi8(bytes.size() > 2 ? bytes[2] : bytes[0]);
  auto any16 = [&](const char* p) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, a), _mm_cmpeq_epi8(w, b)), _mm_cmpeq_epi8(w, c));
    return _mm_movemask_epi8(hit) != 0;
  };
  for (; i + 16 <= s.size(); i += 16) {
    if (any16(s.data() + i)) return true;
  }
  // The last bytes: the sixteen that end the text (read again in part), when there are.
  if (i < s.size() && s.size() >= 16) return any16(s.data() + s.size() - 16);
#endif
  const char x = bytes[0], y = bytes.size() > 1 ? bytes[1] : x, z = bytes.size() > 2 ? bytes[2] : x;
  for (; i < s.size(); ++i) {
    if (s[i] == x || s[i] == y || s[i] == z) return true;
  }
  return false;
}

}  // namespace

void PrefixParser::parse(std::string_view line, Record& rec) const {
  parse_prefixes(line, rec);
  glue(rec);
}

bool PrefixParser::glue(Record& rec) const {
  if (!holds_any(rec.message, impl_->glue_bytes)) return false;
  const std::string_view before = rec.message;
  unglue(rec);
  return rec.message.data() != before.data() || rec.message.size() != before.size();
}

const std::string& PrefixParser::glue_bytes() const { return impl_->glue_bytes; }

// Tolerant framing: the message proper starts after a residue (its `end`, then a byte
// that is not blank, and the residue's regex matching all that comes before), or at a
// `[` right after a byte that is not blank where a `glued` format matches and text
// follows. A few candidates a line at most (a hostile line of brackets stays cheap).
void PrefixParser::unglue(Record& rec) const {
  const Impl& impl = *impl_;
  const std::string_view msg = rec.message;
  constexpr int kTries = 4;
  size_t start = std::string_view::npos;
  for (const Impl::Residue& r : impl.residues) {
    size_t from = 0;
    for (int t = 0; t < kTries && start == std::string_view::npos; ++t) {
      const size_t p = msg.find(r.end, from);
      if (p == std::string_view::npos) break;
      const size_t e = p + r.end.size();
      if (e < msg.size() && !blank(msg[e]) && RE2::FullMatch(re2::StringPiece(msg.data(), e), *r.re)) start = e;
      from = p + 1;
    }
    if (start != std::string_view::npos) break;
  }
  if (start == std::string_view::npos && !impl.glued.empty()) {
    size_t from = 1;
    for (int t = 0; t < kTries && start == std::string_view::npos; ++t) {
      const size_t p = msg.find('[', from);
      if (p == std::string_view::npos) break;
      from = p + 1;
      if (blank(msg[p - 1])) continue;
      for (uint16_t i : impl.glued) {
        FormatMatch m;
        if (impl.match(impl.formats[i], msg.substr(p), m, Matchers::kFast) && m.length > 0 &&
            p + m.length < msg.size()) {
          start = p;
          break;
        }
      }
    }
  }
  if (start == std::string_view::npos) return;
  Record inner;
  parse_rounds(msg.substr(start), inner, nullptr);
  if (rec.rank < 0) rec.rank = inner.rank;
  if (rec.local_rank < 0) rec.local_rank = inner.local_rank;
  if (rec.pid < 0) rec.pid = inner.pid;
  if (rec.gpu < 0) rec.gpu = inner.gpu;
  if (rec.node.empty()) rec.node = inner.node;
  if (rec.program.empty()) rec.program = inner.program;
  if (rec.time_us == kNoTime && inner.time_us != kNoTime) {
    rec.time_us = inner.time_us;
    rec.clock = inner.clock;
    rec.time_subsecond = inner.time_subsecond;
    rec.time_text = inner.time_text;
  }
  if (!rec.level) rec.level = inner.level;
  if (rec.prefix_id.empty()) rec.prefix_id = inner.prefix_id;
  rec.message = inner.message;
}

void PrefixParser::parse_prefixes(std::string_view line, Record& rec) const {
  clear_parsed_fields(rec);
  rec.text = line;
  if (!impl_->use_fast) {
    parse_rounds(line, rec, nullptr);
    return;
  }
  // Lines of one log share a few prefix shapes: replay the one this line has, else parse
  // it and remember how it went. Per thread (the parser itself is shared and immutable).
  thread_local PrefixMemo memo;
  if (memo.owner != impl_->id) {
    memo.shapes.clear();
    memo.owner = impl_->id;
  }
  for (size_t k = 0; k < memo.shapes.size(); ++k) {
    if (replay(memo.shapes[k].get(), line, rec)) {
      if (k > 0) std::swap(memo.shapes[k], memo.shapes[k - 1]);
      return;
    }
    // A failed replay may have filled some fields (a flat one fills none): start again.
    if (!memo.shapes[k]->flat) clear_parsed_fields(rec);
  }
  auto shape = std::make_unique<PrefixShape>();
  if (parse_rounds(line, rec, shape.get()) && !shape->rounds.empty()) {
    if (memo.shapes.size() == PrefixMemo::kMax) memo.shapes.pop_back();
    memo.shapes.insert(memo.shapes.begin(), std::move(shape));
  }
}

}  // namespace ff::record
