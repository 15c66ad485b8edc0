#include "record/record.h"

#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <ctime>

#include "base/strings.h"
#include "record/prefix_fast.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Line framing

void LineFramer::emit(std::string_view bytes, bool cut, const std::function<void(const RawLine&)>& on_line,
                      bool plain) {
  RawLine line;
  line.number = ++number_;
  line.offset = line_start_;
  line.bytes = bytes;
  line.cut = cut;
  line.plain = plain;
  if (cut) ++cut_lines_;
  on_line(line);
  pending_.clear();
  pending_cut_ = false;
}

// Appends at most what still fits under max_line_ to the pending line.
void LineFramer::keep(std::string_view piece) {
  size_t room = max_line_ > pending_.size() ? max_line_ - pending_.size() : 0;
  if (piece.size() > room) pending_cut_ = true;
  pending_.append(piece.substr(0, std::min(room, piece.size())));
}

namespace {

// find_line_end (detail::FindLineEnd): the first '\n' in [p, e), or e; sets `dirty` when a
// byte that clean_line changes ('\r', ESC, NUL) comes before it. One pass finds the line's
// end and whether it needs cleaning. This is its byte-at-a-time form (the SIMD ones finish
// with it).
inline const char* find_line_end_bytes(const char* p, const char* e, bool& dirty) {
  for (; p < e; ++p) {
    const char c = *p;
    if (c == '\n') return p;
    if (c == '\x1b' || c == '\r' || c == '\0') dirty = true;
  }
  return e;
}

#if defined(__x86_64__) && defined(__GNUC__)
// 32 bytes at a time, on processors with AVX2 (chosen at run time).
__attribute__((target("avx2"))) const char* find_line_end_avx2(const char* p, const char* e, bool& dirty) {
  const __m256i lf = _mm256_set1_epi8('\n'), esc = _mm256_set1_epi8('\x1b'), cr = _mm256_set1_epi8('\r'),
                nul = _mm256_setzero_si256();
  for (; e - p >= 32; p += 32) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const auto at_lf = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(w, lf)));
    const auto odd = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_or_si256(
        _mm256_or_si256(_mm256_cmpeq_epi8(w, esc), _mm256_cmpeq_epi8(w, cr)), _mm256_cmpeq_epi8(w, nul))));
    if (at_lf != 0) {
      const int k = __builtin_ctz(at_lf);
      if ((odd & ((1u << k) - 1)) != 0) dirty = true;
      return p + k;
    }
    if (odd != 0) dirty = true;
  }
  return find_line_end_bytes(p, e, dirty);
}
#endif

// Sixteen bytes at a time (SSE2 is part of x86-64).
const char* find_line_end_sse2(const char* p, const char* e, bool& dirty) {
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n'), esc = _mm_set1_epi8('\x1b'), cr = _mm_set1_epi8('\r'),
                nul = _mm_setzero_si128();
  for (; e - p >= 16; p += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const auto at_lf = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(w, lf)));
    const auto odd = static_cast<uint32_t>(_mm_movemask_epi8(
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, esc), _mm_cmpeq_epi8(w, cr)), _mm_cmpeq_epi8(w, nul))));
    if (at_lf != 0) {
      const int k = __builtin_ctz(at_lf);
      if ((odd & ((1u << k) - 1)) != 0) dirty = true;
      return p + k;
    }
    if (odd != 0) dirty = true;
  }
#endif
  return find_line_end_bytes(p, e, dirty);
}

const detail::FindLineEnd find_line_end = [] {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) return &find_line_end_avx2;
#endif
  return &find_line_end_sse2;
}();

}  // namespace

std::vector<detail::FindLineEnd> detail::line_end_finders() {
  std::vector<FindLineEnd> all{&find_line_end_sse2};
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) all.push_back(&find_line_end_avx2);
#endif
  return all;
}

namespace {

// A carriage return followed by more text on the same line ("a\rb", not "a\r" or "a\r\n").
bool has_lone_cr(std::string_view s) {
  for (size_t i = s.find('\r'); i != std::string_view::npos && i + 1 < s.size(); i = s.find('\r', i + 1)) {
    if (s[i + 1] != '\r' && s[i + 1] != '\n') return true;
  }
  return false;
}

}  // namespace

// The first line had no '\n' and is CR-separated: re-frame what is pending in CR mode.
void LineFramer::switch_to_cr(const std::function<void(const RawLine&)>& on_line) {
  eol_ = Eol::kCr;
  std::string held = std::move(pending_);
  pending_.clear();
  pending_cut_ = false;
  offset_ = line_start_;
  feed_cr(held, on_line);
}

void LineFramer::feed_cr(std::string_view chunk, const std::function<void(const RawLine&)>& on_line) {
  size_t pos = 0;
  if (skip_lf_ && !chunk.empty()) {
    skip_lf_ = false;
    if (chunk[0] == '\n') {  // the '\n' of a "\r\n" split across chunks
      pos = 1;
      line_start_ = ++offset_;
    }
  }
  while (pos < chunk.size()) {
    size_t end = chunk.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) {
      keep(chunk.substr(pos));
      offset_ += chunk.size() - pos;
      return;
    }
    std::string_view piece = chunk.substr(pos, end - pos);
    if (pending_.empty() && !pending_cut_) {
      emit(piece.substr(0, std::min(piece.size(), max_line_)), piece.size() > max_line_, on_line);
    } else {
      keep(piece);
      emit(pending_, pending_cut_, on_line);
    }
    size_t term = 1;
    if (chunk[end] == '\r') {
      if (end + 1 < chunk.size()) {
        if (chunk[end + 1] == '\n') term = 2;
      } else {
        skip_lf_ = true;
      }
    }
    offset_ += piece.size() + term;
    line_start_ = offset_;
    pos = end + term;
  }
}

