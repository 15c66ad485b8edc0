// lsp/lsp.h — `firstfault lsp`: a Language Server Protocol server over stdio.
//
// An editor opens a log; the server diagnoses the buffer's text in memory (saved or not)
// with the same engine and Diagnosis as `diagnose`, and publishes what it found:
//   - the decisive line as an Error (the entry's title; code = the entry id),
//   - each collateral group's first line as Information, with relatedInformation pointing
//     at the decisive line that explains it,
//   - the traceback line of the user's own innermost frame as a Hint.
// Hover on a line a KB entry recognises shows the entry's quick answer, fix and verify
// command (Markdown). Code actions on such a line: open the full entry, copy the verify
// command, open the HTML report (both written to a private temporary folder and shown with
// window/showDocument; the executeCommand result carries the file's URI too).
//
// Protocol: JSON-RPC 2.0 with Content-Length framing (LSP 3.17), UTF-16 positions,
// incremental or full document sync. A change schedules a new diagnosis 300 ms later
// (debounce); a newer change cancels a diagnosis in flight (the scan stops at its next
// chunk) and supersedes its result. Hover, code actions and the report wait for the
// diagnosis of the document's current text; $/cancelRequest answers a waiting request
// with RequestCancelled (-32800).
//
// Failure behaviour: a malformed header is reported on stderr and skipped (the reader
// resynchronises on the next Content-Length); a body that is not JSON gets a ParseError
// (-32700) response, a request without what it needs InvalidParams (-32602), an unknown
// method MethodNotFound (-32601). Nothing from a client ends the server but `exit` or the
// end of its input.
//
// Thread-safety: internal. The reading thread, the dispatcher and one diagnosing thread
// share the server's state under one mutex; output is written whole, one message at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ff::app {

struct Options;

// Serves until `exit` or the end of stdin. 0 after shutdown + exit, 1 otherwise (LSP).
int run_lsp(const Options& opt);

namespace lsp {

// LSP positions: a line (0-based) and a character offset in UTF-16 code units. A position
// past the end of its line means the line's end; past the last line, the text's end.
size_t byte_offset(std::string_view text, size_t line, size_t utf16_character);
// The number of UTF-16 code units of a UTF-8 text (bytes that are not UTF-8 count one each).
size_t utf16_length(std::string_view s);
// Line `line` (0-based) of text, without its line end; empty past the end.
std::string_view line_at(std::string_view text, size_t line);

// The deepest nesting of arrays and objects that a message may have: JSON-RPC's messages
// nest a few levels; a parser, and the copies of what it builds, recurse once per level, so
// 100,000 brackets would end the server (SIGSEGV). A body nested deeper is answered with
// ParseError without being parsed.
inline constexpr size_t kMaxJsonDepth = 128;
// Whether `body` nests arrays and objects deeper than `limit` (brackets inside strings
// do not count), found in one pass without parsing.
bool json_deeper_than(std::string_view body, size_t limit);

// Reads framed messages from a file descriptor. next() returns a body, or nullopt at the
// end of input; headers that are not valid are said on stderr and skipped.
class MessageReader {
 public:
  explicit MessageReader(int fd, size_t max_body = size_t{1} << 30) : fd_(fd), max_body_(max_body) {}
  std::optional<std::string> next();

 private:
  bool fill();  // reads more bytes; false at the end of input
  int fd_;
  size_t max_body_;
  std::string buf_;
  size_t pos_ = 0;
};

}  // namespace lsp
}  // namespace ff::app
