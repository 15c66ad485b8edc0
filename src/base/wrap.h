// base/wrap.h — text for a terminal of a given width: display width (UTF-8 code points,
// East Asian wide characters as two columns, ANSI escape sequences as none), word
// wrapping with a hanging indent, cutting to a width, and the nearest word (did you mean).
// Pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ff {

// Columns `s` takes on a terminal. Escape sequences (ESC [ ... final byte) count zero.
size_t display_width(std::string_view s);

// Wraps each line of `text` at word boundaries so no line is wider than `width` columns.
// A continuation line is indented like its line, plus the width of a list marker at the
// start ("- ", "1. ", "> "), so a wrapped item stays under its text. A word wider than the
// room left is cut (a path or a URL cannot be broken anywhere better). A line that is a
// shell command ("$ ..." after the indentation) breaks with " \" at the ends of its lines,
// so it still pastes, and its words are never cut (one wider than the line runs past it).
// A line that starts with kVerbatim is written whole, without the marker, at any width
// (code to be pasted: a verify command, a Python snippet, a file:line a terminal makes
// clickable); the terminal folds it, and copying it gives the line. width 0: unchanged,
// but for the markers, which are always removed.
inline constexpr char kVerbatim = '\x1f';  // ASCII unit separator: never in printed text
std::string wrap_text(std::string_view text, size_t width);

// `s` cut to at most `width` columns, ending in "…" when something was cut.
std::string fit_width(std::string_view s, size_t width);

// Levenshtein distance, bytewise.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidates closest to `word` for a "did you mean": those within a third of the
// word's length in edits (at least 1, at most 3), case-insensitively, nearest first; then,
// when none is that close, those containing `word` as a part between separators
// (`out-of-memory` in `pytorch.cuda.out-of-memory`). At most `max` of them.
std::vector<std::string> nearest_words(std::string_view word, const std::vector<std::string>& candidates,
                                       size_t max = 3);

}  // namespace ff
