// Ctrl-C (SIGINT) and SIGTERM during a run: the handler only sets a flag; the warm-up and the
// measuring loops look at it at each copy or sample boundary, and the run then writes what it
// measured, marked
// `"interrupted": true`, and exits with 130 (ExitCode::kInterrupted).
#pragma once

namespace mtc::bench {

// Installs the handlers of SIGINT and SIGTERM for the rest of the process. The same signal again,
// more than a second after the first, gets the default action and ends the process at once, for
// a user who will not wait for the report; sooner, it is the same request delivered twice
// (`timeout` signals its command, then the command's process group) and is ignored. The other
// signal never ends it (a --processes parent passes a terminal's Ctrl-C on as SIGTERM).
void install_interrupt_handlers();

// True once SIGINT or SIGTERM arrived after install_interrupt_handlers(). Cheap: one relaxed
// atomic load, fit for a per-sample check.
bool interrupted();

}  // namespace mtc::bench
