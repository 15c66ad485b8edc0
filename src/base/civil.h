// base/civil.h — civil dates and day numbers (days since 1970-01-01) in the proleptic
// Gregorian calendar, both ways, after Howard Hinnant's algorithms
// (http://howardhinnant.github.io/date_algorithms.html). record reads stamps into day
// numbers; analyze writes them back as dates. Pure functions; no time zones.
#pragma once

#include <cstdint>

namespace ff {

// The day number of year y, month m (1-12), day d (1-31).
inline int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
}

struct CivilDate {
  int64_t year, month, day;
};

// The date of day number `days`.
inline CivilDate civil_from_days(int64_t days) {
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (m <= 2), m, d};
}

}  // namespace ff
