// record.traceback.cc — TracebackJoiner: Python tracebacks (headed, headerless tails,
// rich's boxes) joined across lines with their frames and chained exceptions;
// parse_exception_line and may_start_traceback.
#include "base/strings.h"
#include "record/record.h"

namespace ff::record {

// ---------------------------------------------------------------------------
// Tracebacks

namespace {

size_t indent_of(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

// "Traceback (most recent call last):", or IPython's header "ImportError      Traceback
// (most recent call last)" (the type first, no colon, nothing after).
bool is_traceback_start(std::string_view s) {
  constexpr std::string_view kHead = "Traceback (most recent call last)";
  const size_t at = s.find(kHead);
  if (at == std::string_view::npos) return false;
  const std::string_view rest = s.substr(at + kHead.size());
  return starts_with(rest, ":") || (at > 0 && trim(rest).empty());
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
  while (i < t.size() && t[i] >= '0' && t[i] <= '9' && digits < 12)
    n = n * 10 + static_cast<uint64_t>(t[i++] - '0'), ++digits;
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

// IPython's and Colab's frame headers, at the traceback's own indentation (their code
// context lines below are indented, with line numbers): `/path/mod.py in func(self)`,
// `<ipython-input-3-ab> in <module>`, `[/path/mod.py](https://...) in func(self)` (Colab),
// `File ~/path/mod.py:1767, in Class.func(self)` and `Cell In[3], line 3` (IPython 8), and
// Colab's `4 frames` for the frames it folds; and the code line IPython marks as the one
// running (`-> 1767     raise ImportError(`, `----> 3 x = f()`). f.file is empty for the
// last three.
bool parse_ipython_frame_line(std::string_view t, Frame& f) {
  f = Frame{};
  auto function_of = [](std::string_view s) {
    s = trim(s);
    return std::string(s.substr(0, s.find('(')));
  };
  if (starts_with(t, "Cell In[")) return true;
  if (starts_with(t, "->") || starts_with(t, "--->") || starts_with(t, "---->")) {
    const size_t d = t.find_first_not_of('-');
    return d != std::string_view::npos && t[d] == '>' &&
           t.find_first_of("0123456789") == t.find_first_not_of(' ', d + 1);
  }
  if (starts_with(t, "File ") && !starts_with(t, "File \"")) {
    const size_t in = t.find(", in ");
    if (in == std::string_view::npos) return false;
    std::string_view where = t.substr(5, in - 5);
    const size_t colon = where.rfind(':');
    f.file = std::string(where.substr(0, colon));
    f.function = function_of(t.substr(in + 5));
    return !f.file.empty();
  }
  if (starts_with(t, "[")) {
    const size_t link = t.find("](");
    const size_t in = t.find(") in ", link == std::string_view::npos ? 0 : link);
    if (link == std::string_view::npos || in == std::string_view::npos) return false;
    f.file = std::string(t.substr(1, link - 1));
    f.function = function_of(t.substr(in + 5));
    return true;
  }
  if (starts_with(t, "/") || starts_with(t, "<") || starts_with(t, "~")) {
    const size_t in = t.find(" in ");
    if (in == std::string_view::npos || t.substr(0, in).find(' ') != std::string_view::npos) return false;
    f.file = std::string(t.substr(0, in));
    f.function = function_of(t.substr(in + 4));
    return !f.function.empty();
  }
  size_t d = 0;
  while (d < t.size() && t[d] >= '0' && t[d] <= '9') ++d;
  return d > 0 && (t.substr(d) == " frames" || t.substr(d) == " frame");
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
  const bool c_module_class =
      name.find('.') != std::string_view::npos && (ends_with(last, "error") || last == "timeout");
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

// Long because it is one state machine over a traceback's lines (header, frames, chained
// parts, rich's box, the exception lines, the end), each state a few lines.
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
    if (Frame f; parse_ipython_frame_line(t, f)) {
      if (!f.file.empty()) add_frame(std::move(f));
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

}  // namespace ff::record
