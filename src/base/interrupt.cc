#include "base/interrupt.h"

#include <atomic>
#include <csignal>

namespace ff {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void on_interrupt(int sig) {
  g_signal.store(sig, std::memory_order_relaxed);
  std::signal(sig, SIG_DFL);  // the second one ends the process
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction act {};
  act.sa_handler = on_interrupt;
  sigemptyset(&act.sa_mask);
  act.sa_flags = 0;  // no SA_RESTART: a blocked read() returns EINTR
  ::sigaction(SIGINT, &act, nullptr);
  ::sigaction(SIGTERM, &act, nullptr);
}

void interrupt_at_deadline() { g_signal.store(SIGALRM, std::memory_order_relaxed); }

int interrupted() { return g_signal.load(std::memory_order_relaxed); }

const char* interrupt_name(int sig) {
  switch (sig) {
    case SIGINT: return "interrupted (SIGINT)";
    case SIGTERM: return "interrupted (SIGTERM)";
    case SIGALRM: return "stopped at the deadline (--timeout)";
    default: return "interrupted";
  }
}

void reset_interrupted_for_test() { g_signal.store(0, std::memory_order_relaxed); }

}  // namespace ff
