// record/record.h — from bytes to records: line framing, cleaning, prefixes, time.
//
// A LineFramer cuts a source's byte chunks into lines (a line may span chunks; a line
// longer than the limit is cut, the rest counted, never buffered). clean_line() removes
// what terminals hide: ANSI escapes, carriage-return progress-bar residue, CRLF, NULs.
// A PrefixParser peels launcher/logger prefixes (formats are KB data) and fills rank,
// node, time, level. TracebackJoiner and LauncherSummaryTracker are per-source state
// machines that turn multi-line structures into single facts.
//
//   record::LineFramer framer(limit);
//   framer.feed(chunk, [&](const record::RawLine& l) { ... });
//   std::string clean; record::clean_line(l.bytes, clean);
//   record::Record rec; parser.parse(clean, rec);
//
// Thread-safety: PrefixParser is immutable after create() and may be shared; framers,
// joiners and trackers belong to one source being read by one thread.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "kb/kb.h"

namespace ff::record {

constexpr int64_t kNoTime = INT64_MIN;

// Which clock a parsed time is on; times are only comparable within one clock.
enum class Clock : uint8_t {
  kNone,
  kWall,        // full date and time (UTC when the zone is given, else local as written)
  kWallNoYear,  // month/day and time, no year (syslog, glog, vLLM)
  kTimeOfDay,   // time of day only
  kBoot,        // seconds since boot (dmesg)
};

struct RawLine {
  std::string_view bytes;  // without the '\n'; valid during the callback only
  uint64_t number = 0;     // 1-based line number in the source
  uint64_t offset = 0;     // byte offset of the line start in the source
  bool cut = false;        // longer than the limit: only the first part is here
  bool plain = false;      // known to hold nothing clean_line changes (no CR, ESC or NUL)
};

// Line ends: '\n' (and "\r\n"; clean_line drops the '\r'). A '\r' inside a
// '\n'-terminated line is a progress-bar redraw and stays in the line for clean_line. A
// source with no '\n' at all in its first line (up to the line limit or the end) that has
// carriage returns followed by more text is an old-Mac-style CR-only log: from then on
// '\r', '\n' and "\r\n" each end a line (Python's universal newlines).
class LineFramer {
 public:
  explicit LineFramer(size_t max_line = 1 << 20) : max_line_(max_line) {}
  // Calls on_line for every complete line in chunk (and pending bytes before it).
  void feed(std::string_view chunk, const std::function<void(const RawLine&)>& on_line);
  // Flushes a last line without a trailing newline.
  void finish(const std::function<void(const RawLine&)>& on_line);
  uint64_t lines() const { return number_; }
  uint64_t cut_lines() const { return cut_lines_; }

 private:
  void emit(std::string_view bytes, bool cut, const std::function<void(const RawLine&)>& on_line, bool plain = false);
  void keep(std::string_view piece);
  void feed_cr(std::string_view chunk, const std::function<void(const RawLine&)>& on_line);
  void switch_to_cr(const std::function<void(const RawLine&)>& on_line);
  enum class Eol : uint8_t { kUndecided, kLf, kCr };
  Eol eol_ = Eol::kUndecided;  // decided by the first '\n', or by the first line's CRs
  bool skip_lf_ = false;       // CR mode: the last chunk ended in '\r'; a leading '\n' pairs with it
  size_t max_line_;
  std::string pending_;
  bool pending_cut_ = false;
  uint64_t number_ = 0;
  uint64_t offset_ = 0;      // offset of the next byte to arrive
  uint64_t line_start_ = 0;  // offset where the pending line started
  uint64_t cut_lines_ = 0;
};

namespace detail {
// LineFramer's search for a line's end: the first '\n' in [p, e) (or e), setting `dirty`
// when a CR, ESC or NUL comes before it. Every implementation this processor runs (for
// tests; the framer uses the fastest).
using FindLineEnd = const char* (*)(const char* p, const char* e, bool& dirty);
std::vector<FindLineEnd> line_end_finders();
}  // namespace detail

// Writes into `out` the line as a person would see it on a terminal: ANSI escape
// sequences removed, only the text after the last carriage return kept (progress bars
// redraw with \r), trailing \r dropped, NUL bytes dropped.
void clean_line(std::string_view raw, std::string& out);
// The same, without a copy for the common line that has nothing to clean (no ESC, CR or
// NUL): returns `raw` itself, else the cleaned text in `buf`.
std::string_view clean_line_view(std::string_view raw, std::string& buf);
// True when clean_line would change the line (it holds an ESC, CR or NUL byte).
bool needs_cleaning(std::string_view raw);

// Who wrote a line and when, as far as the log says (-1 / empty / kNoTime when not).
// Shared by Record (one line) and Event (what analysis sees).
struct Origin {
  int rank = -1;
  int local_rank = -1;
  int pid = -1;
  int gpu = -1;
  std::string node;
  int64_t time_us = kNoTime;
  Clock clock = Clock::kNone;
  bool time_subsecond = false;
  char level = 0;  // 'D', 'I', 'W', 'E', 'F' or 0
};

// One line's parse. The same fields as Origin, but every text is a view (into the line,
// the format table or the source's state), so parsing a line never allocates.
struct Record {
  int rank = -1;
  int local_rank = -1;
  int pid = -1;
  int gpu = -1;
  std::string_view node;
  std::string_view program;  // the program that wrote the line, as syslog names it (its tag)
  int64_t time_us = kNoTime;
  Clock clock = Clock::kNone;
  bool time_subsecond = false;
  char level = 0;
  std::string_view text;     // the cleaned line
  std::string_view message;  // the text after the peeled prefixes
  std::string_view time_text;
  std::string_view prefix_id;  // the first prefix format that matched (for stats)

