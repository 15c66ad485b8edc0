#include "metrics/metrics.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"

namespace ff::metrics {

Aliases Aliases::from_kb(const std::vector<kb::MetricSpec>& specs) {
  Aliases a;
  for (const auto& s : specs) {
    MetricId id = static_cast<MetricId>(a.names_.size());
    a.names_.push_back(s.name);
    if (s.name == "step") a.step_ = id;
    for (const auto& k : s.keys) a.keys_.emplace(to_lower(k), id);
    for (const auto& u : s.units) a.units_.emplace(u.unit, std::make_pair(id, u.scale));
  }
  return a;
}

MetricId Aliases::by_key(std::string_view key) const {
  auto it = keys_.find(key);
  return it == keys_.end() ? kNoMetric : it->second;
}

MetricId Aliases::by_unit(std::string_view unit) const {
  auto it = units_.find(unit);
  return it == units_.end() ? kNoMetric : it->second.first;
}

double Aliases::unit_scale(std::string_view unit) const {
  auto it = units_.find(unit);
  return it == units_.end() ? 1.0 : it->second.second;
}

MetricId Aliases::id(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return static_cast<MetricId>(i);
  }
  return kNoMetric;
}

namespace {

bool is_sep(char c) { return c == '|' || c == ',' || c == ';' || c == '{' || c == '}' || c == '\t'; }

bool ieq(std::string_view a, const char* b) {
  size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// Reads a number at s[i]: decimal, scientific, nan/inf words (any case, optional sign).
// Returns the length read (0 when there is no number).
size_t read_number(std::string_view s, size_t i, double& v) {
  size_t j = i;
  bool neg = false;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) neg = s[j++] == '-';
  // nan / inf / infinity as words
  for (const char* w : {"infinity", "inf", "nan"}) {
    size_t n = std::strlen(w);
    if (j + n <= s.size() && ieq(s.substr(j, n), w) &&
        (j + n == s.size() || !std::isalnum(static_cast<unsigned char>(s[j + n])))) {
      v = w[0] == 'n' ? std::nan("") : (neg ? -INFINITY : INFINITY);
      return j + n - i;
    }
  }
  if (j >= s.size() || !(std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) return 0;
  const char* b = s.data() + i;
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc()) return 0;
  return static_cast<size_t>(r.ptr - (s.data() + i));
}

// The key before a number: the text back to the previous separator or number, with
// ':' '=' quotes and spaces trimmed, lower-cased ("lm loss", "learning_rate").
std::string_view key_before(std::string_view s, size_t num_start, size_t floor, std::string& buf) {
  size_t e = num_start;
  while (e > floor && (s[e - 1] == ' ' || s[e - 1] == ':' || s[e - 1] == '=' || s[e - 1] == '\'' || s[e - 1] == '"' ||
                       s[e - 1] == '['))
    --e;
  size_t b = e;
  while (b > floor && !is_sep(s[b - 1]) && !(std::isdigit(static_cast<unsigned char>(s[b - 1])) && b < e &&
                                              s[b] == ' '))
    --b;
  std::string_view k = trim(s.substr(b, e - b));
  // Keys start with a letter: drop brackets, quotes and the like in front ("] step", "'loss").
  while (!k.empty() && !std::isalpha(static_cast<unsigned char>(k.front()))) k.remove_prefix(1);
  // "epoch 0 step" -> the last words after a number belong to this key
  buf.assign(k);
  for (char& c : buf) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return buf;
}

}  // namespace

