// record/prefix_fast.h — hand-written matchers for the most frequent prefix formats.
//
// Each matcher does exactly what RE2 does with the format's regex anchored at the start
// of the text (leftmost-first, as RE2 and Perl choose among alternatives and repeats):
// same match or no match, same length, same named captures. A matcher is only used for
// the format id and regex it was written for; when kb/formats/prefixes.yaml changes a
// regex (or adds a format), that format is matched by the program compiled from its
// regex (prefix_program.h), which is a little slower, or by RE2 when the regex is outside
// the programs' subset. The matchers are optional: a format needs none to be correct
// and fast. record.test.cc runs every format's samples and random prefixes through the
// matchers, the programs and RE2 and requires identical results.
//
// Internal to the record module. The matchers are inline: PrefixParser::parse calls them
// through match_fast()'s switch, with no call per attempt. A matcher writes into m only
// when it matches.
#pragma once

#include <cstdint>
#include <cstddef>
#include <string_view>

#include "record/record.h"

namespace ff::record::detail {

using M = PrefixParser::FormatMatch;

// The captures a format fills, in the order a match applies them: FormatMatch's member
// and the regex's group name for each (RE2's named groups, the programs' too).
enum CaptureField : uint8_t {
  kRankField,
  kLocalRankField,
  kPidField,
  kGpuField,
  kNodeField,
  kLevelField,
  kTimeField,
  kProgramField
};
inline constexpr int kCaptureFields = 8;
inline constexpr std::string_view M::*kCaptureMembers[kCaptureFields] = {
    &M::rank, &M::local_rank, &M::pid, &M::gpu, &M::node, &M::level, &M::time, &M::program};
inline constexpr std::string_view kCaptureNames[kCaptureFields] = {"rank", "local_rank", "pid",  "gpu",
                                                                   "node", "level",      "time", "program"};

using M = PrefixParser::FormatMatch;
inline constexpr size_t kNo = std::string_view::npos;

// RE2's classes, ASCII only (RE2's \d and \w are ASCII whatever the encoding).
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
inline bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
inline bool is_alpha(char c) { return is_lower(c) || is_upper(c); }
inline bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
inline bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// A text read as if NUL bytes followed it without end, that remembers how far it was
// read. A matcher fails on the text exactly when it fails on this (a cleaned line holds
// no NUL and no format takes one), and then only the bytes before `reach` decided it: a
// text with the same bytes there fails too. PrefixParser's memo uses it.
struct PaddedProbe {
  std::string_view text;
  mutable size_t reach = 0;
  size_t size() const { return SIZE_MAX / 2; }
  bool empty() const { return false; }
  char operator[](size_t i) const {
    if (i + 1 > reach) reach = i + 1;
    return i < text.size() ? text[i] : '\0';
  }
  std::string_view substr(size_t pos, size_t n) const {
    return pos >= text.size() ? std::string_view() : text.substr(pos, n);
  }
};

// s[i] == c, in bounds.
template <class S>
inline bool ch(const S& s, size_t i, char c) {
  return i < s.size() && s[i] == c;
}
// s has w at i (a byte loop: the words are short, a memcmp call costs more).
template <class S>
inline bool lit(const S& s, size_t i, std::string_view w) {
  if (i > s.size() || s.size() - i < w.size()) return false;
  for (size_t k = 0; k < w.size(); ++k) {
    if (s[i + k] != w[k]) return false;
  }
  return true;
}
// n digits at i.
template <class S>
inline bool digits_n(const S& s, size_t i, size_t n) {
  if (i > s.size() || s.size() - i < n) return false;
  for (size_t k = 0; k < n; ++k) {
    if (!is_digit(s[i + k])) return false;
  }
  return true;
}
// The end of the run of bytes from i that satisfy p.
template <class S, typename P>
inline size_t run(const S& s, size_t i, P p) {
  while (i < s.size() && p(s[i])) ++i;
  return i;
}
template <class S>
inline size_t run_digits(const S& s, size_t i) {
  return run(s, i, is_digit);
}
// \d\d:\d\d:\d\d at i
template <class S>
inline bool hms_at(const S& s, size_t i) {
  return digits_n(s, i, 2) && ch(s, i + 2, ':') && digits_n(s, i + 3, 2) && ch(s, i + 5, ':') && digits_n(s, i + 6, 2);
}
// (?:[.,]\d+)? at i (seps lists the allowed separators): the end of what it took.
template <class S>
inline size_t opt_fraction(const S& s, size_t i, bool comma_too) {
  if (i + 1 < s.size() && (s[i] == '.' || (comma_too && s[i] == ',')) && is_digit(s[i + 1]))
    return run_digits(s, i + 1);
  return i;
}

inline constexpr std::string_view kLevels7[] = {"DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL"};
inline constexpr std::string_view kLevels5[] = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"};

// \[\d+,(?P<rank>\d+)\]<(?:stdout|stderr)>:
template <class S>
inline bool mpirun_tag_output(const S& s, M& m) {
  if (!ch(s, 0, '[')) return false;
  size_t i = run_digits(s, 1);
  if (i == 1 || !ch(s, i, ',')) return false;
  size_t r0 = i + 1, r1 = run_digits(s, r0);
  if (r1 == r0 || !lit(s, r1, "]<")) return false;
  size_t j = r1 + 2;
  if (!lit(s, j, "stdout") && !lit(s, j, "stderr")) return false;
  if (!lit(s, j + 6, ">:")) return false;
  m.rank = s.substr(r0, r1 - r0);
  m.length = j + 8;
  return true;
}

// \[(?:[A-Za-z_][A-Za-z_-]*?)?(?P<rank>\d+)\]:[ ]?
// The name and the digits are disjoint classes, so the lazy repeat has one way to end.
template <class S>
inline bool torchrun_rank(const S& s, M& m) {
  if (!ch(s, 0, '[')) return false;
  size_t i = 1;
  if (i < s.size() && (is_alpha(s[i]) || s[i] == '_'))
    i = run(s, i + 1, [](char c) { return is_alpha(c) || c == '_' || c == '-'; });
  size_t d = run_digits(s, i);
  if (d == i || !lit(s, d, "]:")) return false;
  m.rank = s.substr(i, d - i);
  m.length = ch(s, d + 2, ' ') ? d + 3 : d + 2;
  return true;
}

// \((?P<actor>[A-Za-z_][\w.]*) pid=(?P<pid>\d+)(?:, ip=(?P<node>[0-9a-fA-F.:]+))?\)
template <class S>
inline bool ray_actor(const S& s, M& m) {
  if (!ch(s, 0, '(') || s.size() < 2 || !(is_alpha(s[1]) || s[1] == '_')) return false;
  size_t a = run(s, 2, [](char c) { return is_word(c) || c == '.'; });
  if (!lit(s, a, " pid=")) return false;
  size_t p0 = a + 5, p1 = run_digits(s, p0);
  if (p1 == p0) return false;
  if (lit(s, p1, ", ip=")) {
    size_t n0 = p1 + 5, n1 = run(s, n0, [](char c) { return is_hex(c) || c == '.' || c == ':'; });
    if (n1 > n0 && lit(s, n1, ") ")) {
      m.pid = s.substr(p0, p1 - p0);
      m.node = s.substr(n0, n1 - n0);
      m.length = n1 + 2;
      return true;
    }
  }
  if (!lit(s, p1, ") ")) return false;
  m.pid = s.substr(p0, p1 - p0);
  m.length = p1 + 2;
  return true;
}

// (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) (?:stdout|stderr) [FP]
template <class S>
inline bool k8s_cri(const S& s, M& m) {
  if (!(digits_n(s, 0, 4) && ch(s, 4, '-') && digits_n(s, 5, 2) && ch(s, 7, '-') && digits_n(s, 8, 2) &&
        ch(s, 10, 'T') && hms_at(s, 11)))
    return false;
  size_t i = opt_fraction(s, 19, false);
  if (ch(s, i, 'Z')) {
    i += 1;
  } else if ((ch(s, i, '+') || ch(s, i, '-')) && digits_n(s, i + 1, 2) && ch(s, i + 3, ':') && digits_n(s, i + 4, 2)) {
    i += 6;
  } else {
    return false;
  }
  size_t t1 = i;
  if (!ch(s, i, ' ')) return false;
  if (!lit(s, i + 1, "stdout") && !lit(s, i + 1, "stderr")) return false;
  i += 7;
  if (!ch(s, i, ' ') || !(ch(s, i + 1, 'F') || ch(s, i + 1, 'P')) || !ch(s, i + 2, ' ')) return false;
  m.time = s.substr(0, t1);
  m.length = i + 3;
  return true;
}

//  {0,4}(?P<rank>\d{1,5}):
template <class S>
inline bool srun_label(const S& s, M& m) {
  size_t i = 0;
  while (i < 4 && ch(s, i, ' ')) ++i;
  size_t d = run_digits(s, i);
  if (d == i || d - i > 5 || !lit(s, d, ": ")) return false;
  m.rank = s.substr(i, d - i);
  m.length = d + 2;
  return true;
}

// (?P<node>[a-z][a-z0-9-]*[0-9][a-z0-9.-]*):
// The run of [a-z0-9.-] must end at ": "; it matches when a digit comes before any '.'.
template <class S>
inline bool pdsh_host(const S& s, M& m) {
  if (s.empty() || !is_lower(s[0])) return false;
  size_t k = 1;
  bool dot = false, ok = false;
  while (k < s.size() && (is_lower(s[k]) || is_digit(s[k]) || s[k] == '.' || s[k] == '-')) {
    if (is_digit(s[k]) && !dot) ok = true;
    if (s[k] == '.') dot = true;
    ++k;
  }
  if (!ok || !lit(s, k, ": ")) return false;
  m.node = s.substr(0, k);
  m.length = k + 2;
  return true;
}

// \[?(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?(?: \|)?:?
// iso_time from its seconds on, the stamp starting at t0 (after the optional '['), its
// first 17 bytes ("2026-11-30 10:20:") already checked. PrefixParser calls it directly for
// a stamp in the minute of the last one it parsed.
template <class S>
inline bool iso_time_from_seconds(const S& s, size_t t0, M& m) {
  if (!digits_n(s, t0 + 17, 2)) return false;
  size_t i = opt_fraction(s, t0 + 19, true);
  if (ch(s, i, 'Z')) {
    ++i;
  } else if ((ch(s, i, '+') || ch(s, i, '-')) && digits_n(s, i + 1, 2)) {
    size_t p = i + 3;
    if (ch(s, p, ':')) {
      if (digits_n(s, p + 1, 2)) i = p + 3;
    } else if (digits_n(s, p, 2)) {
      i = p + 2;
    }
  }
  size_t t1 = i;
  if (ch(s, i, ']')) ++i;
  size_t end = kNo;
  if (lit(s, i, " |")) {
    if (ch(s, i + 2, ':') && ch(s, i + 3, ' ')) {
      end = i + 4;
    } else if (ch(s, i + 2, ' ')) {
      end = i + 3;
    }
  }
  if (end == kNo) {
    if (ch(s, i, ':') && ch(s, i + 1, ' ')) {
      end = i + 2;
    } else if (ch(s, i, ' ')) {
      end = i + 1;
    } else {
      return false;
    }
  }
  m.time = s.substr(t0, t1 - t0);
  m.length = end;
  return true;
}

template <class S>
inline bool iso_time(const S& s, M& m) {
  const size_t t0 = ch(s, 0, '[') ? 1 : 0;
  if (!(digits_n(s, t0, 4) && ch(s, t0 + 4, '-') && digits_n(s, t0 + 5, 2) && ch(s, t0 + 7, '-') &&
        digits_n(s, t0 + 8, 2) && (ch(s, t0 + 10, 'T') || ch(s, t0 + 10, ' ')) && digits_n(s, t0 + 11, 2) &&
        ch(s, t0 + 13, ':') && digits_n(s, t0 + 14, 2) && ch(s, t0 + 16, ':')))
    return false;
  return iso_time_from_seconds(s, t0, m);
}

// \[?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?(?: \||:)? +
template <class S>
inline bool level_word(const S& s, M& m) {
  size_t i = ch(s, 0, '[') ? 1 : 0;
  for (std::string_view w : kLevels7) {
    if (!lit(s, i, w)) continue;
    size_t j = i + w.size();
    if (ch(s, j, ']')) ++j;
    size_t sp;
    if (lit(s, j, " |") && ch(s, j + 2, ' ')) {
      sp = j + 2;
    } else if (ch(s, j, ':') && ch(s, j + 1, ' ')) {
      sp = j + 1;
    } else if (ch(s, j, ' ')) {
      sp = j;
    } else {
      continue;
    }
    m.level = s.substr(i, w.size());
    m.length = run(s, sp, [](char c) { return c == ' '; });
    return true;
  }
  return false;
}

// (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL):(?:[\w.]+):
template <class S>
inline bool python_logging_basic(const S& s, M& m) {
  for (std::string_view w : kLevels5) {
    if (!lit(s, 0, w) || !ch(s, w.size(), ':')) continue;
    size_t k = run(s, w.size() + 1, [](char c) { return is_word(c) || c == '.'; });
    if (k == w.size() + 1 || !ch(s, k, ':')) continue;
    m.level = s.substr(0, w.size());
    m.length = k + 1;
    return true;
  }
  return false;
}

inline bool path_char(char c) { return is_word(c) || c == '.' || c == '/' || c == '-'; }

// (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<time>\d\d-\d\d \d\d:\d\d:\d\d)(?:\.\d+)? [\w./-]+:\d+\]
template <class S>
inline bool vllm(const S& s, M& m) {
  for (std::string_view w : kLevels5) {
    if (!lit(s, 0, w) || !ch(s, w.size(), ' ')) continue;
    size_t t0 = w.size() + 1;
    if (!(digits_n(s, t0, 2) && ch(s, t0 + 2, '-') && digits_n(s, t0 + 3, 2) && ch(s, t0 + 5, ' ') &&
          hms_at(s, t0 + 6)))
      continue;
    size_t t1 = t0 + 14;
    size_t i = opt_fraction(s, t1, false);
    if (!ch(s, i, ' ')) continue;
    size_t k = run(s, i + 1, path_char);
    if (k == i + 1 || !ch(s, k, ':')) continue;
    size_t d = run_digits(s, k + 1);
    if (d == k + 1 || !lit(s, d, "] ")) continue;
    m.level = s.substr(0, w.size());
    m.time = s.substr(t0, t1 - t0);
    m.length = d + 2;
    return true;
  }
  return false;
}

// (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \[(?P<time>\d\d/\d\d \d\d:\d\d:\d\d) [\w.]+\]:
template <class S>
inline bool detectron2(const S& s, M& m) {
  for (std::string_view w : kLevels5) {
    if (!lit(s, 0, w) || !lit(s, w.size(), " [")) continue;
    size_t t0 = w.size() + 2;
    if (!(digits_n(s, t0, 2) && ch(s, t0 + 2, '/') && digits_n(s, t0 + 3, 2) && ch(s, t0 + 5, ' ') &&
          hms_at(s, t0 + 6)))
      continue;
    size_t t1 = t0 + 14;
    if (!ch(s, t1, ' ')) continue;
    size_t k = run(s, t1 + 1, [](char c) { return is_word(c) || c == '.'; });
    if (k == t1 + 1 || !lit(s, k, "]: ")) continue;
    m.level = s.substr(0, w.size());
    m.time = s.substr(t0, t1 - t0);
    m.length = k + 3;
    return true;
  }
  return false;
}

inline bool glog_level(char c) { return c == 'I' || c == 'W' || c == 'E' || c == 'F'; }

// \[?(?P<level>[IWEF])(?P<time>\d{4} \d\d:\d\d:\d\d\.\d+) +\d+ [\w./-]+:\d+\]\]? ?
template <class S>
inline bool glog(const S& s, M& m) {
  size_t lv = ch(s, 0, '[') ? 1 : 0;
  if (lv >= s.size() || !glog_level(s[lv])) return false;
  size_t t0 = lv + 1;
  if (!(digits_n(s, t0, 4) && ch(s, t0 + 4, ' ') && hms_at(s, t0 + 5) && ch(s, t0 + 13, '.'))) return false;
  size_t t1 = run_digits(s, t0 + 14);
  if (t1 == t0 + 14) return false;
  size_t sp = run(s, t1, [](char c) { return c == ' '; });
  if (sp == t1) return false;
  size_t d = run_digits(s, sp);
  if (d == sp || !ch(s, d, ' ')) return false;
  size_t k = run(s, d + 1, path_char);
  if (k == d + 1 || !ch(s, k, ':')) return false;
  size_t l = run_digits(s, k + 1);
  if (l == k + 1 || !ch(s, l, ']')) return false;
  size_t e = l + 1;
  if (ch(s, e, ']')) ++e;
  if (ch(s, e, ' ')) ++e;
  m.level = s.substr(lv, 1);
  m.time = s.substr(t0, t1 - t0);
  m.length = e;
  return true;
}

// \[(?P<level>[IWEF]) [\w./-]+:\d+\]
template <class S>
inline bool c10_bracket(const S& s, M& m) {
  if (!ch(s, 0, '[') || s.size() < 2 || !glog_level(s[1]) || !ch(s, 2, ' ')) return false;
  size_t k = run(s, 3, path_char);
  if (k == 3 || !ch(s, k, ':')) return false;
  size_t d = run_digits(s, k + 1);
  if (d == k + 1 || !lit(s, d, "] ")) return false;
  m.level = s.substr(1, 1);
  m.length = d + 2;
  return true;
}

// \[ *(?P<time>\d+\.\d+)\]
template <class S>
inline bool dmesg(const S& s, M& m) {
  if (!ch(s, 0, '[')) return false;
  size_t t0 = run(s, 1, [](char c) { return c == ' '; });
  size_t a = run_digits(s, t0);
  if (a == t0 || !ch(s, a, '.')) return false;
  size_t b = run_digits(s, a + 1);
  if (b == a + 1 || !lit(s, b, "] ")) return false;
  m.time = s.substr(t0, b - t0);
  m.length = b + 2;
  return true;
}

}  // namespace ff::record::detail