  // Copies the who/when fields into an Origin (an Event's), owning the node name.
  void to_origin(Origin& o) const;
};

// The formats stay data (kb/formats/prefixes.yaml) and RE2 is their reference. A format's
// regex in the subset prefix formats are written in compiles to a program for a small
// backtracking matcher (record/prefix_program.h), so a format added in YAML alone has a
// fast path; the most frequent formats also have a hand-written matcher
// (record/prefix_fast.h), faster still, used only when the format's id and regex are
// exactly the ones it was written for. record.test.cc checks both against RE2 on every
// sample and on random prefixes. A first-byte table (from RE2's PossibleMatchRange) and a
// second-byte filter skip the formats that cannot start there. A per-thread memo keeps
// how the formats went on the last few line shapes (which failed, having read which
// bytes: a hand-written matcher or a program can say; a format only RE2 can match turns
// the memo off on the lines it is tried on) and replays it on a line whose bytes there
// differ only in digits: only the matching formats run again.
class PrefixParser {
 public:
  // kFast: each format's hand-written matcher, else its program (prefix_program.h), else
  // RE2; kCompiled: the programs (for tests: every format's program against RE2);
  // kRegexOnly: RE2 alone, without the memo (the reference).
  enum class Matchers : uint8_t { kFast, kCompiled, kRegexOnly };
  // `glue`: the residues a message may be glued to (kb/formats/prefixes.yaml `glue:`).
  static Result<std::unique_ptr<PrefixParser>> create(const std::vector<kb::PrefixFormat>& formats,
                                                      Matchers matchers = Matchers::kFast,
                                                      const std::vector<kb::PrefixFormat>& glue = {});
  ~PrefixParser();
  // Fills rec from `line`; rec.text and rec.message point into `line`. Tolerant framing:
  // when what is left after the prefixes is residue glued to a message (a progress bar's
  // end, `...it/s]ERROR: ...`) or another writer's unfinished output before a `glued`
  // prefix (`P[E ProcessGroupNCCL.cpp:475] ...`), the message starts where the residue
  // ends, and the prefixes from there are peeled too (what the line's own prefixes said
  // wins).
  void parse(std::string_view line, Record& rec) const;
  // parse() in its two steps, for a caller that can tell that a line needs no glue search
  // (scan: a line of a progress shape whose text holds none of glue_bytes(), since the
  // numbers between the pieces cannot): the prefixes, then the glue search, which says
  // whether it moved the message.
  void parse_prefixes(std::string_view line, Record& rec) const;
  bool glue(Record& rec) const;
  // The bytes whose presence in a message starts the glue search (with more than three,
  // every message is searched).
  const std::string& glue_bytes() const;
  // The sample lines of every format that fail to parse as declared ("id: sample").
  std::vector<std::string> check_samples() const;

  // One format tried at the start of a text, for tests and benchmarks.
  struct FormatMatch {
    bool matched = false;
    size_t length = 0;                                                        // bytes matched
    std::string_view rank, local_rank, pid, gpu, node, level, time, program;  // empty when absent
  };
  size_t format_count() const;
  const kb::PrefixFormat& format(size_t i) const;
  bool has_fast_matcher(size_t i) const;
  // Whether format i's regex compiled to a program (prefix_program.h).
  bool has_program(size_t i) const;
  FormatMatch match_format(size_t i, std::string_view text, Matchers matchers) const;