bool parse_progress_line(std::string_view s, const Aliases& a, ProgressLine& out) {
  out.has_step = false;
  out.samples.clear();
  bool has_loss = false;
  MetricId loss = a.id("loss");
  std::string keybuf;
  size_t floor = 0;  // keys never reach back past the previous number
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    bool starts = std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'n' ||
                  c == 'N' || c == 'i' || c == 'I';
    // A number must start a token: not inside a word ("fp16", "v2") or an identifier.
    if (!starts || (i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_' || s[i - 1] == '.' ||
                              s[i - 1] == '/'))) {
      ++i;
      continue;
    }
    double v = 0;
    size_t n = read_number(s, i, v);
    if (n == 0 || (n == 1 && (c == '-' || c == '+' || c == '.'))) {
      ++i;
      continue;
    }
    size_t end = i + n;
    // Not a number if a letter or '_' follows directly, except a unit ("9.5it/s", "43ms").
    std::string_view key = key_before(s, i, floor, keybuf);
    // The unit right after the number: "ms/step", "it/s", "tokens/s", "GiB".
    size_t u = end;
    while (u < s.size() && s[u] == ' ' && u - end < 1) ++u;
    size_t ue = u;
    while (ue < s.size() && !is_sep(s[ue]) && s[ue] != ' ' && s[ue] != ']') ++ue;
    std::string_view unit = s.substr(u, ue - u);
    MetricId m = kNoMetric;
    double scale = 1.0;
    if (!key.empty()) m = a.by_key(key);
    if (m == kNoMetric && !unit.empty()) {
      m = a.by_unit(unit);
      scale = a.unit_scale(unit);
    }
    // "step 12/60", "iteration 100/ 500000": the total after the slash is not a value.
    size_t next = end;
    if (next < s.size() && s[next] == '/') {
      size_t k = next + 1;
      while (k < s.size() && s[k] == ' ') ++k;
      double total;
      size_t tn = read_number(s, k, total);
      if (tn > 0) next = k + tn;
    }
    if (m != kNoMetric) {
      if (m == a.step()) {
        if (!out.has_step && std::isfinite(v)) {
          out.has_step = true;
          out.step = v;
        }
      } else {
        out.samples.push_back({m, v * scale});
        if (m == loss) has_loss = true;
      }
      if (m == a.by_unit(unit)) next = ue;  // the unit was consumed
    }
    // A list "lr=[0.0001, 0.0001]": only the first element counts.
    if (!key.empty() && i > 0 && s[i - 1] == '[') {
      size_t close = s.find(']', next);
      if (close != std::string_view::npos) next = close + 1;
    }
    floor = next;
    i = next;
  }
  return (out.has_step || has_loss) && !out.samples.empty();
}

namespace {
std::string capped(std::string_view t) { return std::string(t.substr(0, 1000)); }
}  // namespace

void Series::add(const Point& p, std::string_view text) {
  if (count == 0) first = p;
  ++count;
  last = p;
  if (std::isfinite(p.value)) {
    if (!has_finite || p.value < min) min = p.value, min_point = p, min_text = capped(text);
    if (!has_finite || p.value > max) max = p.value, max_point = p, max_text = capped(text);
    has_finite = true;
  } else if (!has_nonfinite) {
    has_nonfinite = true;
    first_nonfinite = p;
    nonfinite_text = capped(text);
  }
  // Keep every stride-th point; when full, drop every other kept point and double the
  // stride, so the kept points stay evenly spread over the whole run.
  if (++seen_since_kept >= stride || points.empty()) {
    seen_since_kept = 0;
    points.push_back(p);
    if (points.size() >= kMaxPoints) {
      size_t w = 0;
      for (size_t r = 0; r < points.size(); r += 2) points[w++] = points[r];
      points.resize(w);
      stride *= 2;
    }
  }
}

void SeriesSet::add_sample(int rank, MetricId metric, double step, double value, uint32_t source, uint64_t line_no,
                           int64_t time_us, std::string_view text) {
  series_[{metric, rank}].add(Point{step, value, source, line_no, time_us}, text);
}

void SeriesSet::add(int rank, const ProgressLine& line, uint32_t source, uint64_t line_no, int64_t time_us,
                    std::string_view text) {
  double step = line.has_step ? line.step : (last_step_.count(rank) ? last_step_[rank] + 1 : 1);
  last_step_[rank] = step;
  for (const Sample& s : line.samples) add_sample(rank, s.metric, step, s.value, source, line_no, time_us, text);
  last_progress_[rank] = Point{step, 0, source, line_no, time_us};
}

}  // namespace ff::metrics
