// base/interrupt.h — Ctrl-C and SIGTERM while a log is read (issue 14, item 10).
//
// `yes | firstfault diagnose -` never ends by itself; a user who presses Ctrl-C wants the
// answer for what was read so far, not nothing. The first SIGINT or SIGTERM only sets a
// flag: the readers stop at the next block, say "interrupted" as an input error (so the
// verdict is `incomplete`, never healthy) and the report is printed. The handler then
// restores the default action, so a second Ctrl-C ends the process at once.
#pragma once

namespace ff {

// Installs the handlers for SIGINT and SIGTERM, without SA_RESTART, so a read() blocked on
// a pipe or a terminal returns at once with EINTR.
void install_interrupt_handlers();

// The signal that interrupted the run (SIGINT, SIGTERM), or 0 when none did.
int interrupted();

// Stops the readers as Ctrl-C does, for a deadline (slurm-epilog --timeout): the input
// error then says "stopped at the deadline". Safe from any thread.
void interrupt_at_deadline();

// "interrupted (SIGINT)": the text for an input error.
const char* interrupt_name(int sig);

// Tests only: forget an interruption.
void reset_interrupted_for_test();

}  // namespace ff
