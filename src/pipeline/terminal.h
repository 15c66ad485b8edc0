// pipeline/terminal.h — the width output is laid out for: COLUMNS when set (a number from 20
// to 1000), else the terminal's width when `fd` is a terminal, else 0 (a pipe or a file:
// no wrapping, so scripts and grep see whole lines).
#pragma once

#include <cstddef>
#include <string_view>

namespace ff::app {

size_t output_width(int fd);
// The terminal's height when `fd` is one (LINES first, as for the width), else 0.
size_t output_rows(int fd);

// Shows `text` through the user's pager, as git does, when stdout is a terminal and the
// text has more lines than `rows`: FIRSTFAULT_PAGER, else PAGER, else `less` (with LESS=FRX
// when LESS is not set: quit at once if it fits, keep colour, leave the text on the screen);
// an empty pager or `cat` means none. Returns false when no pager showed it (not a terminal,
// short enough, no pager, or the pager could not start): the caller prints it then. Waits for
// the pager to end; the user quitting it early is not an error.
bool show_in_pager(std::string_view text, size_t rows);

}  // namespace ff::app
