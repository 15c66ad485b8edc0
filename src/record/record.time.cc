// record.time.cc — the timestamps of prefix formats (iso, glog, mdhms, syslog, dmesg,
// hms) to microseconds on their clock; the ISO minute of the last stamp remembered per
// thread (IsoMinuteMemo), the last date's day number too.
#include <climits>
#include <cstring>

#include "base/civil.h"
#include "base/strings.h"
#include "record/record_internal.h"

namespace ff::record {

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

// base's days_from_civil; consecutive lines carry the same date: remember the last one
// (per thread).
int64_t days_from_civil_memo(int y, int m, int d) {
  thread_local int ly = INT32_MIN, lm = 0, ld = 0;
  thread_local int64_t ldays = 0;
  if (y != ly || m != lm || d != ld) {
    ldays = ff::days_from_civil(y, m, d);
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

namespace detail {

thread_local constinit IsoMinuteMemo iso_minute_memo;

TimeFormat time_format_of(std::string_view format) {
  if (format == "iso" || format == "torchrun") return TimeFormat::kIso;
  if (format == "glog") return TimeFormat::kGlog;
  if (format == "mdhms") return TimeFormat::kMdhms;
  if (format == "syslog") return TimeFormat::kSyslog;
  if (format == "dmesg") return TimeFormat::kDmesg;
  if (format == "hms") return TimeFormat::kHms;
  return TimeFormat::kNone;
}

// Long because it is one branch per time format, each a few lines; the ISO branch keeps
// its minute memo inline, as it runs for most stamped lines.
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
      minute_us = days_from_civil_memo(y, mo, d) * 86400 * 1000000 + tod_minutes;
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
    us = days_from_civil_memo(kNoYear, mo, d) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == TimeFormat::kMdhms) {
    // 06-30 06:10:12 or 02/10 22:55:41
    if (!digits(s, 0, 2, mo) || (s.size() < 14) || (s[2] != '-' && s[2] != '/') || !digits(s, 3, 2, d) || s[5] != ' ')
      return false;
    if (read_hms(s, 6, tod, subsecond) == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    us = days_from_civil_memo(kNoYear, mo, d) * 86400 * 1000000 + tod;
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
    us = days_from_civil_memo(kNoYear, mo, dd) * 86400 * 1000000 + tod;
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

}  // namespace detail

bool parse_time(std::string_view s, std::string_view format, int64_t& us, Clock& clock, bool& subsecond) {
  return detail::parse_time_as(s, detail::time_format_of(format), us, clock, subsecond);
}

}  // namespace ff::record
