#include "record/record.h"

#include <re2/re2.h>

#include <algorithm>
#include <cstring>
#include <ctime>

#include "base/strings.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Line framing

void LineFramer::emit(std::string_view bytes, bool cut, const std::function<void(const RawLine&)>& on_line) {
  RawLine line;
  line.number = ++number_;
  line.offset = line_start_;
  line.bytes = bytes;
  line.cut = cut;
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
  while (pos < chunk.size()) {
    const void* nl = std::memchr(chunk.data() + pos, '\n', chunk.size() - pos);
    size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - chunk.data()) : chunk.size();
    std::string_view piece = chunk.substr(pos, end - pos);
    if (!nl) {
      keep(piece);  // an incomplete line waits for the next chunk
      offset_ += piece.size();
      return;
    }
    if (pending_.empty() && !pending_cut_) {
      // The common case: the whole line is inside this chunk; no copy.
      emit(piece.substr(0, std::min(piece.size(), max_line_)), piece.size() > max_line_, on_line);
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

int64_t days_from_civil(int y, int m, int d) {
  y -= m <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Reads "HH:MM:SS" at pos and an optional fraction ([.,]digits); returns end or npos.
size_t read_hms(std::string_view s, size_t pos, int64_t& us, bool& subsecond) {
  int h, mi, se;
  if (!digits(s, pos, 2, h) || pos + 2 >= s.size() || s[pos + 2] != ':' || !digits(s, pos + 3, 2, mi) ||
      pos + 5 >= s.size() || s[pos + 5] != ':' || !digits(s, pos + 6, 2, se))
    return std::string_view::npos;
  if (h > 23 || mi > 59 || se > 60) return std::string_view::npos;
  us = (static_cast<int64_t>(h) * 3600 + mi * 60 + se) * 1000000;
  size_t i = pos + 8;
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

bool parse_time(std::string_view s, std::string_view format, int64_t& us, Clock& clock, bool& subsecond) {
  s = trim(s);
  int y, mo, d;
  int64_t tod = 0;
  if (format == "iso" || format == "torchrun") {
    // 2026-11-30 10:20:42,398 | 2026-11-30T10:20:42.398Z | 2026-11-30_10:20:45 | +02:00
    if (!digits(s, 0, 4, y) || s.size() < 19 || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
        !digits(s, 8, 2, d) || (s[10] != ' ' && s[10] != 'T' && s[10] != '_'))
      return false;
    size_t end = read_hms(s, 11, tod, subsecond);
    if (end == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
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
    us = (days_from_civil(y, mo, d) * 86400 - offset_s) * 1000000 + tod;
    clock = Clock::kWall;
    return true;
  }
  if (format == "glog") {
    // 1120 10:11:12.345678 (month, day)
    if (!digits(s, 0, 2, mo) || !digits(s, 2, 2, d) || s.size() < 13 || s[4] != ' ') return false;
    if (read_hms(s, 5, tod, subsecond) == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    us = days_from_civil(kNoYear, mo, d) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == "mdhms") {
    // 06-30 06:10:12 or 02/10 22:55:41
    if (!digits(s, 0, 2, mo) || (s.size() < 14) || (s[2] != '-' && s[2] != '/') || !digits(s, 3, 2, d) || s[5] != ' ')
      return false;
    if (read_hms(s, 6, tod, subsecond) == std::string_view::npos || mo < 1 || mo > 12 || d < 1 || d > 31) return false;
    us = days_from_civil(kNoYear, mo, d) * 86400 * 1000000 + tod;
    clock = Clock::kWallNoYear;
    return true;
  }
  if (format == "syslog") {
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
  if (format == "dmesg") {
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
  if (format == "hms") {
    if (read_hms(s, 0, tod, subsecond) == std::string_view::npos) return false;
    us = tod;
    clock = Clock::kTimeOfDay;
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------
// Prefixes

struct PrefixParser::Impl {
  struct Format {
    kb::PrefixFormat spec;
    std::unique_ptr<RE2> re;
    std::vector<std::pair<std::string, int>> groups;  // capture name -> index
  };
  std::vector<Format> formats;
};

PrefixParser::PrefixParser() : impl_(std::make_unique<Impl>()) {}
PrefixParser::~PrefixParser() = default;

Result<std::unique_ptr<PrefixParser>> PrefixParser::create(const std::vector<kb::PrefixFormat>& formats) {
  std::unique_ptr<PrefixParser> p(new PrefixParser());
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
    for (const auto& [name, idx] : fmt.re->NamedCapturingGroups()) fmt.groups.emplace_back(name, idx);
    p->impl_->formats.push_back(std::move(fmt));
  }
  return p;
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
  long long n = 0;
  if (!parse_int(v, n) || n > 1'000'000'000) return -1;
  return static_cast<int>(n);
}

}  // namespace

void PrefixParser::parse(std::string_view line, Record& rec) const {
  rec = Record{};
  rec.text = line;
  std::string_view rest = line;
  std::vector<re2::StringPiece> groups(16);
  bool applied_nonconsuming = false;
  for (int round = 0; round < 12; ++round) {
    bool any = false;
    for (const auto& f : impl_->formats) {
      if (!f.spec.consume && applied_nonconsuming) continue;
      int n = std::min(15, f.re->NumberOfCapturingGroups());
      re2::StringPiece input(rest.data(), rest.size());
      if (!f.re->Match(input, 0, rest.size(), RE2::ANCHOR_START, groups.data(), n + 1)) continue;
      if (f.spec.consume && groups[0].empty()) continue;
      for (const auto& [name, idx] : f.groups) {
        if (idx > n || groups[static_cast<size_t>(idx)].data() == nullptr) continue;
        std::string_view v(groups[static_cast<size_t>(idx)].data(), groups[static_cast<size_t>(idx)].size());
        if (name == "rank") {
          if (rec.rank < 0) rec.rank = to_int(v);
        } else if (name == "local_rank") {
          if (rec.local_rank < 0) rec.local_rank = to_int(v);
        } else if (name == "pid") {
          if (rec.pid < 0) rec.pid = to_int(v);
        } else if (name == "gpu") {
          if (rec.gpu < 0) rec.gpu = to_int(v);
        } else if (name == "node") {
          if (rec.node.empty()) rec.node = std::string(v);
        } else if (name == "level") {
          if (!rec.level) rec.level = level_char(v);
        } else if (name == "time" && rec.time_us == kNoTime && !f.spec.time_format.empty()) {
          int64_t us;
          Clock clock;
          bool sub;
          if (parse_time(v, f.spec.time_format, us, clock, sub)) {
            rec.time_us = us;
            rec.clock = clock;
            rec.time_subsecond = sub;
            rec.time_text = v;
          }
        }
      }
      if (rec.prefix_id.empty()) rec.prefix_id = f.spec.id;
      if (f.spec.consume) {
        rest.remove_prefix(groups[0].size());
      } else {
        applied_nonconsuming = true;
      }
      any = true;
      break;
    }
    if (!any) break;
  }
  rec.message = rest;
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

// Lines that announce that the traceback goes on with a related exception.
bool is_chain_marker(std::string_view t) {
  return starts_with(t, "During handling of the above exception") ||
         starts_with(t, "The above exception was the direct cause") || starts_with(t, "Original Traceback");
}

}  // namespace

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
  if (last.empty() || !(last[0] >= 'A' && last[0] <= 'Z')) return false;
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

std::optional<Traceback> TracebackJoiner::feed(const Record& rec, uint64_t line) {
  std::string_view msg = rec.message;
  std::string_view t = trim(msg);
  if (state_ == State::kIdle) {
    if (is_traceback_start(msg)) {
      cur_ = Traceback{};
      cur_.first_line = cur_.last_line = line;
      // Frames are indented deeper than the line that holds "Traceback"; the exception
      // line returns to that line's indentation (torchrun's summary indents both).
      base_indent_ = indent_of(msg);
      last_frame_.clear();
      state_ = State::kFrames;
      blank_run_ = 0;
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
  if (is_traceback_start(t)) {
    if (chained_) {
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
    if (ind > base_indent_ || starts_with(t, "File \"") || starts_with(t, "^") || starts_with(t, "~")) {
      if (starts_with(t, "File \"")) {
        size_t close = t.find('"', 6);
        if (close != std::string_view::npos) last_frame_ = std::string(t.substr(6, close - 6));
      }
      cur_.last_line = line;
      blank_run_ = 0;
      return std::nullopt;
    }
    std::string type, message;
    if (parse_exception_line(t, type, message)) {
      cur_.exceptions.push_back({line, std::move(type), std::move(message), std::string(t), false, last_frame_});
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
