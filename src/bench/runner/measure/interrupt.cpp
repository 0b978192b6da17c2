#include "runner/measure/interrupt.h"

#include <atomic>
#include <csignal>

namespace mtc::bench {
namespace {

// A lock-free atomic is the one kind of shared object a signal handler may write.
static_assert(std::atomic<bool>::is_always_lock_free);
std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int /*signal*/) {
  g_interrupted.store(true, std::memory_order_relaxed);
}

void install(int signal) {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  // One-shot (the next one terminates); no SA_RESTART, so a blocking wait (waitpid for a
  // --processes child) returns EINTR and can pass the interruption on.
  action.sa_flags = SA_RESETHAND;
  sigaction(signal, &action, nullptr);
}

}  // namespace

void install_interrupt_handlers() {
  install(SIGINT);
  install(SIGTERM);
}

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

}  // namespace mtc::bench
