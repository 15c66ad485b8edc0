// app/terminal.h — the width output is laid out for: COLUMNS when set (a number from 20
// to 1000), else the terminal's width when `fd` is a terminal, else 0 (a pipe or a file:
// no wrapping, so scripts and grep see whole lines).
#pragma once

#include <cstddef>

namespace ff::app {

size_t output_width(int fd);
// The terminal's height when `fd` is one (LINES first, as for the width), else 0.
size_t output_rows(int fd);

}  // namespace ff::app
