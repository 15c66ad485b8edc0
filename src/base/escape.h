// base/escape.h — making text from a log (or a file name) safe to show. A log is hostile
// input written by someone else (DESIGN.md, Safety): what it holds must not reach a
// terminal as control sequences.
#pragma once

#include <string>
#include <string_view>

namespace ff {

// The text with everything a terminal could act on shown as visible escapes: ESC as \e,
// the other C0 controls and DEL as \xNN (TAB passes; LF too when keep_newlines, for
// multi-line text of our own such as a KB entry's fix), C1 controls written as UTF-8
// (U+0080..U+009F) as \u{NN}, and bytes that are not valid UTF-8 (among them raw
// 0x80..0x9F, which a Latin-1 terminal reads as C1) as \xNN. Valid UTF-8 text otherwise
// passes unchanged; the result is valid UTF-8. For the terminal and stderr only: JSON has
// its own escaping.
std::string escape_for_terminal(std::string_view s, bool keep_newlines = false);

// `s` as one word for a POSIX shell: in single quotes, each ' written as '\'' (close,
// an escaped quote, reopen). Nothing inside single quotes is special to sh: no $, `, \ or
// glob, and a line break stays part of the word. For every command firstfault suggests
// that holds a file name or a log's text (issue 14: a name like x'$(touch PWNED)'.log
// must not run anything when the suggestion is pasted).
std::string shell_quote(std::string_view s);

// Text for HTML element content or a quoted attribute value: & < > " ' escaped, invalid
// UTF-8 replaced, control characters other than tab and newline shown as their Control
// Pictures (U+2400 + c), so a log's ESC or NUL cannot reach a page raw.
std::string escape_html(std::string_view s);

}  // namespace ff
