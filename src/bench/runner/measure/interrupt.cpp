#include "runner/measure/interrupt.h"

#include <time.h>

#include <atomic>
#include <csignal>
#include <cstdint>

namespace mtc::bench {
namespace {

// A repeat within this long of the first signal is the same request delivered twice: `timeout`
// signals its command and then its process group, which holds the command again, and a
// terminal's Ctrl-C reaches a --processes parent and its child alike.
constexpr int64_t kRepeatGraceNs = 1'000'000'000;

// Lock-free atomics are the one kind of shared object a signal handler may write.
static_assert(std::atomic<bool>::is_always_lock_free);
static_assert(std::atomic<int64_t>::is_always_lock_free);
std::atomic<bool> g_interrupted{false};
// When each signal first came (SIGINT, SIGTERM): only the same signal again ends the process, as
// a --processes parent passes a terminal's Ctrl-C on to its child as SIGTERM.
std::atomic<int64_t> g_first_sigint_ns{0};
std::atomic<int64_t> g_first_sigterm_ns{0};

int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

extern "C" void on_interrupt(int signal) {
  const int64_t now = monotonic_ns();
  std::atomic<int64_t>& first_ns = signal == SIGINT ? g_first_sigint_ns : g_first_sigterm_ns;
  g_interrupted.store(true, std::memory_order_relaxed);
  int64_t first = 0;
  if (first_ns.compare_exchange_strong(first, now)) return;
  if (now - first < kRepeatGraceNs) return;
  // A second request, for a user who will not wait for the report: the default action.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  raise(signal);
}

void install(int signal) {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // No SA_RESTART, so a blocking wait (waitpid for a --processes child) returns EINTR and can
  // pass the interruption on.
  action.sa_flags = 0;
  sigaction(signal, &action, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  install(SIGINT);
  install(SIGTERM);
}

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace mtc::bench