void LineFramer::feed(std::string_view chunk, const std::function<void(const RawLine&)>& on_line) {
  if (eol_ == Eol::kUndecided) {
    if (!chunk.empty() && std::memchr(chunk.data(), '\n', chunk.size()) != nullptr) {
      eol_ = Eol::kLf;
    } else if (pending_.size() + chunk.size() > max_line_) {
      // The first line would be cut: decide now, while every byte of it is still here.
      bool lone_cr = has_lone_cr(pending_) || has_lone_cr(chunk) ||
                     (!pending_.empty() && pending_.back() == '\r' && !chunk.empty() && chunk[0] != '\r');
      if (!lone_cr) {
        eol_ = Eol::kLf;
      } else {
        switch_to_cr(on_line);
        feed_cr(chunk, on_line);
        return;
      }
    }
  }
  if (eol_ == Eol::kCr) {
    feed_cr(chunk, on_line);
    return;
  }
  size_t pos = 0;
  const char* const chunk_end = chunk.data() + chunk.size();
  while (pos < chunk.size()) {
    bool dirty = false;
    const char* nl = find_line_end(chunk.data() + pos, chunk_end, dirty);
    size_t end = static_cast<size_t>(nl - chunk.data());
    std::string_view piece = chunk.substr(pos, end - pos);
    if (nl == chunk_end) {
      keep(piece);  // an incomplete line waits for the next chunk
      offset_ += piece.size();
      return;
    }
    if (pending_.empty() && !pending_cut_) {
      // The common case: the whole line is inside this chunk; no copy.
      emit(piece.substr(0, std::min(piece.size(), max_line_)), piece.size() > max_line_, on_line, !dirty);
    } else {
      keep(piece);
      emit(pending_, pending_cut_, on_line);
    }
    offset_ += piece.size() + 1;
    line_start_ = offset_;
    pos = end + 1;
  }
}

void LineFramer::finish(const std::function<void(const RawLine&)>& on_line) {
  if (eol_ == Eol::kUndecided && has_lone_cr(pending_)) switch_to_cr(on_line);
  if (pending_.empty() && !pending_cut_) return;
  emit(pending_, pending_cut_, on_line);
  line_start_ = offset_;
}

// ---------------------------------------------------------------------------
// Cleaning

bool needs_cleaning(std::string_view raw) {
  const char* p = raw.data();
  size_t n = raw.size(), i = 0;
#if defined(__SSE2__)
  // Sixteen bytes at a time (SSE2 is part of x86-64).
  const __m128i esc = _mm_set1_epi8('\x1b'), cr = _mm_set1_epi8('\r'), nul = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, esc), _mm_cmpeq_epi8(w, cr)), _mm_cmpeq_epi8(w, nul));
    if (_mm_movemask_epi8(hit) != 0) return true;
  }
#endif
  // Eight bytes at a time: a byte below 0x20 is rare in a log (tabs aside), so the exact
  // test runs only on words that have one.
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    // High bit set in each byte that is < 0x20 (and possibly in bytes >= 0x80: rechecked).
    uint64_t lo = (w - 0x2020202020202020ull) & ~w & 0x8080808080808080ull;
    if (lo == 0) continue;
    for (size_t k = i; k < i + 8; ++k) {
      char c = p[k];
      if (c == '\x1b' || c == '\r' || c == '\0') return true;
    }
  }
  for (; i < n; ++i) {
    char c = p[i];
    if (c == '\x1b' || c == '\r' || c == '\0') return true;
  }
  return false;
}

std::string_view clean_line_view(std::string_view raw, std::string& buf) {
  if (!needs_cleaning(raw)) return raw;
  clean_line(raw, buf);
  return buf;
}

void clean_line(std::string_view raw, std::string& out) {
  out.clear();
  // Drop a trailing CR (CRLF files), then keep only what follows the last CR that still
  // has text after it: "  3%|▏ | 1/30\r 100%|█| 30/30\rloss 0.1" shows as "loss 0.1".
  while (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
  size_t cr = raw.rfind('\r');
  if (cr != std::string_view::npos) raw = raw.substr(cr + 1);
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '\x1b') {
      if (i + 1 < raw.size() && raw[i + 1] == '[') {
        // CSI: parameters and intermediates, then one final byte in 0x40..0x7e.
        size_t j = i + 2;
        while (j < raw.size() && !(raw[j] >= 0x40 && raw[j] <= 0x7e)) ++j;
        i = j;
        continue;
      }
      if (i + 1 < raw.size() && raw[i + 1] == ']') {
        // OSC: until BEL or ESC '\'.
        size_t j = i + 2;
        while (j < raw.size() && raw[j] != '\a' && !(raw[j] == '\x1b' && j + 1 < raw.size() && raw[j + 1] == '\\')) ++j;
        i = (j < raw.size() && raw[j] == '\x1b') ? j + 1 : j;
        continue;
      }
      ++i;  // two-byte escape (ESC c, ESC =, ...)
      continue;
    }
    if (c == '\0') continue;
    out.push_back(c);
  }
}

// ---------------------------------------------------------------------------
// Time

