// metrics.progress.cc — reading progress lines: numbers (SWAR digit runs, plain
// decimals without strtod), the keys before them, the tokeniser (parse_progress_line) and
// ProgressParser, which remembers a line's shape (its text without the numbers) and reads
// a line of a known shape by comparing the text between its numbers. The number readers
// stay in this file: the tokeniser and the shapes call them for every number, inlined.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"
#include "metrics/metrics.h"

namespace ff::metrics {

namespace {

// ASCII classes: the C locale's, without a call per byte.
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
inline char to_lower_ascii(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool is_sep(char c) { return c == '|' || c == ',' || c == ';' || c == '{' || c == '}' || c == '\t'; }

// a (any case) equals the lower-case word w.
bool ieq(std::string_view a, std::string_view w) {
  if (a.size() != w.size()) return false;
  for (size_t i = 0; i < w.size(); ++i) {
    if (to_lower_ascii(a[i]) != w[i]) return false;
  }
  return true;
}

// 0x80 in each byte of x that is an ASCII digit, 0 in the others (no carry crosses a
// byte: each is at most 0x7f + 0x50 after its top bit is cleared).
inline uint64_t digit_bytes(uint64_t x) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  const uint64_t low7 = x & ~kHigh;
  return ((low7 + 0x5050505050505050ull) & ~(low7 + 0x4646464646464646ull) & ~x & kHigh);
}

// The run of ASCII digits at p (8 bytes readable), up to 8: its length, and its value
// in `value` (the eight-digit SWAR sum, with the bytes after the run shifted out).
inline int swar_digits(const char* p, uint64_t& value) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  const uint64_t non_digits = ~digit_bytes(w) & 0x8080808080808080ull;
  const int k = non_digits == 0 ? 8 : __builtin_ctzll(non_digits) >> 3;
  if (k == 0) {
    value = 0;
    return 0;
  }
  if (k < 8) w <<= 8 * (8 - k);  // the run's bytes to the top; zero bytes read as leading 0s
  w = ((w & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
  w = ((w & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
  value = ((w & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
  return k;
}

// The powers of ten a double holds exactly (Clinger's fast path stops at 10^22).
constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// read_number for the common case, in fewer steps: [-]digits[.digits][e[+-]ddd] with
// fewer than eight digits on each side of the point, at p, the text ending at e. False:
// not that shape, or too near the end for the eight-byte reads (read_number decides).
// Same value and length as read_number.
inline bool read_plain_decimal(const char* p, const char* e, double& v, size_t& len) {
  static constexpr uint64_t kPow10Int[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
  const char* const start = p;
  const bool neg = *p == '-';
  p += neg;
  if (e - p < 8) return false;
  uint64_t ip, fp = 0;
  const int ik = swar_digits(p, ip);
  if (ik == 8) return false;
  p += ik;
  int fk = 0;
  if (*p == '.') {
    if (e - (p + 1) < 8) return false;
    fk = swar_digits(p + 1, fp);
    if (fk == 8) return false;
    p += 1 + fk;
  }
  if (ik + fk == 0) return false;
  int exp10 = -fk;
  if (p < e && (*p == 'e' || *p == 'E')) {
    const char* q = p + 1;
    bool eneg = false;
    if (q < e && (*q == '-' || *q == '+')) eneg = *q++ == '-';
    int x = 0, xk = 0;
    while (q < e && *q >= '0' && *q <= '9') {
      if (++xk > 3) return false;
      x = x * 10 + (*q++ - '0');
    }
    if (xk > 0) {  // a well-formed exponent is part of the number; else it is not read
      exp10 += eneg ? -x : x;
      p = q;
    }
  }
  if (exp10 < -22 || exp10 > 22) return false;
  const double m = static_cast<double>(ip * kPow10Int[fk] + fp);  // at most 14 digits: exact
  const double r = exp10 >= 0 ? m * kPow10[exp10] : m / kPow10[-exp10];
  v = neg ? -r : r;
  len = static_cast<size_t>(p - start);
  return true;
}

// std::from_chars (general format) for the common short number, faster: when the
// digits fit in 2^53 and the power of ten is at most 22, mantissa * 10^e (or / 10^-e) is
// one correctly rounded IEEE operation on exact operands, so the result is the correctly
// rounded value from_chars returns (Clinger's fast path). Returns the length read, or 0
// to let from_chars decide (anything longer, larger, or not of this shape).
size_t read_decimal_fast(const char* b, const char* e, double& v) {
  size_t len = 0;
  if (read_plain_decimal(b, e, v, len)) return len;
  // Digit by digit: numbers near the end of the text, or with eight digits or more on a
  // side of the point.
  const char* p = b;
  bool neg = false;
  if (p < e && *p == '-') neg = true, ++p;
  uint64_t mant = 0;
  int frac_digits = 0, digits = 0;
  const char* d0 = p;
  while (p < e && is_digit(*p)) {
    mant = mant * 10 + static_cast<uint64_t>(*p - '0');
    ++p;
    if (++digits > 15) return 0;
  }
  const bool int_part = p > d0;
  bool frac_part = false;
  if (p < e && *p == '.') {
    const char* f0 = ++p;
    while (p < e && is_digit(*p)) {
      mant = mant * 10 + static_cast<uint64_t>(*p - '0');
      ++p;
      ++frac_digits;
      if (++digits > 15) return 0;
    }
    frac_part = p > f0;
  }
  if (!int_part && !frac_part) return 0;
  int exp10 = -frac_digits;
  if (p < e && (*p == 'e' || *p == 'E')) {
    const char* q = p + 1;
    bool eneg = false;
    if (q < e && (*q == '-' || *q == '+')) eneg = *q++ == '-';
    const char* x0 = q;
    int x = 0;
    while (q < e && is_digit(*q)) {
      x = x * 10 + (*q - '0');
      ++q;
      if (q - x0 > 3) return 0;
    }
    if (q > x0) {  // a well-formed exponent is part of the number; else it is not read
      exp10 += eneg ? -x : x;
      p = q;
    }
  }
  if (exp10 < -22 || exp10 > 22) return 0;
  double m = static_cast<double>(mant);  // exact: at most 15 digits
  double r = exp10 >= 0 ? m * kPow10[exp10] : m / kPow10[-exp10];
  v = neg ? -r : r;
  return static_cast<size_t>(p - b);
}

// Reads a number at s[i]: decimal, scientific, nan/inf words (any case, optional sign).
// Returns the length read (0 when there is no number).
size_t read_number(std::string_view s, size_t i, double& v) {
  size_t j = i;
  bool neg = false;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) neg = s[j++] == '-';
  if (j >= s.size()) return 0;
  char c = s[j];
  if (c == 'i' || c == 'I' || c == 'n' || c == 'N') {
    // nan / inf / infinity as words
    for (std::string_view w : {std::string_view("infinity"), std::string_view("inf"), std::string_view("nan")}) {
      size_t n = w.size();
      if (j + n <= s.size() && ieq(s.substr(j, n), w) && (j + n == s.size() || !is_alnum(s[j + n]))) {
        v = w[0] == 'n' ? std::nan("") : (neg ? -INFINITY : INFINITY);
        return j + n - i;
      }
    }
    return 0;
  }
  if (!(is_digit(c) || c == '.')) return 0;
  const char* b = s.data() + i;
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  if (size_t n = read_decimal_fast(b, e, v)) return static_cast<size_t>(b - (s.data() + i)) + n;
  auto r = std::from_chars(b, e, v);
  if (r.ec != std::errc()) return 0;
  return static_cast<size_t>(r.ptr - (s.data() + i));
}

// The number read at s[i] is a word (nan, inf, -Infinity), not digits.
inline bool is_word_number(std::string_view s, size_t i) {
  const char c = s[i];
  return c != '.' && !is_digit(c) && !((c == '-' || c == '+') && i + 1 < s.size() && (is_digit(s[i + 1]) || s[i + 1] == '.'));
}

// The key before a number: the text back to the previous separator or number, with
// ':' '=' quotes and spaces trimmed ("lm loss", "learning_rate"), not yet lower-cased.
std::string_view key_before(std::string_view s, size_t num_start, size_t floor) {
  size_t e = num_start;
  while (e > floor && (s[e - 1] == ' ' || s[e - 1] == ':' || s[e - 1] == '=' || s[e - 1] == '\'' || s[e - 1] == '"' ||
                       s[e - 1] == '['))
    --e;
  size_t b = e;
  while (b > floor && !is_sep(s[b - 1]) && !(is_digit(s[b - 1]) && b < e && s[b] == ' ')) --b;
  std::string_view k = trim(s.substr(b, e - b));
  // Keys start with a letter: drop brackets, quotes and the like in front ("] step", "'loss").
  while (!k.empty() && !is_alpha(k.front())) k.remove_prefix(1);
  // "epoch 0 step" -> the last words after a number belong to this key
  return k;
}

// The metric a key names (keys are matched lower-cased), with Aliases::kEventKey set for
// an event message's key. A key that names none after a colon is read from there:
// "train: step", "Epoch 3: loss" (a logger's or a phase's name before it).
MetricId metric_of_key(const Aliases& a, std::string_view key) {
  if (key.size() <= a.max_key_size()) {
    if (const MetricId m = a.key_any_case(key); m != kNoMetric) return m;
  }
  const size_t colon = key.rfind(':');
  if (colon == std::string_view::npos) return kNoMetric;
  std::string_view after = trim(key.substr(colon + 1));
  return after.empty() ? kNoMetric : metric_of_key(a, after);
}

}  // namespace

namespace {

// Byte classes for the tokeniser's scan: what may start a number (digits . - + and the
// first letters of nan / inf), and what glues a number to the token before it.
constexpr uint8_t kMayStart = 1, kJoins = 2;
constexpr std::array<uint8_t, 256> kByteClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] |= kMayStart | kJoins;
  for (int c = 'a'; c <= 'z'; ++c) t[c] |= kJoins;
  for (int c = 'A'; c <= 'Z'; ++c) t[c] |= kJoins;
  for (char c : {'.', '-', '+', 'n', 'N', 'i', 'I'}) t[static_cast<unsigned char>(c)] |= kMayStart;
  for (char c : {'_', '.', '/'}) t[static_cast<unsigned char>(c)] |= kJoins;
  return t;
}();

}  // namespace

namespace {

// How far read_number(s, i) may look (an upper bound, exclusive): a sign, then a run
// [digits][.digits][e[sign]digits] and the byte after it, or as much of a word as matches
// "infinity", "inf" or "nan" and the byte after that (so "iter 7" does not reach the 7).
size_t number_reach(std::string_view s, size_t i) {
  size_t j = i;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
  size_t k = j;
  while (k < s.size() && is_digit(s[k])) ++k;
  if (k < s.size() && s[k] == '.') ++k;
  while (k < s.size() && is_digit(s[k])) ++k;
  if (k < s.size() && (s[k] == 'e' || s[k] == 'E')) {
    ++k;
    if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
    while (k < s.size() && is_digit(s[k])) ++k;
  }
  // A word: read_number compares it with "infinity", "inf" and "nan" (any case) up to
  // the first byte that differs, and looks at the byte after a whole word.
  size_t word_end = j + 1;
  for (std::string_view w : {std::string_view("infinity"), std::string_view("inf"), std::string_view("nan")}) {
    size_t m = 0;
    while (m < w.size() && j + m < s.size() && to_lower_ascii(s[j + m]) == w[m]) ++m;
    word_end = std::max(word_end, j + m + 1);
  }
  return std::min(s.size(), std::max(word_end, k + 1));
}

// The tokeniser. `on_token(start, end, metric, scale, event)` hears of every number it
// takes (metric kNoMetric when nothing names it; event: an event message's key named it), `on_look(from, to)` of the bytes it looked
// at to decide something other than a number it took; ProgressParser builds shapes from
// them. Long because it is one pass over the line with all its state in locals: it runs
// for every progress line, and its callers inline it with their callbacks.
template <typename OnToken, typename OnLook>
bool tokenise(std::string_view s, const Aliases& a, ProgressLine& out, OnToken&& on_token, OnLook&& on_look) {
  out.has_step = false;
  out.event = false;
  out.samples.clear();
  bool has_loss = false;
  const MetricId loss = a.loss();
  size_t floor = 0;  // keys never reach back past the previous number
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    // A number must start a token: not inside a word ("fp16", "v2") or an identifier.
    if (!(kByteClass[static_cast<unsigned char>(c)] & kMayStart) ||
        (i > 0 && (kByteClass[static_cast<unsigned char>(s[i - 1])] & kJoins))) {
      ++i;
      continue;
    }
    double v = 0;
    size_t n = read_number(s, i, v);
    if (n == 0 || (n == 1 && (c == '-' || c == '+' || c == '.'))) {
      on_look(i, number_reach(s, i));
      ++i;
      continue;
    }
    size_t end = i + n;
    // Not a number if a letter or '_' follows directly, except a unit ("9.5it/s", "43ms").
    std::string_view key = key_before(s, i, floor);
    MetricId m = kNoMetric;
    double scale = 1.0;
    bool event = false;
    if (!key.empty()) m = metric_of_key(a, key);
    if (m != kNoMetric && (m & Aliases::kEventKey)) {
      event = true;
      m = static_cast<MetricId>(m & ~Aliases::kEventKey);
    }
    // A step followed by "/total": the total is a token of its own (below), so nothing
    // here may look past the slash, or a kept shape would depend on the total's digits.
    const bool step_of_total =
        m != kNoMetric && m == a.step() && a.step_total() != kNoMetric && end < s.size() && s[end] == '/';
    // The unit right after the number: "ms/step", "it/s", "tokens/s", "GiB".
    size_t u = end;
    while (!step_of_total && u < s.size() && s[u] == ' ' && u - end < 1) ++u;
    size_t ue = u;
    while (!step_of_total && ue < s.size() && !is_sep(s[ue]) && s[ue] != ' ' && s[ue] != ']') ++ue;
    std::string_view unit = s.substr(u, ue - u);
    on_look(end, std::min(s.size(), ue + 1));
    // by_unit(unit) and unit_scale(unit), in one lookup (none for the usual empty unit).
    MetricId unit_metric = kNoMetric;
    double unit_scale = 1.0;
    if (const auto* u = unit.empty() ? a.empty_unit() : a.unit_entry(unit))
      unit_metric = u->first, unit_scale = u->second;
    if (m == kNoMetric && !unit.empty()) {
      m = unit_metric;
      scale = unit_scale;
    }
    // "nan" or "inf" as a word that no key or unit names is a word of the text, not a
    // value ("number of nan iterations: 0"): the key of the next number reaches over it.
    if (m == kNoMetric && is_word_number(s, i)) {
      on_look(i, number_reach(s, i));
      ++i;
      continue;
    }
    // "step 12/60", "iteration 100/ 500000": the total after the slash is not a value of
    // the key; after a step it is the run's total (Aliases::step_total), a token of its own.
    size_t next = end;
    size_t total_at = 0, total_n = 0;
    double total = 0;
    if (next < s.size() && s[next] == '/') {
      size_t k = next + 1;
      while (k < s.size() && s[k] == ' ') ++k;
      size_t tn = read_number(s, k, total);
      if (tn > 0 && step_of_total && std::isfinite(total) &&
          !(tn == 1 && (s[k] == '-' || s[k] == '+' || s[k] == '.'))) {
        total_at = k, total_n = tn;  // read as a slot: its bytes are the slot's, not the shape's
      } else {
        on_look(next, number_reach(s, k));
      }
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
        if (m == loss || event) has_loss = true;
        out.event = out.event || event;
      }
      if (m == unit_metric) next = ue;  // the unit was consumed
    }
    // A list "lr=[0.0001, 0.0001]": only the first element counts.
    if (!key.empty() && i > 0 && s[i - 1] == '[') {
      size_t close = s.find(']', next);
      if (close != std::string_view::npos) next = close + 1;
    }
    on_token(i, end, m, scale, event);
    if (total_n > 0) {
      out.samples.push_back({a.step_total(), total});
      on_token(total_at, total_at + total_n, a.step_total(), 1.0, false);
    }
    floor = next;
    i = next;
  }
  return (out.has_step || has_loss) && !out.samples.empty();
}

}  // namespace

bool parse_progress_line(std::string_view s, const Aliases& a, ProgressLine& out) {
  return tokenise(
      s, a, out, [](size_t, size_t, MetricId, double, bool) {}, [](size_t, size_t) {});
}

// A shape is a progress line with its numbers taken out: the text around them and, per
// number, what the tokeniser made of it. The tokeniser's path through a line depends on
// that text only (the numbers end where read_number ends them, and every number ends in
// a byte that glues, so the bytes after it are judged alike): a line with the same text
// around its numbers is tokenised the same, and only its numbers need reading.
namespace {

// a[0..n) == b[0..n), for the short texts between numbers (a memcmp call costs more):
// two overlapping loads cover 4..16 bytes.
inline bool same_bytes(const char* a, const char* b, size_t n) {
  if (n >= 4 && n <= 16) {
    if (n >= 8) {
      uint64_t x0, y0, x1, y1;
      std::memcpy(&x0, a, 8);
      std::memcpy(&y0, b, 8);
      std::memcpy(&x1, a + n - 8, 8);
      std::memcpy(&y1, b + n - 8, 8);
      return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    uint32_t x0, y0, x1, y1;
    std::memcpy(&x0, a, 4);
    std::memcpy(&y0, b, 4);
    std::memcpy(&x1, a + n - 4, 4);
    std::memcpy(&y1, b + n - 4, 4);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  while (n >= 8) {
    uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
    a += 8, b += 8, n -= 8;
  }
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

bool ProgressParser::try_shape(Shape& sh, std::string_view s, ProgressLine& out) {
  out.has_step = false;
  out.event = false;
  out.samples.clear();
  bool has_loss = false;
  size_t pos = 0, lit = 0;
  for (Slot& k : sh.slots) {
    if (s.size() - pos < k.lit_len || !same_bytes(s.data() + pos, sh.text.data() + lit, k.lit_len)) return false;
    pos += k.lit_len;
    lit += k.lit_len;
    if (pos >= s.size()) return false;
    double v = 0;
    size_t n;
    // The same bytes as the slot's last number, and the same three after it: read_number
    // would read the same value to the same end (it looks at most three bytes past it).
    uint64_t lo = 0, hi = 0;
    const bool wide = s.size() - pos >= 16;
    if (wide) {
      std::memcpy(&lo, s.data() + pos, 8);
      std::memcpy(&hi, s.data() + pos + 8, 8);
    }
    if (wide && k.memo_len != 0 && (lo & k.mask_lo) == k.memo_lo && (hi & k.mask_hi) == k.memo_hi) {
      v = k.memo_value;
      n = k.memo_n;
    } else {
      if (!read_plain_decimal(s.data() + pos, s.data() + s.size(), v, n)) {
        const char c = s[pos];
        n = read_number(s, pos, v);
        if (n == 0 || (n == 1 && (c == '-' || c == '+' || c == '.'))) return false;
      }
      k.memo_len = 0;
      if (wide && n + 3 <= 16) {
        const size_t len = n + 3;
        k.mask_lo = len >= 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * len)) - 1;
        k.mask_hi = len <= 8 ? 0 : len == 16 ? ~uint64_t{0} : (uint64_t{1} << (8 * (len - 8))) - 1;
        k.memo_lo = lo & k.mask_lo;
        k.memo_hi = hi & k.mask_hi;
        k.memo_len = static_cast<uint32_t>(len);
        k.memo_n = static_cast<uint32_t>(n);
        k.memo_value = v;
      }
    }
    if (k.metric == kNoMetric) {
      // The tokeniser takes a word no key names for text ("number of nan iterations"):
      // this shape, built on a number there, does not hold the line.
      if (is_word_number(s, pos)) return false;
    } else {
      if (k.metric == a_.step()) {
        if (!out.has_step && std::isfinite(v)) {
          out.has_step = true;
          out.step = v;
        }
      } else {
        out.samples.push_back({k.metric, v * k.scale});
        if (k.stands) {
          has_loss = true;
          out.event = out.event || k.event;
        }
      }
    }
    pos += n;
  }
  if (s.size() - pos != sh.text.size() - lit || !same_bytes(s.data() + pos, sh.text.data() + lit, s.size() - pos))
    return false;
  return (out.has_step || has_loss) && !out.samples.empty();
}

bool ProgressParser::known(std::string_view s, ProgressLine& out) {
  for (size_t k = 0; k < shapes_.size(); ++k) {
    if (try_shape(shapes_[k], s, out)) {
      out.shape = shapes_[k].id;
      if (k > 0) std::swap(shapes_[k], shapes_[k - 1]);  // move up towards the front
      return true;
    }
  }
  return false;
}

std::string_view ProgressParser::shape_text(uint32_t id) const {
  for (const Shape& sh : shapes_) {
    if (sh.id == id) return sh.text;
  }
  return {};
}

std::vector<std::string_view> ProgressParser::shape_pieces(uint32_t id) const {
  std::vector<std::string_view> out;
  for (const Shape& sh : shapes_) {
    if (sh.id != id) continue;
    const std::string_view text = sh.text;
    size_t lit = 0;
    for (const Slot& k : sh.slots) {
      out.push_back(text.substr(lit, k.lit_len));
      lit += k.lit_len;
    }
    out.push_back(text.substr(lit));
  }
  return out;
}

bool ProgressParser::learn(std::string_view s, ProgressLine& out) {
  Shape sh;
  size_t last = 0;
  starts_.clear();
  looks_.clear();
  bool ok = tokenise(
      s, a_, out,
      [&](size_t start, size_t end, MetricId m, double scale, bool event) {
        const bool stands = event || (m != kNoMetric && m == a_.loss());
        sh.slots.push_back({static_cast<uint32_t>(start - last), m, stands, event, scale});
        sh.text.append(s.substr(last, start - last));
        starts_.push_back(start);
        last = end;
      },
      [&](size_t from, size_t to) { looks_.emplace_back(from, to); });
  // Only the shapes of progress lines are kept. A shape can stand for other lines only
  // if no decision on its text looked into a number: no bytes looked at (a failed or
  // skipped read, a unit) reach into a number that comes later.
  if (ok && s.size() < 4096) {
    sh.text.append(s.substr(last));
    bool replayable = true;
    for (const auto& [from, to] : looks_) {
      for (size_t st : starts_) replayable = replayable && !(st > from && st < to);
    }
    if (replayable) {
      sh.id = next_id_++;
      if (shapes_.size() == kMaxShapes) shapes_.pop_back();
      shapes_.insert(shapes_.begin(), std::move(sh));
    }
  }
  return ok;
}

}  // namespace ff::metrics
