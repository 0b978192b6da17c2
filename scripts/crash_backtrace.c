/* Preloaded (LD_PRELOAD) into the GPU host's reliability tests by
 * scripts/gpu-check-reliability.sh: a test process that dies of a fatal signal writes the stack
 * of the thread that received it to stderr (into the step's log) before it dies as it would have,
 * so a crash seen once leaves more than a log that stops at the test's first line. The frames
 * are printed as "object(+offset)", which the script resolves with addr2line. */
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void print_stack_and_die(int signal_number) {
  static const char kHeader[] = "\n*** fatal signal; the stack of the thread that received it:\n";
  void* frames[64];
  const int count = backtrace(frames, 64);
  (void)!write(STDERR_FILENO, kHeader, sizeof kHeader - 1);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

__attribute__((constructor)) static void install(void) {
  /* The first backtrace() loads libgcc, which allocates: done here, not in the handler. */
  void* frame[1];
  backtrace(frame, 1);
  const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; ++i) signal(fatal[i], print_stack_and_die);
}