#include "record/prefix_fast.syslog.h"  // IWYU pragma: export

namespace ff::record::detail {

// \[(?P<time>\d\d:\d\d:\d\d(?:\.\d+)?)\]:?
template <class S>
inline bool bracket_time(const S& s, M& m) {
  if (!ch(s, 0, '[') || !hms_at(s, 1)) return false;
  size_t t1 = opt_fraction(s, 9, false);
  if (!ch(s, t1, ']')) return false;
  size_t i = t1 + 1;
  size_t e;
  if (ch(s, i, ':') && ch(s, i + 1, ' ')) {
    e = i + 2;
  } else if (ch(s, i, ' ')) {
    e = i + 1;
  } else {
    return false;
  }
  m.time = s.substr(1, t1 - 1);
  m.length = e;
  return true;
}

// \[[Rr]ank ?(?P<rank>\d+)\]:? ?
template <class S>
inline bool rank_tag(const S& s, M& m) {
  if (!ch(s, 0, '[') || !(ch(s, 1, 'R') || ch(s, 1, 'r')) || !lit(s, 2, "ank")) return false;
  size_t i = ch(s, 5, ' ') ? 6 : 5;
  size_t d = run_digits(s, i);
  if (d == i || !ch(s, d, ']')) return false;
  size_t e = d + 1;
  if (ch(s, e, ':')) ++e;
  if (ch(s, e, ' ')) ++e;
  m.rank = s.substr(i, d - i);
  m.length = e;
  return true;
}

// (?P<node>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<gpu>\d+)\]
template <class S>
inline bool nccl_line(const S& s, M& m) {
  size_t k = run(s, 0, [](char c) { return is_word(c) || c == '.' || c == '-'; });
  if (k == 0 || !ch(s, k, ':')) return false;
  size_t p1 = run_digits(s, k + 1);
  if (p1 == k + 1 || !ch(s, p1, ':')) return false;
  size_t t1 = run_digits(s, p1 + 1);
  if (t1 == p1 + 1 || !lit(s, t1, " [")) return false;
  size_t g1 = run_digits(s, t1 + 2);
  if (g1 == t1 + 2 || !lit(s, g1, "] ")) return false;
  m.node = s.substr(0, k);
  m.pid = s.substr(k + 1, p1 - k - 1);
  m.gpu = s.substr(t1 + 2, g1 - t1 - 2);
  m.length = g1 + 2;
  return true;
}

// \[pod/(?P<node>[a-z0-9][a-z0-9.-]*)/[a-z0-9-]*\]
// Neither class holds '/' or ']', so each run has one way to end.
template <class S>
inline bool kubectl_prefix(const S& s, M& m) {
  if (!lit(s, 0, "[pod/") || s.size() < 6 || !(is_lower(s[5]) || is_digit(s[5]))) return false;
  size_t n1 = run(s, 6, [](char c) { return is_lower(c) || is_digit(c) || c == '.' || c == '-'; });
  if (!ch(s, n1, '/')) return false;
  size_t c1 = run(s, n1 + 1, [](char c) { return is_lower(c) || is_digit(c) || c == '-'; });
  if (!lit(s, c1, "] ")) return false;
  m.node = s.substr(5, n1 - 5);
  m.length = c1 + 2;
  return true;
}

enum class FastKind : uint8_t {
  kNone,
  k_mpirun_tag_output,
  k_torchrun_rank,
  k_ray_actor,
  k_k8s_cri,
  k_srun_label,
  k_pdsh_host,
  k_iso_time,
  k_level_word,
  k_python_logging_basic,
  k_vllm,
  k_detectron2,
  k_glog,
  k_c10_bracket,
  k_dmesg,
  k_syslog,
  k_syslog_iso,
  k_syslog_5424,
  k_bracket_time,
  k_rank_tag,
  k_nccl_line,
  k_kubectl_prefix,
};

// The matcher of a kind, called through a switch so that the parser's loop inlines it.
template <class S>
inline bool match_fast(FastKind kind, const S& s, M& m) {
  switch (kind) {
    case FastKind::k_mpirun_tag_output: return mpirun_tag_output(s, m);
    case FastKind::k_torchrun_rank: return torchrun_rank(s, m);
    case FastKind::k_ray_actor: return ray_actor(s, m);
    case FastKind::k_k8s_cri: return k8s_cri(s, m);
    case FastKind::k_srun_label: return srun_label(s, m);
    case FastKind::k_pdsh_host: return pdsh_host(s, m);
    case FastKind::k_iso_time: return iso_time(s, m);
    case FastKind::k_level_word: return level_word(s, m);
    case FastKind::k_python_logging_basic: return python_logging_basic(s, m);
    case FastKind::k_vllm: return vllm(s, m);
    case FastKind::k_detectron2: return detectron2(s, m);
    case FastKind::k_glog: return glog(s, m);
    case FastKind::k_c10_bracket: return c10_bracket(s, m);
    case FastKind::k_dmesg: return dmesg(s, m);
    case FastKind::k_syslog: return syslog(s, m);
    case FastKind::k_syslog_iso: return syslog_iso(s, m);
    case FastKind::k_syslog_5424: return syslog_5424(s, m);
    case FastKind::k_bracket_time: return bracket_time(s, m);
    case FastKind::k_rank_tag: return rank_tag(s, m);
    case FastKind::k_nccl_line: return nccl_line(s, m);
    case FastKind::k_kubectl_prefix: return kubectl_prefix(s, m);
    case FastKind::kNone: break;
  }
  return false;
}

// Whether a text that starts with b0 b1 can match the kind's format at all (false: it
// cannot; true: it may). The parser skips a format when this says no, so it must never
// say no to a text the matcher would take: record.test.cc checks it on every match.
inline bool may_start2(FastKind kind, unsigned char b0, unsigned char b1) {
  auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  auto lower = [](unsigned char c) { return c >= 'a' && c <= 'z'; };
  auto alpha = [&](unsigned char c) { return lower(c) || (c >= 'A' && c <= 'Z'); };
  auto word = [&](unsigned char c) { return alpha(c) || digit(c) || c == '_'; };
  auto iwef = [](unsigned char c) { return c == 'I' || c == 'W' || c == 'E' || c == 'F'; };
  // Second letters of DEBUG INFO WARNING WARN ERROR CRITICAL FATAL.
  auto level2 = [](unsigned char c) { return c == 'E' || c == 'N' || c == 'A' || c == 'R'; };
  auto level1 = [](unsigned char c) { return c == 'D' || c == 'I' || c == 'W' || c == 'E' || c == 'C' || c == 'F'; };
  switch (kind) {
    case FastKind::k_mpirun_tag_output: return digit(b1);
    case FastKind::k_torchrun_rank: return alpha(b1) || b1 == '_' || digit(b1);
    case FastKind::k_ray_actor: return alpha(b1) || b1 == '_';
    case FastKind::k_k8s_cri: return digit(b1);
    case FastKind::k_srun_label: return b0 == ' ' ? (b1 == ' ' || digit(b1)) : (digit(b1) || b1 == ':');
    case FastKind::k_pdsh_host: return lower(b1) || digit(b1) || b1 == '.' || b1 == '-';
    case FastKind::k_iso_time: return digit(b1);
    case FastKind::k_level_word: return b0 == '[' ? level1(b1) : level2(b1);
    case FastKind::k_python_logging_basic:
    case FastKind::k_vllm:
    case FastKind::k_detectron2: return level2(b1);
    case FastKind::k_glog: return b0 == '[' ? iwef(b1) : digit(b1);
    case FastKind::k_c10_bracket: return iwef(b1);
    case FastKind::k_dmesg: return b1 == ' ' || digit(b1);
    case FastKind::k_syslog: return lower(b1);
    case FastKind::k_syslog_iso: return digit(b1);
    case FastKind::k_syslog_5424: return b0 == '<' ? digit(b1) : (b1 == ' ' || digit(b1));
    case FastKind::k_bracket_time: return digit(b1);
    case FastKind::k_rank_tag: return b1 == 'R' || b1 == 'r';
    case FastKind::k_nccl_line: return word(b1) || b1 == '.' || b1 == '-' || b1 == ':';
    case FastKind::k_kubectl_prefix: return b1 == 'p';
    case FastKind::kNone: break;
  }
  return true;
}

// The kind written for this exact format (id and regex), or kNone.
FastKind fast_kind_for(std::string_view id, std::string_view regex);

}  // namespace ff::record::detail