 private:
  PrefixParser();
  bool parse_rounds(std::string_view line, Record& rec, void* shape) const;
  bool replay(const void* shape, std::string_view line, Record& rec) const;
  void unglue(Record& rec) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Lines that say which rank wrote them (kb/formats/prefixes.yaml `identity:`: NCCL's
// topology lines, read on lines whose prefix gave the writer's node and pid) and lines
// that name the rank of the traceback right below them (`rank_headers:`, at the message's
// start: torch.multiprocessing.spawn's "-- Process N terminated with the following
// error:"). Immutable after create(); may be shared.
class LineIdentity {
 public:
  static Result<std::unique_ptr<LineIdentity>> create(const std::vector<kb::PrefixFormat>& identity,
                                                      const std::vector<kb::PrefixFormat>& headers);
  ~LineIdentity();
  // The rank the writer of this message states it is, or -1.
  int writer_rank(std::string_view message) const;
  // Cheap: whether the message starts as a rank header does (then header_rank decides).
  bool may_be_header(std::string_view message) const {
    return !message.empty() && header_first_[static_cast<unsigned char>(message[0])] && may_be_header_slow(message);
  }
  // The rank a header line names for the traceback below it, or -1.
  int header_rank(std::string_view message) const;
  // The samples that do not read as declared ("id: sample").
  std::vector<std::string> check_samples() const;

 private:
  LineIdentity();
  struct Rule;
  static int read(const Rule& r, std::string_view message, bool anchored);
  bool may_be_header_slow(std::string_view message) const;
  std::vector<Rule> writers_, headers_;
  std::array<bool, 256> header_first_{};  // the first bytes of the headers' leading literals
};

// Parses a time text in the given format ("iso", "glog", "syslog", "dmesg", "hms",
// "mdhms", "torchrun"); returns false when it does not parse.
bool parse_time(std::string_view text, std::string_view format, int64_t& us, Clock& clock, bool& subsecond);

// One frame of a traceback: `File "train.py", line 10, in load_batch`, or rich's
// `│ /path/train.py:10 in load_batch`.
struct Frame {
  std::string file;
  uint64_t line = 0;
  std::string function;
  bool operator==(const Frame&) const = default;
};

// A Python traceback, joined: the lines from "Traceback (most recent call last):" to
// its final exception line (including chained and "Original Traceback" parts). Also a
// pasted tail without that header (frames, then the exception) and rich's box-drawn
// traceback (╭─ Traceback ─╮ … ╰─╯, then the exception line).
struct Traceback {
  // Frames kept per exception: the innermost ones (a 100,000-frame recursion keeps these).
  static constexpr size_t kMaxFrames = 24;
  uint64_t first_line = 0;
  uint64_t last_line = 0;
  struct ExceptionLine {
    uint64_t line;
    std::string type;             // "RuntimeError", "torch.OutOfMemoryError"
    std::string message;          // text after "Type: "
    std::string text;             // the whole line as cleaned (without prefixes)
    bool chained_cause = false;   // followed by "During handling ..." / "The above exception ...":
                                  // this exception caused the ones after it
    std::string last_frame;       // path of the innermost "File" frame before this line
    std::vector<Frame> frames;    // its frames, outermost first (the innermost kMaxFrames)
    uint64_t frames_dropped = 0;  // outer frames not kept
  };
  std::vector<ExceptionLine> exceptions;  // in order; back() is the final one
};

// Joins tracebacks of one stream (a source, or one rank within an interleaved source).
class TracebackJoiner {
 public:
  // Feeds one record; returns a traceback when this line closed one (the closing line
  // itself is not part of it and must be fed to the next traceback check).
  std::optional<Traceback> feed(const Record& rec, uint64_t line);
  std::optional<Traceback> finish();
  bool active() const { return state_ != State::kIdle; }
  // The traceback being joined (valid while active()).
  const Traceback& current() const { return cur_; }

 private:
  enum class State { kIdle, kFrames, kAfterException };
  State state_ = State::kIdle;
  size_t base_indent_ = 0;
  int blank_run_ = 0;
  bool chained_ = false;  // the last marker announced a chained traceback
  bool rich_ = false;     // inside rich's box
  std::string last_frame_;
  std::vector<Frame> frames_;
  uint64_t frames_dropped_ = 0;
  void add_frame(Frame f);
  Traceback cur_;
};

// Whether a line may open a traceback (TracebackJoiner decides): the header, rich's boxed
// header (no colon), or the first frame of a pasted tail. A cheap superset, for the scan's
// marks of the lines its joiners must see.
bool may_start_traceback(std::string_view message);

// Recognises one line as an exception line "Type: message" / "Type"; fills type/msg.
bool parse_exception_line(std::string_view text, std::string& type, std::string& message);

// The torchrun (elastic) failure summary printed by the launcher after a ChildFailedError:
// per failed rank the time, host, rank, exit code and the error text.
struct LauncherFailure {
  uint64_t line = 0;  // the "[N]:" line
  int rank = -1;
  int local_rank = -1;
  std::string host;
  std::string time_text;
  int exitcode = 0;
  int pid = -1;
  bool root_cause = false;  // listed under "Root Cause (first observed failure)"
  std::string error;        // the last error line ("RuntimeError: ...", "Signal 9 (SIGKILL) ...")
  uint64_t error_line = 0;
};

class LauncherSummaryTracker {
 public:
  // Feeds a record; returns true when the line is part of a launcher summary. The whole
  // line is needed too: the summary's "[3]:" headers look like a torchrun rank prefix,
  // which the prefix parser peels off.
  bool feed(const Record& rec, uint64_t line);
  // The rank of the summary entry the last fed line belongs to, or -1.
  int current_rank() const { return cur_ ? cur_->rank : -1; }
  // Inside a summary: every line matters. Outside, only a line whose trimmed message
  // contains "ChildFailedError" and ends with ':' (the header) changes anything.
  bool active() const { return active_; }
  std::vector<LauncherFailure> take();

 private:
  void close_entry();
  int rules_ = 0;  // "=====" lines seen since the header
  bool active_ = false;
  bool in_root_cause_ = false;
  std::optional<LauncherFailure> cur_;
  std::vector<LauncherFailure> done_;
};

}  // namespace ff::record
