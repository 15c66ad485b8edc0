// record/prefix_fast.syslog.h — the hand-written matchers of syslog's formats (RFC 3164,
// rsyslog's high-precision file format, RFC 5424), with the same contract as the others
// in prefix_fast.h, which includes this file after its helpers.
#pragma once

#include <cstddef>
#include <string_view>

namespace ff::record::detail {

// (?P<node>[\w.-]+) (?P<program>[\w./-]+)(?:\[(?P<pid>\d+)\]:?|:) at i: syslog's host and tag,
// after its time (RFC 3164, and rsyslog's file formats). Fills m and returns true when
// it matches.
template <class S>
inline bool syslog_host_tag(const S& s, size_t i, M& m) {
  size_t n1 = run(s, i, [](char c) { return is_word(c) || c == '.' || c == '-'; });
  if (n1 == i || !ch(s, n1, ' ')) return false;
  size_t p1 = run(s, n1 + 1, path_char);
  if (p1 == n1 + 1) return false;
  if (ch(s, p1, '[')) {
    size_t d = run_digits(s, p1 + 1);
    if (d > p1 + 1 && ch(s, d, ']')) {
      // "tag[pid]: ", or "tag[pid] " as rsyslog writes a tag it got from RFC 5424
      size_t e = ch(s, d + 1, ':') && ch(s, d + 2, ' ') ? d + 3 : ch(s, d + 1, ' ') ? d + 2 : kNo;
      if (e != kNo) {
        m.node = s.substr(i, n1 - i);
        m.program = s.substr(n1 + 1, p1 - n1 - 1);
        m.pid = s.substr(p1 + 1, d - p1 - 1);
        m.length = e;
        return true;
      }
    }
  }
  if (!lit(s, p1, ": ")) return false;
  m.node = s.substr(i, n1 - i);
  m.program = s.substr(n1 + 1, p1 - n1 - 1);
  m.length = p1 + 2;
  return true;
}

// (?P<time>[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d) (?P<node>[\w.-]+) (?P<program>[\w./-]+)(?:\[(?P<pid>\d+)\]:?|:)
template <class S>
inline bool syslog(const S& s, M& m) {
  if (s.size() < 16 || !is_upper(s[0]) || !is_lower(s[1]) || !is_lower(s[2]) || s[3] != ' ' ||
      !(s[4] == ' ' || (s[4] >= '0' && s[4] <= '3')) || !is_digit(s[5]) || s[6] != ' ' || !hms_at(s, 7) || s[15] != ' ')
    return false;
  if (!syslog_host_tag(s, 16, m)) return false;
  m.time = s.substr(0, 15);
  return true;
}

// \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) at i: where it ends, or kNo.
template <class S>
inline size_t iso_t_zone(const S& s, size_t i) {
  if (!(digits_n(s, i, 4) && ch(s, i + 4, '-') && digits_n(s, i + 5, 2) && ch(s, i + 7, '-') && digits_n(s, i + 8, 2) &&
        ch(s, i + 10, 'T') && hms_at(s, i + 11)))
    return kNo;
  size_t j = opt_fraction(s, i + 19, false);
  if (ch(s, j, 'Z')) return j + 1;
  if ((ch(s, j, '+') || ch(s, j, '-')) && digits_n(s, j + 1, 2) && ch(s, j + 3, ':') && digits_n(s, j + 4, 2))
    return j + 6;
  return kNo;
}

// (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}[+-]\d\d:\d\d) (?P<node>[\w.-]+) (?P<program>[\w./-]+)(?:\[(?P<pid>\d+)\]:?|:)
template <class S>
inline bool syslog_iso(const S& s, M& m) {
  if (!(digits_n(s, 0, 4) && ch(s, 4, '-') && digits_n(s, 5, 2) && ch(s, 7, '-') && digits_n(s, 8, 2) &&
        ch(s, 10, 'T') && hms_at(s, 11) && ch(s, 19, '.') && digits_n(s, 20, 6) && (ch(s, 26, '+') || ch(s, 26, '-')) &&
        digits_n(s, 27, 2) && ch(s, 29, ':') && digits_n(s, 30, 2)))
    return false;
  const size_t t1 = 32;
  if (!ch(s, t1, ' ') || !syslog_host_tag(s, t1 + 1, m)) return false;
  m.time = s.substr(0, t1);
  return true;
}

// RFC 5424: (?:<\d{1,3}>)?\d{1,3} (?P<time>ISO) (?P<node>[\w.-]+) (?P<program>[\w./-]+) (?:(?P<pid>\d+)|-) [\w./-]+ (?:-|(?:\[[^\]]*\])+)
template <class S>
inline bool syslog_5424(const S& s, M& m) {
  size_t i = 0;
  if (ch(s, 0, '<')) {
    const size_t d = run_digits(s, 1);
    if (d == 1 || d - 1 > 3 || !ch(s, d, '>')) return false;
    i = d + 1;
  }
  // The version (1 today) as \d{1,3}: a matcher blind to which digit, for the memo.
  const size_t v = run_digits(s, i);
  if (v == i || v - i > 3 || !ch(s, v, ' ')) return false;
  const size_t t0 = v + 1, t1 = iso_t_zone(s, t0);
  if (t1 == kNo || !ch(s, t1, ' ')) return false;
  const size_t n0 = t1 + 1, n1 = run(s, n0, [](char c) { return is_word(c) || c == '.' || c == '-'; });
  if (n1 == n0 || !ch(s, n1, ' ')) return false;
  const size_t a0 = n1 + 1, a1 = run(s, a0, path_char);
  if (a1 == a0 || !ch(s, a1, ' ')) return false;
  const size_t p0 = a1 + 1;
  size_t p1 = run_digits(s, p0);
  const bool has_pid = p1 > p0;
  if (!has_pid) {
    if (!ch(s, p0, '-')) return false;
    p1 = p0 + 1;
  }
  if (!ch(s, p1, ' ')) return false;
  const size_t g0 = p1 + 1, g1 = run(s, g0, path_char);
  if (g1 == g0 || !ch(s, g1, ' ')) return false;
  size_t j = g1 + 1;
  if (ch(s, j, '-')) {
    j += 1;
  } else {
    if (!ch(s, j, '[')) return false;
    while (ch(s, j, '[')) {
      size_t k = j + 1;
      // [^\]]*: a cleaned line holds no NUL, and the probe reads NUL past the text's end.
      while (k < s.size() && s[k] != ']' && s[k] != '\0') ++k;
      if (!ch(s, k, ']')) return false;
      j = k + 1;
    }
  }
  if (!ch(s, j, ' ')) return false;
  m.time = s.substr(t0, t1 - t0);
  m.node = s.substr(n0, n1 - n0);
  m.program = s.substr(a0, a1 - a0);
  if (has_pid) m.pid = s.substr(p0, p1 - p0);
  m.length = j + 1;
  return true;
}
}  // namespace ff::record::detail