namespace {

bool digits(std::string_view s, size_t pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

int64_t days_from_civil_uncached(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Consecutive lines carry the same date: remember the last one (per thread).
int64_t days_from_civil(int y, int m, int d) {
  thread_local int ly = INT32_MIN, lm = 0, ld = 0;
  thread_local int64_t ldays = 0;
  if (y != ly || m != lm || d != ld) {
    ldays = days_from_civil_uncached(y, m, d);
    ly = y, lm = m, ld = d;
  }
  return ldays;
}

size_t read_fraction(std::string_view s, size_t i, int64_t& us, bool& subsecond);

// Reads "HH:MM:SS" at pos and an optional fraction ([.,]digits); returns end or npos.
size_t read_hms(std::string_view s, size_t pos, int64_t& us, bool& subsecond) {
  int h, mi, se;
  if (!digits(s, pos, 2, h) || pos + 2 >= s.size() || s[pos + 2] != ':' || !digits(s, pos + 3, 2, mi) ||
      pos + 5 >= s.size() || s[pos + 5] != ':' || !digits(s, pos + 6, 2, se))
    return std::string_view::npos;
  if (h > 23 || mi > 59 || se > 60) return std::string_view::npos;
  us = (static_cast<int64_t>(h) * 3600 + mi * 60 + se) * 1000000;
  return read_fraction(s, pos + 8, us, subsecond);
}

// Reads an optional fraction ([.,]digits) at i and adds it to us; returns its end.
size_t read_fraction(std::string_view s, size_t i, int64_t& us, bool& subsecond) {
  subsecond = false;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    size_t j = i + 1;
    int64_t frac = 0, scale = 1000000;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') {
      if (scale > 1) {
        scale /= 10;
        frac += (s[j] - '0') * scale;
      }
      ++j;
    }
    if (j > i + 1) {
      us += frac;
      subsecond = true;
      i = j;
    }
  }
  return i;
}

int month_from_name(std::string_view m) {
  static const char* kNames[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (m == kNames[i]) return i + 1;
  }
  return 0;
}

constexpr int kNoYear = 2000;  // a leap year, so Feb 29 in year-less stamps parses

}  // namespace

namespace {

enum class TimeFormat : uint8_t { kNone, kIso, kGlog, kMdhms, kSyslog, kDmesg, kHms };

// The minute of the last ISO stamp parsed in full on this thread: its first 17 bytes
// ("2026-11-30 10:20:", a valid date and time) and that minute in microseconds.
struct IsoMinuteMemo {
  char key[17];
  int64_t minute_us = 0;
  bool valid = false;
};
thread_local IsoMinuteMemo iso_minute_memo;

TimeFormat time_format_of(std::string_view format) {
  if (format == "iso" || format == "torchrun") return TimeFormat::kIso;
  if (format == "glog") return TimeFormat::kGlog;
  if (format == "mdhms") return TimeFormat::kMdhms;
  if (format == "syslog") return TimeFormat::kSyslog;
  if (format == "dmesg") return TimeFormat::kDmesg;
  if (format == "hms") return TimeFormat::kHms;
  return TimeFormat::kNone;
}

bool parse_time_as(std::string_view s, TimeFormat format, int64_t& us, Clock& clock, bool& subsecond) {
  s = trim(s);
  int y, mo, d;
  int64_t tod = 0;
  if (format == TimeFormat::kIso) {
    // 2026-11-30 10:20:42,398 | 2026-11-30T10:20:42.398Z | 2026-11-30_10:20:45 | +02:00
    // Consecutive stamps share their minute: when the first 17 bytes ("2026-11-30 10:20:")
    // are those of the last full parse on this thread, only the seconds are read.
    IsoMinuteMemo& memo = iso_minute_memo;
    size_t end;
    int64_t minute_us;
    if (memo.valid && s.size() >= 19 && std::memcmp(s.data(), memo.key, 17) == 0) {
      int se;
      if (!digits(s, 17, 2, se) || se > 60) return false;
      minute_us = memo.minute_us;
      tod = static_cast<int64_t>(se) * 1000000;
      end = read_fraction(s, 19, tod, subsecond);
    } else {
      if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
          !digits(s, 8, 2, d) || (s[10] != ' ' && s[10] != 'T' && s[10] != '_'))
        return false;
      end = read_hms(s, 11, tod, subsecond);
      if (end == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
      int h = 0, mi = 0;
      digits(s, 11, 2, h);  // read_hms checked them
      digits(s, 14, 2, mi);
      const int64_t tod_minutes = (static_cast<int64_t>(h) * 60 + mi) * 60000000;  // HH:MM of the stamp
      minute_us = days_from_civil(y, mo, d) * 86400 * 1000000 + tod_minutes;
      tod -= tod_minutes;
      std::memcpy(memo.key, s.data(), 17);
      memo.minute_us = minute_us;
      memo.valid = true;
    }
    int64_t offset_s = 0;
    if (end < s.size() && (s[end] == '+' || s[end] == '-')) {
      int oh = 0, om = 0;
      size_t p = end + 1;
      if (digits(s, p, 2, oh)) {
        p += 2;
        if (p < s.size() && s[p] == ':') ++p;
        digits(s, p, 2, om);
        offset_s = (oh * 3600 + om * 60) * (s[end] == '+' ? 1 : -1);
      }
    }
    us = minute_us - offset_s * 1000000 + tod;
    clock = Clock::kWall;
    return true;
  }
  if (format == TimeFormat::kGlog) {
    // 1120 10:11:12.345678 (month, day)
    if (!digits(s, 0, 2, mo) || !digits(s, 2, 2, d) || s.size() < 13 || s[4] != ' ') return false;
    if (read_hms(s, 5, tod, subsecond) == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    us = days_from_civil(kNoYear, mo, d) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == TimeFormat::kMdhms) {
    // 06-30 06:10:12 or 02/10 22:55:41
    if (!digits(s, 0, 2, mo) || (s.size() < 14) || (s[2] != '-' && s[2] != '/') || !digits(s, 3, 2, d) || s[5] != ' ')
      return false;
    if (read_hms(s, 6, tod, subsecond) == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    us = days_from_civil(kNoYear, mo, d) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == TimeFormat::kSyslog) {
    // Oct  4 13:19:39
    if (s.size() < 15) return false;
    mo = month_from_name(s.substr(0, 3));
    size_t p = 4;
    while (p < s.size() && s[p] == ' ') ++p;
    int dd = 0;
    size_t q = p;
    while (q < s.size() && q - p < 3 && s[q] >= '0' && s[q] <= '9') dd = dd * 10 + (s[q++] - '0');
    if (mo == 0 || q == p || q >= s.size() || s[q] != ' ' || dd < 1 || dd > 31) return false;
    if (read_hms(s, q + 1, tod, subsecond) == std::string_view::npos) return false;
    us = days_from_civil(kNoYear, mo, dd) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == TimeFormat::kDmesg) {
    // 74785.660366 (seconds since boot)
    size_t dot = s.find('.');
    long long sec = 0, frac = 0;
    if (dot == std::string_view::npos || !parse_int(s.substr(0, dot), sec)) return false;
    if (sec > INT64_MAX / 1000000 - 1) return false;  // would overflow: not a boot time
    std::string_view f = s.substr(dot + 1);
    if (f.empty() || f.size() > 9 || !parse_int(f, frac)) return false;
    for (size_t i = f.size(); i < 6; ++i) frac *= 10;
    for (size_t i = 6; i < f.size(); ++i) frac /= 10;
    us = sec * 1000000 + frac;
    clock = Clock::kBoot;
    subsecond = true;
    return true;
  }
  if (format == TimeFormat::kHms) {
    if (read_hms(s, 0, tod, subsecond) == std::string_view::npos) return false;
    us = tod;
    clock = Clock::kTimeOfDay;
    return true;
  }
  return false;
}

}  // namespace

bool parse_time(std::string_view s, std::string_view format, int64_t& us, Clock& clock, bool& subsecond) {
  return parse_time_as(s, time_format_of(format), us, clock, subsecond);
}

// ---------------------------------------------------------------------------
// Prefixes

struct PrefixParser::Impl {
  struct Format {
    kb::PrefixFormat spec;
    std::unique_ptr<RE2> re;
    int ngroups = 0;  // capturing groups used (at most 15)
    // Which capture index fills which field; 0 when the format has no such group.
    int g_rank = 0, g_local_rank = 0, g_pid = 0, g_gpu = 0, g_node = 0, g_level = 0, g_time = 0, g_program = 0;
    TimeFormat time_format = TimeFormat::kNone;
    detail::FastKind fast = detail::FastKind::kNone;
  };
  std::vector<Format> formats;
  // Bit i of first_byte[b]: format i (i < 64) can match a text that starts with byte b.
  // Formats from the 65th on are always tried.
  std::array<uint64_t, 256> first_byte{};
  uint64_t consuming = 0;  // bit i: format i consumes
  uint64_t id = 0;         // unique per parser ever made: the key of the per-thread memo
  // What parse() reads per format, packed: the fast matcher (when used) and whether the
  // format consumes.
  struct Hot {
    detail::FastKind fast;
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
  bool use_fast = true;
  bool all_fast = false;  // every format has a fast matcher (see PrefixShape::flat)

  // On a match, fills m; the fields of the captures a format does not have stay as they
  // were, so m must come in cleared (fast matchers write only when they match).
  bool match(const Format& f, std::string_view s, FormatMatch& m, bool fast) const {
    if (fast && f.fast != detail::FastKind::kNone) {
      m.matched = detail::match_fast(f.fast, s, m);
      return m.matched;
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
    m.rank = view(f.g_rank);
    m.local_rank = view(f.g_local_rank);
    m.pid = view(f.g_pid);
    m.gpu = view(f.g_gpu);
    m.node = view(f.g_node);
    m.program = view(f.g_program);
    m.level = view(f.g_level);
    m.time = view(f.g_time);
    return true;
  }
};

PrefixParser::PrefixParser() : impl_(std::make_unique<Impl>()) {}
PrefixParser::~PrefixParser() = default;

Result<std::unique_ptr<PrefixParser>> PrefixParser::create(const std::vector<kb::PrefixFormat>& formats,
                                                           Matchers matchers) {
  std::unique_ptr<PrefixParser> p(new PrefixParser());
  p->impl_->use_fast = matchers == Matchers::kFast;
  static std::atomic<uint64_t> next_id{1};
  p->impl_->id = next_id++;
  RE2::Options opts;
  opts.set_log_errors(false);
  opts.set_encoding(RE2::Options::EncodingLatin1);
  for (const auto& f : formats) {
    Impl::Format fmt;
    fmt.spec = f;
    std::string rx = f.regex;
    if (!starts_with(rx, "^")) rx = "^(?:" + rx + ")";
    fmt.re = std::make_unique<RE2>(rx, opts);
    if (!fmt.re->ok()) {
      return make_error(ErrorCode::kInvalidKb, "prefix format does not compile: " + fmt.re->error(),
                        {"formats", f.line, f.id});
    }
    fmt.ngroups = std::min(15, fmt.re->NumberOfCapturingGroups());
    for (const auto& [name, idx] : fmt.re->NamedCapturingGroups()) {
      if (idx > fmt.ngroups) continue;
      if (name == "rank") fmt.g_rank = idx;
      else if (name == "local_rank") fmt.g_local_rank = idx;
      else if (name == "pid") fmt.g_pid = idx;
      else if (name == "gpu") fmt.g_gpu = idx;
      else if (name == "node") fmt.g_node = idx;
      else if (name == "level") fmt.g_level = idx;
      else if (name == "time") fmt.g_time = idx;
      else if (name == "program") fmt.g_program = idx;
    }
    fmt.time_format = time_format_of(f.time_format);
    fmt.fast = detail::fast_kind_for(f.id, f.regex);
    p->impl_->formats.push_back(std::move(fmt));
  }
  // The first-byte table. Every text a format matches lies in [min, max] of
  // PossibleMatchRange, so its first byte lies in [min[0], max[0]]. A format that can
  // match the empty string constrains nothing, unless it consumes (an empty match of a
  // consuming format counts as none).
  auto& table = p->impl_->first_byte;
  for (size_t i = 0; i < p->impl_->formats.size() && i < 64; ++i) {
    const Impl::Format& f = p->impl_->formats[i];
    unsigned lo = 0, hi = 255;
    std::string min, max;
    if (f.re->PossibleMatchRange(&min, &max, 8) && !(min.empty() && !f.spec.consume)) {
      if (!min.empty()) lo = static_cast<unsigned char>(min[0]);
      if (!max.empty()) hi = static_cast<unsigned char>(max[0]);
    }
    for (unsigned b = lo; b <= hi; ++b) table[b] |= uint64_t{1} << i;
    if (f.spec.consume) p->impl_->consuming |= uint64_t{1} << i;
  }
  for (const auto& f : p->impl_->formats)
    p->impl_->hot.push_back({p->impl_->use_fast ? f.fast : detail::FastKind::kNone, f.spec.consume, &f});
  const size_t n = p->impl_->formats.size();
  for (unsigned b = 0; b < 256; ++b) {
    for (size_t i = 0; i < n; ++i) {
      if (i < 64 && ((table[b] >> i) & 1) == 0) continue;
      Impl::Candidate c{static_cast<uint16_t>(i), {}};
      const detail::FastKind kind = p->impl_->hot[i].fast;
      for (unsigned b1 = 0; b1 < 256; ++b1) {
        if (kind == detail::FastKind::kNone || detail::may_start2(kind, static_cast<unsigned char>(b),
                                                                  static_cast<unsigned char>(b1)))
          c.second[b1 >> 6] |= uint64_t{1} << (b1 & 63);
      }
      p->impl_->order[b].push_back(c);
    }
  }
  for (size_t i = 0; i < n; ++i) p->impl_->all_order.push_back(static_cast<uint16_t>(i));
  p->impl_->all_fast = p->impl_->use_fast && std::all_of(p->impl_->hot.begin(), p->impl_->hot.end(), [](const Impl::Hot& h) {
                         return h.fast != detail::FastKind::kNone;
                       });
  return p;
}

size_t PrefixParser::format_count() const { return impl_->formats.size(); }
const kb::PrefixFormat& PrefixParser::format(size_t i) const { return impl_->formats.at(i).spec; }
bool PrefixParser::has_fast_matcher(size_t i) const { return impl_->formats.at(i).fast != detail::FastKind::kNone; }

PrefixParser::FormatMatch PrefixParser::match_format(size_t i, std::string_view text, Matchers matchers) const {
  FormatMatch m;
  if (!impl_->match(impl_->formats.at(i), text, m, matchers == Matchers::kFast)) m = FormatMatch{};
  return m;
}

namespace {

char level_char(std::string_view v) {
  if (v.empty()) return 0;
  switch (v[0]) {
    case 'D': case 'd': case 'T': case 't': return 'D';
    case 'I': case 'i': case 'N': case 'n': return 'I';
    case 'W': case 'w': return 'W';
    case 'E': case 'e': return 'E';
    case 'F': case 'f': case 'C': case 'c': return 'F';
  }
  return 0;
}

int to_int(std::string_view v) {
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

}  // namespace

void Record::to_origin(Origin& o) const {
  o.rank = rank;
  o.local_rank = local_rank;
  o.pid = pid;
  o.gpu = gpu;
  o.node.assign(node.data(), node.size());
  o.time_us = time_us;
  o.clock = clock;
  o.time_subsecond = time_subsecond;
  o.level = level;
}

namespace {

// A stamp of the iso-time format (prefix_fast.h) whose first 17 bytes are the minute of
// the last stamp parsed in full (iso_minute_memo, a valid date and time) needs no check of
// those bytes: its matcher goes on from the seconds. -1: not such a stamp (the caller runs
// the whole matcher); else whether the format matched.
int iso_time_in_memo_minute(std::string_view s, PrefixParser::FormatMatch& m) {
  const IsoMinuteMemo& memo = iso_minute_memo;
  const size_t t0 = !s.empty() && s[0] == '[' ? 1 : 0;
  // (parse_time_as also takes "2026-11-30_10:20:", which this format does not)
  if (!memo.valid || s.size() < t0 + 19 || std::memcmp(s.data() + t0, memo.key, 17) != 0 ||
      (s[t0 + 10] != 'T' && s[t0 + 10] != ' '))
    return -1;
  return detail::iso_time_from_seconds(s, t0, m) ? 1 : 0;
}

// The captures of a format, in the order a match applies them, and FormatMatch's field
// for each.
enum CaptureField : uint8_t {
  kRankField, kLocalRankField, kPidField, kGpuField, kNodeField, kLevelField, kTimeField, kProgramField
};
constexpr int kCaptureFields = 8;
using FormatMatch = PrefixParser::FormatMatch;
constexpr std::string_view FormatMatch::*kCaptureMembers[kCaptureFields] = {
    &FormatMatch::rank, &FormatMatch::local_rank, &FormatMatch::pid,  &FormatMatch::gpu,
    &FormatMatch::node, &FormatMatch::level,      &FormatMatch::time, &FormatMatch::program};

// One non-empty capture of a matching format, applied to rec: the first capture of a
// field that reads wins.
inline void apply_capture(CaptureField field, std::string_view text, TimeFormat time_format, Record& rec) {
  switch (field) {
    case kRankField: if (rec.rank < 0) rec.rank = to_int(text); break;
    case kLocalRankField: if (rec.local_rank < 0) rec.local_rank = to_int(text); break;
    case kPidField: if (rec.pid < 0) rec.pid = to_int(text); break;
    case kGpuField: if (rec.gpu < 0) rec.gpu = to_int(text); break;
    case kNodeField: if (rec.node.empty()) rec.node = text; break;
    case kProgramField: if (rec.program.empty()) rec.program = text; break;
    case kLevelField: if (!rec.level) rec.level = level_char(text); break;
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
  // cleared once read, so m comes clean to the next match.
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
    } else if (!impl.match(*h.format, rest, m, false)) {
      return false;
    }
  }
  return apply_match(impl, i, rest, rec, m, applied_nonconsuming);
}

}  // namespace

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
    uint32_t at;       // where the round starts in `text`
    unsigned char b0, b1;
    uint32_t verify;   // bytes from `at` the failed attempts (and a blind winner) read
    bool exact;        // compare those bytes exactly
    int32_t winner;    // the format that matched, or -1: the message starts here
    bool blind = false;
    uint32_t length = 0;  // a blind winner's match length
    uint8_t ncaptures = 0;  // the non-empty captures of a blind winner
    std::array<Capture, kCaptureFields> captures{};
  };
  std::string text;    // the line, as far as the rounds read it, then NUL bytes (8 more)
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
  uint64_t owner = 0;  // PrefixParser::Impl::id
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

// A matcher that tells no digit from another (every one but syslog's, whose day is
// "[ 0-3]\d"): on texts that differ only in digits it reads the same bytes and matches
// the same way.
bool digit_blind(detail::FastKind kind) {
  return kind != detail::FastKind::kNone && kind != detail::FastKind::k_syslog;
}

// For the memo: when round r's winner (of this kind, at `text`) is digit-blind, notes how
// far it read, its length and its captures, so that replay() need not run it. False when
// the shape cannot be kept (the matcher does not match the padded text as it matched).
bool note_blind_winner(detail::FastKind kind, std::string_view text, PrefixShape::Round& r) {
  if (!digit_blind(kind)) return true;
  detail::PaddedProbe probe{text};
  PrefixParser::FormatMatch pm;
  if (!detail::match_fast(kind, probe, pm) || pm.length > UINT16_MAX) return false;
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

// The rounds: at each position, the formats in order until one matches (at most 12
// rounds). With `shape`, also notes how each round went (false: not memoizable).
bool PrefixParser::parse_rounds(std::string_view line, Record& rec, void* shape_out) const {
  const Impl& impl = *impl_;
  auto* shape = static_cast<PrefixShape*>(shape_out);
  bool memoizable = shape != nullptr;
  std::string_view rest = line;
  // Kept clean between lines (every field read is cleared), so no 128-byte reset per line.
  thread_local FormatMatch m;
  bool applied_nonconsuming = false;
  for (int round = 0; round < 12; ++round) {
    bool any = false;
    if (rest.size() < 2 || !impl.use_fast) {
      // All formats in order (a text this short is rare; RegexOnly is the reference).
      memoizable = false;
      for (uint16_t i : impl.all_order) {
        if (try_format(impl, i, rest, rec, m, applied_nonconsuming)) {
          any = true;
          break;
        }
      }
    } else {
      PrefixShape::Round r{static_cast<uint32_t>(rest.data() - line.data()), static_cast<unsigned char>(rest[0]),
                           static_cast<unsigned char>(rest[1]), 0, false, -1};
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
        if (memoizable) {
          // How far this failed attempt read (only a hand-written matcher can say).
          if (h.fast == detail::FastKind::kNone) {
            memoizable = false;
          } else {
            detail::PaddedProbe probe{before};
            FormatMatch scratch;
            if (detail::match_fast(h.fast, probe, scratch)) memoizable = false;  // an empty match
            r.verify = std::max<uint32_t>(r.verify, static_cast<uint32_t>(std::min<size_t>(probe.reach, UINT32_MAX)));
            if (!digit_blind(h.fast)) r.exact = true;
          }
        }
      }
      if (memoizable && r.winner >= 0) memoizable = note_blind_winner(impl.hot[r.winner].fast, line.substr(r.at), r);
      if (memoizable) shape->rounds.push_back(r);
    }
    if (!any) break;
  }
  rec.message = rest;
  if (memoizable) {
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
  return memoizable;
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

void PrefixParser::parse(std::string_view line, Record& rec) const {
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

std::vector<std::string> PrefixParser::check_samples() const {
  std::vector<std::string> bad;
  for (const auto& f : impl_->formats) {
    for (const auto& s : f.spec.samples) {
      re2::StringPiece input(s);
      if (!RE2::PartialMatch(input, *f.re)) bad.push_back(f.spec.id + ": " + s);
    }
  }
  return bad;
}

// ---------------------------------------------------------------------------
// Tracebacks

namespace {

size_t indent_of(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

bool is_traceback_start(std::string_view s) {
  return s.find("Traceback (most recent call last):") != std::string_view::npos;
}

// rich's header: ╭───── Traceback (most recent call last) ─────╮
bool is_rich_start(std::string_view t) {
  return starts_with(t, "\u256d") && t.find("Traceback (most recent call last)") != std::string_view::npos;
}

// A line of rich's box: │ … │, or its bottom ╰───╯.
bool is_rich_box_line(std::string_view t) { return starts_with(t, "\u2502") || starts_with(t, "\u2570"); }

// `File "path", line N, in function`; false when t is not a frame line.
bool parse_frame_line(std::string_view t, Frame& f) {
  if (!starts_with(t, "File \"")) return false;
  const size_t close = t.find("\", line ", 6);
  if (close == std::string_view::npos) return false;
  f.file = std::string(t.substr(6, close - 6));
  size_t i = close + 8;
  uint64_t n = 0;
  size_t digits = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9' && digits < 12) n = n * 10 + static_cast<uint64_t>(t[i++] - '0'), ++digits;
  if (digits == 0) return false;
  f.line = n;
  f.function.clear();
  if (t.substr(i, 5) == ", in ") f.function = std::string(trim(t.substr(i + 5)));
  return true;
}

// rich's frame line inside the box: `│ /path/train.py:10 in load_batch   │`.
bool parse_rich_frame_line(std::string_view t, Frame& f) {
  t.remove_prefix(std::string_view("\u2502").size());
  if (!t.empty() && t.back() != ' ') {
    const size_t bar = t.rfind("\u2502");
    if (bar != std::string_view::npos) t = t.substr(0, bar);
  }
  t = trim(t);
  const size_t in = t.find(" in ");
  if (in == std::string_view::npos || in == 0) return false;
  std::string_view where = t.substr(0, in);
  const size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == where.size()) return false;
  uint64_t n = 0;
  for (char ch : where.substr(colon + 1)) {
    if (ch < '0' || ch > '9') return false;
    n = n * 10 + static_cast<uint64_t>(ch - '0');
  }
  std::string_view file = where.substr(0, colon);
  if (file.find(' ') != std::string_view::npos) return false;
  f.file = std::string(file);
  f.line = n;
  f.function = std::string(trim(t.substr(in + 4)));
  return !f.function.empty() && f.function.find(' ') == std::string::npos;
}

// Lines that announce that the traceback goes on with a related exception.
bool is_chain_marker(std::string_view t) {
  return starts_with(t, "During handling of the above exception") ||
         starts_with(t, "The above exception was the direct cause") || starts_with(t, "Original Traceback");
}

}  // namespace

bool may_start_traceback(std::string_view message) {
  return message.find("Traceback (most recent call last)") != std::string_view::npos ||
         starts_with(trim(message), "File \"");
}

bool parse_exception_line(std::string_view text, std::string& type, std::string& message) {
  std::string_view t = trim(text);
  size_t i = 0;
  auto ident_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  };
  if (t.empty() || !((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= 'A' && t[0] <= 'Z') || t[0] == '_')) return false;
  while (i < t.size() && ident_char(t[i])) ++i;
  std::string_view name = t.substr(0, i);
  if (name.empty() || name.back() == '.') return false;
  std::string_view last = name.substr(name.rfind('.') == std::string_view::npos ? 0 : name.rfind('.') + 1);
  // A Python exception class name: CamelCase (ValueError, KeyboardInterrupt, CalledProcessError)
  // or a known lower-case module-qualified one (e.g. "_pickle.UnpicklingError" is covered).
  // The C modules' lower-case classes, always written qualified: socket.gaierror,
  // socket.timeout, select.error.
  const bool c_module_class = name.find('.') != std::string_view::npos && (ends_with(last, "error") || last == "timeout");
  if (last.empty() || (!(last[0] >= 'A' && last[0] <= 'Z') && !c_module_class)) return false;
  if (i == t.size()) {
    type = std::string(name);
    message.clear();
    // A bare word is an exception only when it says so.
    return last.find("Error") != std::string_view::npos || last.find("Exception") != std::string_view::npos ||
           last == "KeyboardInterrupt" || last == "SystemExit" || last == "StopIteration";
  }
  if (t[i] != ':') return false;
  type = std::string(name);
  message = std::string(trim(t.substr(i + 1)));
  // "Failures:" or "Note:" with nothing after is a heading, not an exception, unless the
  // name says it is one ("ChildFailedError:" with the details on the next lines).
  if (message.empty())
    return last.find("Error") != std::string_view::npos || last.find("Exception") != std::string_view::npos;
  return true;
}

void TracebackJoiner::add_frame(Frame f) {
  last_frame_ = f.file;
  if (frames_.size() == Traceback::kMaxFrames) {
    frames_.erase(frames_.begin());
    ++frames_dropped_;
  }
  frames_.push_back(std::move(f));
}

std::optional<Traceback> TracebackJoiner::feed(const Record& rec, uint64_t line) {
  std::string_view msg = rec.message;
  std::string_view t = trim(msg);
  if (state_ == State::kIdle) {
    Frame f;
    const bool header = is_traceback_start(msg) || is_rich_start(t);
    // A pasted tail: frames without their header.
    const bool tail = !header && parse_frame_line(t, f);
    if (header || tail) {
      cur_ = Traceback{};
      cur_.first_line = cur_.last_line = line;
      // Frames are indented deeper than the line that holds "Traceback"; the exception
      // line returns to that line's indentation (torchrun's summary indents both). A
      // tail's frames are indented two spaces past it.
      const size_t ind = indent_of(msg);
      base_indent_ = tail ? (ind >= 2 ? ind - 2 : 0) : ind;
      last_frame_.clear();
      frames_.clear();
      frames_dropped_ = 0;
      rich_ = !tail && is_rich_start(t);
      state_ = State::kFrames;
      blank_run_ = 0;
      if (tail) add_frame(std::move(f));
    }
    return std::nullopt;
  }
  size_t ind = indent_of(msg);
  if (t.empty()) {
    // Blank lines separate chained tracebacks; more than two end the traceback.
    if (++blank_run_ > 2) {
      state_ = State::kIdle;
      if (!cur_.exceptions.empty()) return std::move(cur_);
    }
    return std::nullopt;
  }
  if (is_chain_marker(t)) {
    blank_run_ = 0;
    state_ = State::kFrames;
    chained_ = !starts_with(t, "Original Traceback");
    if (chained_ && !cur_.exceptions.empty()) cur_.exceptions.back().chained_cause = true;
    cur_.last_line = line;
    return std::nullopt;
  }
  if (is_traceback_start(t) || is_rich_start(t)) {
    if (chained_) {
      rich_ = is_rich_start(t);
      // "During handling ... another exception occurred:" then the next traceback.
      chained_ = false;
      state_ = State::kFrames;
      cur_.last_line = line;
      return std::nullopt;
    }
    // A new traceback right after a finished one (processes printing one after another).
    std::optional<Traceback> out;
    if (!cur_.exceptions.empty()) out = std::move(cur_);
    state_ = State::kIdle;
    feed(rec, line);
    return out;
  }
  chained_ = false;
  if (state_ == State::kFrames) {
    if (rich_ && is_rich_box_line(t)) {
      Frame f;
      if (starts_with(t, "\u2502") && parse_rich_frame_line(t, f)) add_frame(std::move(f));
      if (starts_with(t, "\u2570")) rich_ = false;  // the box ends; the exception line follows
      cur_.last_line = line;
      blank_run_ = 0;
      return std::nullopt;
    }
    if (ind > base_indent_ || starts_with(t, "File \"") || starts_with(t, "^") || starts_with(t, "~")) {
      Frame f;
      if (parse_frame_line(t, f)) {
        add_frame(std::move(f));
      } else if (starts_with(t, "File \"")) {
        size_t close = t.find('"', 6);
        if (close != std::string_view::npos) last_frame_ = std::string(t.substr(6, close - 6));
      }
      cur_.last_line = line;
      blank_run_ = 0;
      return std::nullopt;
    }
    std::string type, message;
    if (parse_exception_line(t, type, message)) {
      cur_.exceptions.push_back({line, std::move(type), std::move(message), std::string(t), false, last_frame_,
                                 std::move(frames_), frames_dropped_});
      frames_.clear();
      frames_dropped_ = 0;
      cur_.last_line = line;
      state_ = State::kAfterException;
      blank_run_ = 0;
      return std::nullopt;
    }
    // Something else at the base indentation: the traceback was cut (e.g. a killed
    // process); end it, and let this line start a new one if it is a traceback start.
    state_ = State::kIdle;
    std::optional<Traceback> out;
    if (!cur_.exceptions.empty()) out = std::move(cur_);
    if (is_traceback_start(msg)) feed(rec, line);
    return out;
  }
  // kAfterException: deeper-indented lines continue the exception message.
  if (ind > base_indent_ && blank_run_ == 0) {
    cur_.last_line = line;
    return std::nullopt;
  }
  state_ = State::kIdle;
  Traceback done = std::move(cur_);
  if (is_traceback_start(msg)) feed(rec, line);
  return done;
}

std::optional<Traceback> TracebackJoiner::finish() {
  if (state_ == State::kIdle) return std::nullopt;
  state_ = State::kIdle;
  if (cur_.exceptions.empty()) return std::nullopt;
  return std::move(cur_);
}

// ---------------------------------------------------------------------------
// torchrun's failure summary

void LauncherSummaryTracker::close_entry() {
  if (cur_) done_.push_back(std::move(*cur_));
  cur_.reset();
}

bool LauncherSummaryTracker::feed(const Record& rec, uint64_t line) {
  std::string_view t = trim(rec.message);
  if (t.empty() && active_) t = trim(rec.text);
  if (!active_) {
    if (t.find("ChildFailedError") != std::string_view::npos && ends_with(t, ":")) {
      active_ = true;
      rules_ = 0;
      in_root_cause_ = false;
      return true;
    }
    return false;
  }
  if (starts_with(t, "=====")) {
    if (++rules_ >= 2) {
      close_entry();
      active_ = false;
    }
    return true;
  }
  if (starts_with(t, "-----")) {
    close_entry();
    return true;
  }
  if (starts_with(t, "Root Cause")) {
    in_root_cause_ = true;
    return true;
  }
  if (t.size() >= 4 && t[0] == '[' && ends_with(t, "]:")) {
    long long n = 0;
    close_entry();
    cur_.emplace();
    cur_->line = line;
    cur_->root_cause = in_root_cause_;
    if (parse_int(t.substr(1, t.size() - 3), n)) cur_->rank = static_cast<int>(n);
    return true;
  }
  if (!cur_) return true;
  auto field = [&](std::string_view key) -> std::optional<std::string_view> {
    if (!starts_with(t, key)) return std::nullopt;
    std::string_view rest = trim_left(t.substr(key.size()));
    if (rest.empty() || rest[0] != ':') return std::nullopt;
    return trim(rest.substr(1));
  };
  if (auto v = field("time")) {
    cur_->time_text = std::string(*v);
  } else if (auto v = field("host")) {
    cur_->host = std::string(*v);
  } else if (auto v = field("rank")) {
    // "3 (local_rank: 3)"
    long long n = 0;
    size_t sp = v->find(' ');
    if (parse_int(v->substr(0, sp), n)) cur_->rank = static_cast<int>(n);
    size_t lr = v->find("local_rank: ");
    if (lr != std::string_view::npos) {
      std::string_view rest = v->substr(lr + 12);
      if (parse_int(rest.substr(0, rest.find(')')), n)) cur_->local_rank = static_cast<int>(n);
    }
  } else if (auto v = field("exitcode")) {
    // "-9 (pid: 1177)"
    std::string_view num = v->substr(0, v->find(' '));
    long long n = 0;
    bool neg = starts_with(num, "-");
    if (parse_int(neg ? num.substr(1) : num, n)) cur_->exitcode = static_cast<int>(neg ? -n : n);
    size_t p = v->find("pid: ");
    if (p != std::string_view::npos) {
      std::string_view rest = v->substr(p + 5);
      if (parse_int(rest.substr(0, rest.find(')')), n)) cur_->pid = static_cast<int>(n);
    }
  } else if (auto v = field("traceback")) {
    if (!starts_with(*v, "Traceback") && !starts_with(*v, "To enable traceback")) {
      cur_->error = std::string(*v);
      cur_->error_line = line;
    }
  } else {
    std::string type, msg;
    if (parse_exception_line(t, type, msg)) {
      cur_->error = std::string(t);
      cur_->error_line = line;
    }
  }
  return true;
}

std::vector<LauncherFailure> LauncherSummaryTracker::take() {
  close_entry();
  return std::move(done_);
}

}  // namespace ff::record
